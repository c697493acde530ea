-- Creating a schedule honours an Idempotency-Key (the API's header, the dashboard form's key) as
-- creating an export does: one schedule per owner and key, however often the request is sent.

ALTER TABLE schedules ADD COLUMN idempotency_key text;
CREATE UNIQUE INDEX schedules_idempotency_key ON schedules (owner, idempotency_key);
