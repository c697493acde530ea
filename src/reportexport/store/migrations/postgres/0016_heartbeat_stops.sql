-- A process that stops cleanly says so: its heartbeat row keeps the moment (stopped_at), so a
-- stopped process is told apart from one that went silent (which stays the only alarm).

ALTER TABLE heartbeats ADD COLUMN stopped_at timestamptz;
