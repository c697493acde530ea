-- An operator may suspend a person: their token and dashboard sessions stop at once, their
-- queued and running exports are canceled and their schedules pause; resuming lets the same
-- token in again. A service account is a token without a human (kind 'service'): it belongs
-- to groups like a person and uses the API, never the dashboard.

ALTER TABLE users ADD COLUMN kind text NOT NULL DEFAULT 'person' CHECK (kind IN ('person', 'service'));
ALTER TABLE users ADD COLUMN suspended_at timestamptz;
ALTER TABLE users ADD COLUMN suspended_by text;
ALTER TABLE users ADD COLUMN suspend_reason text;
