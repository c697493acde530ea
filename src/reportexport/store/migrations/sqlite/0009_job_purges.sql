-- The one sanctioned way to remove rows: `reportexport db purge --before DATE` deletes terminal
-- jobs finished before a date, with their history, side-effect rows, deliveries and download
-- records, in one transaction that first records itself here. While that record has no
-- completed_at, the delete guards let its transaction remove exactly those rows; every other
-- DELETE is refused as before. The records are kept for good.

CREATE TABLE job_purges (
    id               INTEGER PRIMARY KEY,
    before           TEXT NOT NULL,
    requested_by     TEXT NOT NULL,
    os_user          TEXT,
    database_role    TEXT,
    started_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    completed_at     TEXT,
    jobs             INTEGER,
    history_rows     INTEGER,
    side_effect_rows INTEGER,
    deliveries       INTEGER,
    downloads        INTEGER,
    reruns_unlinked  INTEGER
) STRICT;

CREATE TRIGGER job_purges_kept BEFORE DELETE ON job_purges
BEGIN
    SELECT RAISE(ABORT, 'purge records are kept');
END;

CREATE TRIGGER job_purges_completed_once BEFORE UPDATE ON job_purges
WHEN OLD.completed_at IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'a completed purge record never changes');
END;

DROP TRIGGER jobs_no_delete;
CREATE TRIGGER jobs_no_delete BEFORE DELETE ON jobs
WHEN NOT EXISTS (SELECT 1 FROM job_purges
                  WHERE completed_at IS NULL AND OLD.finished_at < before)
BEGIN
    SELECT RAISE(ABORT, 'jobs are never deleted: cancel a job instead');
END;

DROP TRIGGER job_history_no_delete;
CREATE TRIGGER job_history_no_delete BEFORE DELETE ON job_history
WHEN NOT EXISTS (SELECT 1 FROM job_purges p JOIN jobs j ON j.id = OLD.job_id
                  WHERE p.completed_at IS NULL AND j.finished_at < p.before)
BEGIN
    SELECT RAISE(ABORT, 'job_history is append-only');
END;

DROP TRIGGER job_side_effects_no_delete;
CREATE TRIGGER job_side_effects_no_delete BEFORE DELETE ON job_side_effects
WHEN NOT EXISTS (SELECT 1 FROM job_purges p JOIN jobs j ON j.id = OLD.job_id
                  WHERE p.completed_at IS NULL AND j.finished_at < p.before)
BEGIN
    SELECT RAISE(ABORT, 'side-effect rows are never deleted');
END;
