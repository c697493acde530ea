-- Generated from contracts/job-status-graph.json by `reportexport generate`: do not edit.
-- fingerprint: 5c4b2bc68297f75bba2834035bcc7921c6531eef8bfe9908ffed4693540e00c0

DELETE FROM job_state_effects;
DELETE FROM job_transitions;
DELETE FROM job_states;
INSERT INTO job_states (status, is_initial, is_terminal, position) VALUES
  ('queued', 1, 0, 0),
  ('running', 0, 0, 1),
  ('succeeded', 0, 1, 2),
  ('failed', 0, 1, 3),
  ('canceled', 0, 1, 4);
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

DROP INDEX IF EXISTS jobs_waiting;
CREATE INDEX jobs_waiting ON jobs (id) WHERE status = 'queued';

DROP TRIGGER IF EXISTS jobs_insert_guard;
CREATE TRIGGER jobs_insert_guard BEFORE INSERT ON jobs
WHEN NEW.status IS NOT 'queued'
BEGIN
  SELECT CASE NEW.status
    WHEN 'running' THEN RAISE(ABORT, 'illegal:->running')
    WHEN 'succeeded' THEN RAISE(ABORT, 'illegal:->succeeded')
    WHEN 'failed' THEN RAISE(ABORT, 'illegal:->failed')
    WHEN 'canceled' THEN RAISE(ABORT, 'illegal:->canceled')
    ELSE RAISE(ABORT, 'illegal:->(not a state)')
  END;
END;
DROP TRIGGER IF EXISTS jobs_status_guard;
CREATE TRIGGER jobs_status_guard BEFORE UPDATE OF status ON jobs
WHEN NEW.status IS NOT OLD.status
BEGIN
  SELECT CASE
    WHEN OLD.status = 'queued' AND NEW.status = 'running' AND NEW.change_actor = 'worker' THEN NULL
    WHEN OLD.status = 'queued' AND NEW.status = 'canceled' AND NEW.change_actor = 'user' THEN NULL
    WHEN OLD.status = 'running' AND NEW.status = 'succeeded' AND NEW.change_actor = 'worker' THEN NULL
    WHEN OLD.status = 'running' AND NEW.status = 'failed' AND NEW.change_actor = 'worker' THEN NULL
    WHEN OLD.status = 'running' AND NEW.status = 'canceled' AND NEW.change_actor = 'user' THEN NULL
    WHEN OLD.status = 'succeeded' THEN RAISE(ABORT, 'terminal:succeeded')
    WHEN OLD.status = 'failed' THEN RAISE(ABORT, 'terminal:failed')
    WHEN OLD.status = 'canceled' THEN RAISE(ABORT, 'terminal:canceled')
    WHEN OLD.status = 'queued' AND NEW.status NOT IN ('queued', 'running', 'succeeded', 'failed', 'canceled') THEN RAISE(ABORT, 'illegal:queued->(not a state)')
    WHEN OLD.status = 'queued' AND NEW.status = 'succeeded' THEN RAISE(ABORT, 'illegal:queued->succeeded')
    WHEN OLD.status = 'queued' AND NEW.status = 'failed' THEN RAISE(ABORT, 'illegal:queued->failed')
    WHEN OLD.status = 'running' AND NEW.status NOT IN ('queued', 'running', 'succeeded', 'failed', 'canceled') THEN RAISE(ABORT, 'illegal:running->(not a state)')
    WHEN OLD.status = 'running' AND NEW.status = 'queued' THEN RAISE(ABORT, 'illegal:running->queued')
    WHEN OLD.status = 'queued' AND NEW.status = 'running' AND NEW.change_actor IS NULL THEN RAISE(ABORT, 'actor:')
    WHEN OLD.status = 'queued' AND NEW.status = 'running' AND NEW.change_actor = 'user' THEN RAISE(ABORT, 'actor:user')
    WHEN OLD.status = 'queued' AND NEW.status = 'running' AND NEW.change_actor IS NOT 'worker' THEN RAISE(ABORT, 'actor:(not an actor)')
    WHEN OLD.status = 'queued' AND NEW.status = 'canceled' AND NEW.change_actor IS NULL THEN RAISE(ABORT, 'actor:')
    WHEN OLD.status = 'queued' AND NEW.status = 'canceled' AND NEW.change_actor = 'worker' THEN RAISE(ABORT, 'actor:worker')
    WHEN OLD.status = 'queued' AND NEW.status = 'canceled' AND NEW.change_actor IS NOT 'user' THEN RAISE(ABORT, 'actor:(not an actor)')
    WHEN OLD.status = 'running' AND NEW.status = 'succeeded' AND NEW.change_actor IS NULL THEN RAISE(ABORT, 'actor:')
    WHEN OLD.status = 'running' AND NEW.status = 'succeeded' AND NEW.change_actor = 'user' THEN RAISE(ABORT, 'actor:user')
    WHEN OLD.status = 'running' AND NEW.status = 'succeeded' AND NEW.change_actor IS NOT 'worker' THEN RAISE(ABORT, 'actor:(not an actor)')
    WHEN OLD.status = 'running' AND NEW.status = 'failed' AND NEW.change_actor IS NULL THEN RAISE(ABORT, 'actor:')
    WHEN OLD.status = 'running' AND NEW.status = 'failed' AND NEW.change_actor = 'user' THEN RAISE(ABORT, 'actor:user')
    WHEN OLD.status = 'running' AND NEW.status = 'failed' AND NEW.change_actor IS NOT 'worker' THEN RAISE(ABORT, 'actor:(not an actor)')
    WHEN OLD.status = 'running' AND NEW.status = 'canceled' AND NEW.change_actor IS NULL THEN RAISE(ABORT, 'actor:')
    WHEN OLD.status = 'running' AND NEW.status = 'canceled' AND NEW.change_actor = 'worker' THEN RAISE(ABORT, 'actor:worker')
    WHEN OLD.status = 'running' AND NEW.status = 'canceled' AND NEW.change_actor IS NOT 'user' THEN RAISE(ABORT, 'actor:(not an actor)')
  END;
