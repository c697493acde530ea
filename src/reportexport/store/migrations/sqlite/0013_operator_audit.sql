-- What operators did: who (person), what, to which object, when. Each row is written by the service in
-- the same transaction as the action it records, and kept for good: no UPDATE, no DELETE (a
-- purge of old jobs leaves it alone; it names objects by id, not by a foreign key).
-- A person's token may be revoked without revoking the person (token_revoked_at): their token
-- and dashboard sessions stop working until an operator gives them a new token.

CREATE TABLE operator_audit (
    id          INTEGER PRIMARY KEY,
    at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    person      TEXT NOT NULL,               -- the operator ("command line" for the shell)
    action      TEXT NOT NULL,               -- redrive_side_effect, rotate_webhook_secret, ...
    object_kind TEXT NOT NULL,               -- side_effect, job, webhook_endpoint, person
    object_id   TEXT NOT NULL,               -- 42/emit_done_webhook, 42, 3, alice
    detail      TEXT
) STRICT;
CREATE INDEX operator_audit_of_object ON operator_audit (object_kind, object_id);

CREATE TRIGGER operator_audit_no_update BEFORE UPDATE ON operator_audit
BEGIN
    SELECT RAISE(ABORT, 'operator_audit is append-only');
END;

CREATE TRIGGER operator_audit_no_delete BEFORE DELETE ON operator_audit
BEGIN
    SELECT RAISE(ABORT, 'operator_audit is append-only');
END;

ALTER TABLE users ADD COLUMN token_revoked_at TEXT;
