-- Claims in turns, and each source's max_concurrent held by the database across every worker.
--
-- A job's turn is how many unfinished jobs its owner had when it was made. Claims take the
-- lowest turn first, so owners alternate and one person's backlog cannot hold back another's
-- first export. Jobs made before this migration keep turn 0.
ALTER TABLE jobs ADD COLUMN turn integer NOT NULL DEFAULT 0;
CREATE INDEX jobs_claim_order ON jobs (turn, id) WHERE status = 'queued';
CREATE INDEX jobs_owner_unfinished ON jobs (owner) WHERE finished_at IS NULL;

-- A source's cap as the last process to start published it from its catalog.
CREATE TABLE source_caps (
    source         text PRIMARY KEY,
    max_concurrent integer NOT NULL CHECK (max_concurrent >= 1),
    set_by         text NOT NULL,
    set_at         timestamptz NOT NULL
);

-- One row per slot of a capped source; a running job of the source holds one.
CREATE TABLE source_slots (
    source text NOT NULL REFERENCES source_caps (source),
    slot   integer NOT NULL CHECK (slot >= 1),
    job_id bigint UNIQUE REFERENCES jobs (id),
    PRIMARY KEY (source, slot)
);

-- A worker's claim of a job of a capped source takes a free slot, or the row is left as it
-- was (a BEFORE trigger returning NULL skips this row only; the claim moves the others).
-- Slots another claim holds are skipped, not waited for. The trigger's name sorts before
-- jobs_status_guard's, so a row without a slot never reaches the guard's history insert.
CREATE FUNCTION job_source_slot_taken() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM source_caps WHERE source = NEW.source) THEN
        RETURN NEW;
    END IF;
    UPDATE source_slots SET job_id = NEW.id
     WHERE (source, slot) = (SELECT source, slot FROM source_slots
                              WHERE source = NEW.source AND job_id IS NULL
                              ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED);
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER jobs_source_slot_taken
    BEFORE UPDATE OF status ON jobs FOR EACH ROW
    WHEN (OLD.status = 'queued' AND NEW.status = 'running' AND NEW.change_actor = 'worker')
    EXECUTE FUNCTION job_source_slot_taken();

-- A job that stops running gives its slot back, or drops it while the source has more slots
-- than its cap (the cap was lowered while its slots were taken). Only then is the source's
-- cap row locked, so that two jobs ending at once cannot both drop theirs below the cap.
CREATE FUNCTION job_source_slot_freed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF (SELECT count(*) FROM source_slots WHERE source = OLD.source)
       > (SELECT max_concurrent FROM source_caps WHERE source = OLD.source) THEN
        PERFORM 1 FROM source_caps WHERE source = OLD.source FOR UPDATE;
        DELETE FROM source_slots
         WHERE job_id = OLD.id
           AND (SELECT count(*) FROM source_slots WHERE source = OLD.source)
               > (SELECT max_concurrent FROM source_caps WHERE source = OLD.source);
    END IF;
    UPDATE source_slots SET job_id = NULL WHERE job_id = OLD.id;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_source_slot_freed
    AFTER UPDATE OF status ON jobs FOR EACH ROW
    WHEN (OLD.status = 'running' AND NEW.status IS DISTINCT FROM 'running')
    EXECUTE FUNCTION job_source_slot_freed();

ALTER TABLE jobs ENABLE ALWAYS TRIGGER jobs_source_slot_taken;
ALTER TABLE jobs ENABLE ALWAYS TRIGGER jobs_source_slot_freed;
