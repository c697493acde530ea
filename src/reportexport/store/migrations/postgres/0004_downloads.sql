-- Who asked for a download link of which job, and when.

CREATE TABLE job_downloads (
    id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id bigint NOT NULL REFERENCES jobs (id),
    person text NOT NULL,
    at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX job_downloads_of_job ON job_downloads (job_id, id);
