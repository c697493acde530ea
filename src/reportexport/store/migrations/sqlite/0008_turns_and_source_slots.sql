-- Claims in turns, and each source's max_concurrent held by the database across every worker.
--
-- A job's turn is how many unfinished jobs its owner had when it was made. Claims take the
-- lowest turn first, so owners alternate and one person's backlog cannot hold back another's
-- first export. Jobs made before this migration keep turn 0.
ALTER TABLE jobs ADD COLUMN turn INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_claim_order ON jobs (turn, id) WHERE status = 'queued';
CREATE INDEX jobs_owner_unfinished ON jobs (owner) WHERE finished_at IS NULL;

-- A source's cap as the last process to start published it from its catalog.
CREATE TABLE source_caps (
    source         TEXT PRIMARY KEY,
    max_concurrent INTEGER NOT NULL CHECK (max_concurrent >= 1),
    set_by         TEXT NOT NULL,
    set_at         TEXT NOT NULL
) STRICT;

-- One row per slot of a capped source; a running job of the source holds one.
CREATE TABLE source_slots (
    source TEXT NOT NULL REFERENCES source_caps (source),
    slot   INTEGER NOT NULL CHECK (slot >= 1),
    job_id INTEGER UNIQUE REFERENCES jobs (id),
    PRIMARY KEY (source, slot)
) STRICT;

-- A worker's claim of a job of a capped source takes a free slot, or the row is left as it
-- was (RAISE(IGNORE) skips this row only; the claim moves the others).
CREATE TRIGGER jobs_source_slot_taken BEFORE UPDATE OF status ON jobs
WHEN OLD.status = 'queued' AND NEW.status = 'running' AND NEW.change_actor = 'worker'
 AND EXISTS (SELECT 1 FROM source_caps WHERE source = NEW.source)
BEGIN
    SELECT RAISE(IGNORE)
     WHERE NOT EXISTS (SELECT 1 FROM source_slots WHERE source = NEW.source AND job_id IS NULL);
    UPDATE source_slots SET job_id = NEW.id
     WHERE source = NEW.source
       AND slot = (SELECT min(slot) FROM source_slots
                    WHERE source = NEW.source AND job_id IS NULL);
END;

-- A job that stops running gives its slot back, or drops it while the source has more slots
-- than its cap (the cap was lowered while its slots were taken).
CREATE TRIGGER jobs_source_slot_freed AFTER UPDATE OF status ON jobs
WHEN OLD.status = 'running' AND NEW.status IS NOT 'running'
BEGIN
    DELETE FROM source_slots
     WHERE job_id = OLD.id
       AND (SELECT count(*) FROM source_slots WHERE source = OLD.source)
           > (SELECT max_concurrent FROM source_caps WHERE source = OLD.source);
    UPDATE source_slots SET job_id = NULL WHERE job_id = OLD.id;
END;
