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
