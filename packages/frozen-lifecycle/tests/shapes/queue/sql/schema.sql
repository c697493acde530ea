CREATE TYPE job_status AS ENUM ('queued', 'started', 'finished', 'failed', 'canceled');
CREATE TYPE job_event AS ENUM ('queued', 'started', 'retried', 'finished', 'failed');

CREATE TABLE jobs (
    id bigserial PRIMARY KEY,
    status job_status NOT NULL DEFAULT 'queued'
);

CREATE FUNCTION fetch_job() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    picked bigint;
BEGIN
    UPDATE jobs SET status = 'started'
     WHERE id = (SELECT id FROM jobs WHERE status = 'queued' LIMIT 1 FOR UPDATE SKIP LOCKED)
       AND status = 'queued'
    RETURNING id INTO picked;
    RETURN picked;
END $$;

CREATE FUNCTION cancel_job(job_id bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE jobs
       SET status = CASE status WHEN 'queued' THEN 'canceled'::job_status ELSE status END
     WHERE id = job_id AND status IN ('queued', 'started');
END $$;
