-- Who asked for a job, when that is not its owner: an operator's "run again" of someone's export
-- belongs to the owner (and counts against their limits) but records the person who asked.

ALTER TABLE jobs ADD COLUMN requested_by text;
