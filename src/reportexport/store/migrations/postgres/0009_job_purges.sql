-- The one sanctioned way to remove rows: `reportexport db purge --before DATE` (run as the
-- tables' owner; the service role has no DELETE) deletes terminal jobs finished before a date,
-- with their history, side-effect rows, deliveries and download records, in one transaction
-- that first records itself here. While that record has no completed_at, the delete guards let
-- its transaction (no other sees the record) remove exactly those rows; every other DELETE is
-- refused as before, and TRUNCATE always. The records are kept for good.

CREATE TABLE job_purges (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    before           timestamptz NOT NULL,
    requested_by     text NOT NULL,
    os_user          text,
    database_role    text NOT NULL DEFAULT current_user,
    started_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    completed_at     timestamptz,
    jobs             bigint,
    history_rows     bigint,
    side_effect_rows bigint,
    deliveries       bigint,
    downloads        bigint,
    reruns_unlinked  bigint
);

CREATE TRIGGER job_purges_kept
    BEFORE DELETE ON job_purges FOR EACH ROW
    EXECUTE FUNCTION reportexport_refuse('purge records are kept');
CREATE TRIGGER job_purges_no_truncate
    BEFORE TRUNCATE ON job_purges FOR EACH STATEMENT
    EXECUTE FUNCTION reportexport_refuse('purge records are kept');
CREATE TRIGGER job_purges_completed_once
    BEFORE UPDATE ON job_purges FOR EACH ROW WHEN (OLD.completed_at IS NOT NULL)
    EXECUTE FUNCTION reportexport_refuse('a completed purge record never changes');

-- Refuse a DELETE unless an open purge of this transaction covers the row's job.
CREATE FUNCTION reportexport_refuse_unless_purged() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    finished timestamptz;
BEGIN
    IF TG_TABLE_NAME = 'jobs' THEN
        finished := OLD.finished_at;
    ELSE
        SELECT finished_at INTO finished FROM jobs WHERE id = OLD.job_id;
    END IF;
    IF EXISTS (SELECT 1 FROM job_purges WHERE completed_at IS NULL AND finished < before) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'insufficient_privilege';
END $$;

DROP TRIGGER jobs_no_delete ON jobs;
CREATE TRIGGER jobs_no_delete
    BEFORE DELETE ON jobs FOR EACH ROW
    EXECUTE FUNCTION reportexport_refuse_unless_purged(
        'jobs are never deleted: cancel a job instead');

DROP TRIGGER job_history_append_only ON job_history;
CREATE TRIGGER job_history_append_only
    BEFORE UPDATE ON job_history FOR EACH ROW
    EXECUTE FUNCTION reportexport_refuse('job_history is append-only');
CREATE TRIGGER job_history_no_delete
    BEFORE DELETE ON job_history FOR EACH ROW
    EXECUTE FUNCTION reportexport_refuse_unless_purged('job_history is append-only');

DROP TRIGGER job_side_effects_no_delete ON job_side_effects;
CREATE TRIGGER job_side_effects_no_delete
    BEFORE DELETE ON job_side_effects FOR EACH ROW
    EXECUTE FUNCTION reportexport_refuse_unless_purged('side-effect rows are never deleted');

ALTER TABLE jobs ENABLE ALWAYS TRIGGER jobs_no_delete;
ALTER TABLE job_history ENABLE ALWAYS TRIGGER job_history_append_only;
ALTER TABLE job_history ENABLE ALWAYS TRIGGER job_history_no_delete;
ALTER TABLE job_side_effects ENABLE ALWAYS TRIGGER job_side_effects_no_delete;
ALTER TABLE job_purges ENABLE ALWAYS TRIGGER job_purges_kept;
ALTER TABLE job_purges ENABLE ALWAYS TRIGGER job_purges_no_truncate;
ALTER TABLE job_purges ENABLE ALWAYS TRIGGER job_purges_completed_once;
