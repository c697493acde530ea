-- Who may export what (core/access.py): people belong to groups, and have attributes that a
-- saved query's parameter may be bound to (`bind = "country"`). A membership or an attribute
-- says where it came from: an operator, or the identity provider (whose sign-in replaces its
-- own rows and never touches an operator's). Deleting a group removes its memberships.

CREATE TABLE groups (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE
                CHECK (length(name) BETWEEN 1 AND 63 AND name GLOB '[a-z0-9]*'
                       AND name NOT GLOB '*[^a-z0-9._-]*' AND name <> 'everyone'),
    description TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    created_by  TEXT NOT NULL
) STRICT;

CREATE TABLE group_members (
    group_id INTEGER NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    user_id  INTEGER NOT NULL REFERENCES users (id),
    origin   TEXT NOT NULL CHECK (origin IN ('operator', 'provider')),
    added_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    added_by TEXT NOT NULL,
    PRIMARY KEY (group_id, user_id, origin)
) STRICT;
CREATE INDEX group_members_of_user ON group_members (user_id);

CREATE TABLE person_attributes (
    user_id INTEGER NOT NULL REFERENCES users (id),
    name    TEXT NOT NULL
            CHECK (length(name) BETWEEN 1 AND 63 AND name GLOB '[a-z]*'
                   AND name NOT GLOB '*[^a-z0-9_]*'),
    value   TEXT NOT NULL CHECK (value <> '' AND length(value) <= 200),
    origin  TEXT NOT NULL CHECK (origin IN ('operator', 'provider')),
    set_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    set_by  TEXT NOT NULL,
    PRIMARY KEY (user_id, name)
) STRICT;
