-- Generated from contracts/job-status-graph.json by `reportexport generate`: do not edit.
-- fingerprint: 5c4b2bc68297f75bba2834035bcc7921c6531eef8bfe9908ffed4693540e00c0

DELETE FROM job_state_effects;
DELETE FROM job_transitions;
DELETE FROM job_states;
INSERT INTO job_states (status, is_initial, is_terminal, position) VALUES
  ('queued', true, false, 0),
  ('running', false, false, 1),
  ('succeeded', false, true, 2),
  ('failed', false, true, 3),
  ('canceled', false, true, 4);
INSERT INTO job_transitions (from_status, to_status, actor) VALUES
  ('queued', 'running', 'worker'),
  ('queued', 'canceled', 'user'),
  ('running', 'succeeded', 'worker'),
  ('running', 'failed', 'worker'),
  ('running', 'canceled', 'user');
INSERT INTO job_state_effects (status, effect, position) VALUES
  ('succeeded', 'write_csv_object', 0),
  ('succeeded', 'emit_done_webhook', 1),
  ('failed', 'emit_failed_webhook', 0),
  ('canceled', 'delete_temp_object', 0);

ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_status_is_a_state;
ALTER TABLE jobs ADD CONSTRAINT jobs_status_is_a_state
  CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'canceled'));
ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_finished_exactly_when_terminal;
ALTER TABLE jobs ADD CONSTRAINT jobs_finished_exactly_when_terminal
  CHECK ((status IN ('succeeded', 'failed', 'canceled')) = (finished_at IS NOT NULL));
ALTER TABLE jobs ALTER COLUMN status SET DEFAULT 'queued';

DROP INDEX IF EXISTS jobs_waiting;
CREATE INDEX jobs_waiting ON jobs (id) WHERE status = 'queued';

-- Every status change: a declared edge, its actor, one history row, the side-effect rows of
-- a terminal state, the intent cleared. Generated so that no lookup runs per row.
-- SECURITY DEFINER: a service role needs no INSERT on job_history or job_side_effects.
CREATE OR REPLACE FUNCTION job_status_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    declared_actor text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status IS DISTINCT FROM 'queued' THEN
            RAISE EXCEPTION 'illegal:->%', NEW.status USING ERRCODE = 'check_violation',
                HINT = 'a job is created in the initial state of the graph';
        END IF;
    ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
        IF OLD.status IN ('succeeded', 'failed', 'canceled') THEN
            RAISE EXCEPTION 'terminal:%', OLD.status USING ERRCODE = 'check_violation',
                HINT = 'a job in a terminal state never changes status again';
        END IF;
        declared_actor := CASE
            WHEN OLD.status = 'queued' AND NEW.status = 'running' THEN 'worker'
            WHEN OLD.status = 'queued' AND NEW.status = 'canceled' THEN 'user'
            WHEN OLD.status = 'running' AND NEW.status = 'succeeded' THEN 'worker'
            WHEN OLD.status = 'running' AND NEW.status = 'failed' THEN 'worker'
            WHEN OLD.status = 'running' AND NEW.status = 'canceled' THEN 'user'
        END;
        IF declared_actor IS NULL THEN
            RAISE EXCEPTION 'illegal:%->%', OLD.status, NEW.status
                USING ERRCODE = 'check_violation', HINT = 'see SELECT * FROM job_transitions';
        END IF;
        IF NEW.change_actor IS DISTINCT FROM declared_actor THEN
            RAISE EXCEPTION 'actor:%', coalesce(NEW.change_actor, '')
                USING ERRCODE = 'check_violation',
                HINT = format('%s->%s belongs to actor %s: name it with change_actor = %L',
                              OLD.status, NEW.status, declared_actor, declared_actor);
        END IF;
        INSERT INTO job_history (job_id, from_status, to_status, actor, person, reason, worker)
        VALUES (OLD.id, OLD.status, NEW.status, NEW.change_actor, NEW.change_person,
                NEW.change_reason, NEW.change_worker);
        CASE NEW.status
            WHEN 'succeeded' THEN
                NEW.finished_at := clock_timestamp();
                INSERT INTO job_side_effects (job_id, status, effect)
                VALUES (OLD.id, 'succeeded', 'write_csv_object'), (OLD.id, 'succeeded', 'emit_done_webhook');
            WHEN 'failed' THEN
                NEW.finished_at := clock_timestamp();
                INSERT INTO job_side_effects (job_id, status, effect)
                VALUES (OLD.id, 'failed', 'emit_failed_webhook');
            WHEN 'canceled' THEN
                NEW.finished_at := clock_timestamp();
                INSERT INTO job_side_effects (job_id, status, effect)
                VALUES (OLD.id, 'canceled', 'delete_temp_object');
            ELSE NULL;
        END CASE;
        NEW.updated_at := clock_timestamp();
        -- Workers learn of changes they did not make (a person's cancel); NOTIFY serialises
        -- commits, so changes made by workers send none.
        IF NEW.change_worker IS NULL THEN
            PERFORM pg_notify('reportexport_jobs', OLD.id || ' ' || NEW.status);
        END IF;
    END IF;
    NEW.change_actor := NULL;
    NEW.change_person := NULL;
    NEW.change_reason := NULL;
    NEW.change_worker := NULL;
    RETURN NEW;
END $$;

DROP TRIGGER IF EXISTS jobs_status_guard ON jobs;
CREATE TRIGGER jobs_status_guard
    BEFORE INSERT OR UPDATE OF status, change_actor, change_person, change_reason, change_worker
    ON jobs FOR EACH ROW EXECUTE FUNCTION job_status_guard();
ALTER TABLE jobs ENABLE ALWAYS TRIGGER jobs_status_guard;
