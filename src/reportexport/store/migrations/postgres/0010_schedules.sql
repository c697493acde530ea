-- Scheduled exports. A schedule has no status: pausing and ending are timestamps with reasons.
-- Each firing is a row keyed by (schedule, scheduled time), unique, so any number of processes
-- running the scheduler create at most one job per firing; the firing records the job it made
-- or why it made none, and how many earlier times it skipped after downtime.

CREATE TABLE schedules (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner          text NOT NULL,
    saved_query    text NOT NULL,
    parameters     jsonb NOT NULL DEFAULT '{}',  -- a value may be {"relative": "yesterday"}
    cron           text NOT NULL,
    time_zone      text NOT NULL,
    ends_at        timestamptz,
    next_fire_at   timestamptz,                  -- NULL once no time is left before ends_at
    paused_at      timestamptz,
    pause_reason   text,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    created_by     text NOT NULL,
    deleted_at     timestamptz,
    CHECK ((paused_at IS NULL) = (pause_reason IS NULL))
);
CREATE INDEX schedules_due ON schedules (next_fire_at)
    WHERE paused_at IS NULL AND deleted_at IS NULL;
CREATE INDEX schedules_of_owner ON schedules (owner, id) WHERE deleted_at IS NULL;

CREATE TABLE schedule_firings (
    schedule_id   bigint NOT NULL REFERENCES schedules (id),
    scheduled_for timestamptz NOT NULL,
    fired_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    fired_by      text NOT NULL,
    manual        boolean NOT NULL DEFAULT false,  -- "run now", not a time of the cron
    missed        integer NOT NULL DEFAULT 0,      -- earlier times skipped after downtime
    job_id        bigint REFERENCES jobs (id),
    query_hash    text,
    refusal_code  text,                            -- max_active, max_recent, ...
    refusal       text,
    PRIMARY KEY (schedule_id, scheduled_for),
    CHECK (job_id IS NULL OR refusal_code IS NULL)
);
CREATE INDEX schedule_firings_unsettled ON schedule_firings (fired_at)
    WHERE job_id IS NULL AND refusal_code IS NULL;

-- The schedule that made a job, for its page and its webhook events.
ALTER TABLE jobs ADD COLUMN schedule_id bigint REFERENCES schedules (id);

-- A purge removes the firings of the jobs it removes, and counts them.
ALTER TABLE job_purges ADD COLUMN schedule_firings bigint;