END;
DROP TRIGGER IF EXISTS jobs_status_recorded;
CREATE TRIGGER jobs_status_recorded AFTER UPDATE OF status ON jobs
WHEN NEW.status IS NOT OLD.status
BEGIN
  INSERT INTO job_history
         (job_id, from_status, to_status, actor, person, reason, worker)
  VALUES (NEW.id, OLD.status, NEW.status, NEW.change_actor, NEW.change_person,
          NEW.change_reason, NEW.change_worker);
  UPDATE jobs
     SET change_actor = NULL, change_person = NULL, change_reason = NULL,
         change_worker = NULL,
         updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
         finished_at = CASE WHEN NEW.status IN ('succeeded', 'failed', 'canceled')
                            THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') ELSE NULL END
   WHERE id = NEW.id;
END;
DROP TRIGGER IF EXISTS jobs_side_effects_of_queued;
DROP TRIGGER IF EXISTS jobs_side_effects_of_running;
DROP TRIGGER IF EXISTS jobs_side_effects_of_succeeded;
DROP TRIGGER IF EXISTS jobs_side_effects_of_failed;
DROP TRIGGER IF EXISTS jobs_side_effects_of_canceled;
CREATE TRIGGER jobs_side_effects_of_succeeded AFTER UPDATE OF status ON jobs
WHEN NEW.status = 'succeeded' AND OLD.status IS NOT 'succeeded'
BEGIN
  INSERT INTO job_side_effects (job_id, status, effect)
  VALUES (NEW.id, 'succeeded', 'write_csv_object'),
         (NEW.id, 'succeeded', 'emit_done_webhook');
END;
CREATE TRIGGER jobs_side_effects_of_failed AFTER UPDATE OF status ON jobs
WHEN NEW.status = 'failed' AND OLD.status IS NOT 'failed'
BEGIN
  INSERT INTO job_side_effects (job_id, status, effect)
  VALUES (NEW.id, 'failed', 'emit_failed_webhook');
END;
CREATE TRIGGER jobs_side_effects_of_canceled AFTER UPDATE OF status ON jobs
WHEN NEW.status = 'canceled' AND OLD.status IS NOT 'canceled'
BEGIN
  INSERT INTO job_side_effects (job_id, status, effect)
  VALUES (NEW.id, 'canceled', 'delete_temp_object');
END;
