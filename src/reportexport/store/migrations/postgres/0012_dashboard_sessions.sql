-- Dashboard sessions: signing in with a token starts one. The browser keeps an opaque session
-- id in an HttpOnly cookie; the store keeps only its SHA-256, who it belongs to and when it
-- expires. Signing out (or revoking the person) ends it; expired rows are forgotten.

CREATE TABLE dashboard_sessions (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_hash text NOT NULL UNIQUE,
    user_id      bigint NOT NULL REFERENCES users (id),
    client       text NOT NULL,               -- the address that signed in
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at   timestamptz NOT NULL,
    ended_at     timestamptz
);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);
