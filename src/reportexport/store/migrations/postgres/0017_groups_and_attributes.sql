-- Who may export what (core/access.py): people belong to groups, and have attributes that a
-- saved query's parameter may be bound to (`bind = "country"`). A membership or an attribute
-- says where it came from: an operator, or the identity provider (whose sign-in replaces its
-- own rows and never touches an operator's). Deleting a group removes its memberships.

CREATE TABLE groups (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE
                CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$' AND name <> 'everyone'),
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    created_by  text NOT NULL
);

CREATE TABLE group_members (
    group_id bigint NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    user_id  bigint NOT NULL REFERENCES users (id),
    origin   text NOT NULL CHECK (origin IN ('operator', 'provider')),
    added_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    added_by text NOT NULL,
    PRIMARY KEY (group_id, user_id, origin)
);
CREATE INDEX group_members_of_user ON group_members (user_id);

CREATE TABLE person_attributes (
    user_id bigint NOT NULL REFERENCES users (id),
    name    text NOT NULL CHECK (name ~ '^[a-z][a-z0-9_]{0,62}$'),
    value   text NOT NULL CHECK (value <> '' AND length(value) <= 200),
    origin  text NOT NULL CHECK (origin IN ('operator', 'provider')),
    set_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    set_by  text NOT NULL,
    PRIMARY KEY (user_id, name)
);
