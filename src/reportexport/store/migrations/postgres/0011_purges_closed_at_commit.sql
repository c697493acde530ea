-- A purge's record opens the delete guards (0009) only while it has no completed_at. A record
-- inserted by hand and committed open would leave them open for every transaction after it; so
-- a record must be completed in the transaction that writes it, checked at commit by a
-- deferred constraint trigger. Records left open before this migration are closed here.

UPDATE job_purges SET completed_at = clock_timestamp() WHERE completed_at IS NULL;

CREATE FUNCTION reportexport_purge_completed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM job_purges WHERE id = NEW.id AND completed_at IS NULL) THEN
        RAISE EXCEPTION 'a purge record is completed in the transaction that writes it: '
                        'use reportexport db purge'
              USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER job_purges_completed_at_commit
    AFTER INSERT ON job_purges DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION reportexport_purge_completed();
ALTER TABLE job_purges ENABLE ALWAYS TRIGGER job_purges_completed_at_commit;
