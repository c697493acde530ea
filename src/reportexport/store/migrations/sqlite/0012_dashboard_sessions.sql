-- Dashboard sessions: signing in with a token starts one. The browser keeps an opaque session
-- id in an HttpOnly cookie; the store keeps only its SHA-256, who it belongs to and when it
-- expires. Signing out (or revoking the person) ends it; expired rows are forgotten.

CREATE TABLE dashboard_sessions (
    id           INTEGER PRIMARY KEY,
    session_hash TEXT NOT NULL UNIQUE,
    user_id      INTEGER NOT NULL REFERENCES users (id),
    client       TEXT NOT NULL,               -- the address that signed in
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    expires_at   TEXT NOT NULL,
    ended_at     TEXT
) STRICT;
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);
