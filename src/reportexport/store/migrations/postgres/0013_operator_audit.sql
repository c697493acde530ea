-- What operators did: who (person), what, to which object, when. Each row is written by the service in
-- the same transaction as the action it records, and kept for good: no UPDATE, no DELETE, no
-- TRUNCATE, for any role (the service role has SELECT and INSERT only; the triggers hold for
-- the owner too). A purge of old jobs leaves it alone: it names objects by id, not by a
-- foreign key.
-- A person's token may be revoked without revoking the person (token_revoked_at): their token
-- and dashboard sessions stop working until an operator gives them a new token.

CREATE TABLE operator_audit (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    person      text NOT NULL,               -- the operator ("command line" for the shell)
    action      text NOT NULL,               -- redrive_side_effect, rotate_webhook_secret, ...
    object_kind text NOT NULL,               -- side_effect, job, webhook_endpoint, person
    object_id   text NOT NULL,               -- 42/emit_done_webhook, 42, 3, alice
    detail      text
);
CREATE INDEX operator_audit_of_object ON operator_audit (object_kind, object_id);

CREATE TRIGGER operator_audit_append_only
    BEFORE UPDATE OR DELETE ON operator_audit FOR EACH ROW
    EXECUTE FUNCTION reportexport_refuse('operator_audit is append-only');
CREATE TRIGGER operator_audit_no_truncate
    BEFORE TRUNCATE ON operator_audit FOR EACH STATEMENT
    EXECUTE FUNCTION reportexport_refuse('operator_audit is append-only');
ALTER TABLE operator_audit ENABLE ALWAYS TRIGGER operator_audit_append_only;
ALTER TABLE operator_audit ENABLE ALWAYS TRIGGER operator_audit_no_truncate;

ALTER TABLE users ADD COLUMN token_revoked_at timestamptz;
