-- Scheduled exports. A schedule has no status: pausing and ending are timestamps with reasons.
-- Each firing is a row keyed by (schedule, scheduled time), unique, so any number of processes
-- running the scheduler create at most one job per firing; the firing records the job it made
-- or why it made none, and how many earlier times it skipped after downtime.

CREATE TABLE schedules (
    id             INTEGER PRIMARY KEY,
    owner          TEXT NOT NULL,
    saved_query    TEXT NOT NULL,
    parameters     TEXT NOT NULL DEFAULT '{}',  -- JSON; a value may be {"relative": "yesterday"}
    cron           TEXT NOT NULL,
    time_zone      TEXT NOT NULL,
    ends_at        TEXT,
    next_fire_at   TEXT,                        -- NULL once no time is left before ends_at
    paused_at      TEXT,
    pause_reason   TEXT,
    created_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    created_by     TEXT NOT NULL,
    deleted_at     TEXT,
    CHECK ((paused_at IS NULL) = (pause_reason IS NULL))
) STRICT;
CREATE INDEX schedules_due ON schedules (next_fire_at)
    WHERE paused_at IS NULL AND deleted_at IS NULL;
CREATE INDEX schedules_of_owner ON schedules (owner, id) WHERE deleted_at IS NULL;

CREATE TABLE schedule_firings (
    schedule_id   INTEGER NOT NULL REFERENCES schedules (id),
    scheduled_for TEXT NOT NULL,
    fired_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    fired_by      TEXT NOT NULL,
    manual        INTEGER NOT NULL DEFAULT 0,   -- 1: "run now", not a time of the cron
    missed        INTEGER NOT NULL DEFAULT 0,   -- earlier times skipped after downtime
    job_id        INTEGER REFERENCES jobs (id),
    query_hash    TEXT,
    refusal_code  TEXT,                         -- max_active, max_recent, invalid_parameters, ...
    refusal       TEXT,
    PRIMARY KEY (schedule_id, scheduled_for),
    CHECK (job_id IS NULL OR refusal_code IS NULL)
) STRICT;
CREATE INDEX schedule_firings_unsettled ON schedule_firings (fired_at)
    WHERE job_id IS NULL AND refusal_code IS NULL;

-- The schedule that made a job, for its page and its webhook events.
ALTER TABLE jobs ADD COLUMN schedule_id INTEGER REFERENCES schedules (id);

-- A purge removes the firings of the jobs it removes, and counts them.
ALTER TABLE job_purges ADD COLUMN schedule_firings INTEGER;
