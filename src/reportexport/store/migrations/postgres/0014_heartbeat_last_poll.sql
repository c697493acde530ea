-- When a worker's claims loop last asked the queue for jobs (it had room and was not paused):
-- a worker that is neither paused nor asking is stuck, and an operator can now tell.

ALTER TABLE heartbeats ADD COLUMN last_poll_at timestamptz;
