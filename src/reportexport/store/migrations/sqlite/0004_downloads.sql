-- Who asked for a download link of which job, and when.

CREATE TABLE job_downloads (
    id     INTEGER PRIMARY KEY,
    job_id INTEGER NOT NULL REFERENCES jobs (id),
    person TEXT NOT NULL,
    at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT;
CREATE INDEX job_downloads_of_job ON job_downloads (job_id, id);
