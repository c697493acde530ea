-- Jobs, their history and side effects, and the tables that hold the graph.
-- The graph's contents and the status constraints come from sql/postgres/graph.sql,
-- generated from the fixture and applied by `reportexport db upgrade`.

CREATE TABLE reportexport_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE job_states (
    status      text PRIMARY KEY,
    is_initial  boolean NOT NULL,
    is_terminal boolean NOT NULL,
    position    integer NOT NULL
);

CREATE TABLE job_transitions (
    from_status text NOT NULL,
    to_status   text NOT NULL,
    actor       text NOT NULL,
    PRIMARY KEY (from_status, to_status)
);

CREATE TABLE job_state_effects (
    status   text NOT NULL,
    effect   text NOT NULL,
    position integer NOT NULL,
    PRIMARY KEY (status, effect)
);

CREATE TABLE jobs (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner             text NOT NULL,
    saved_query       text NOT NULL,
    source            text NOT NULL DEFAULT '',
    query_sql         text NOT NULL,
    query_hash        text NOT NULL,
    parameters        jsonb NOT NULL DEFAULT '{}',
    options           jsonb NOT NULL DEFAULT '{}',
    status            text NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at        timestamptz,
    finished_at       timestamptz,
    lease_owner       text,
    lease_token       bigint NOT NULL DEFAULT 0,
    lease_expires_at  timestamptz,
    rows_written      bigint NOT NULL DEFAULT 0,
    bytes_written     bigint NOT NULL DEFAULT 0,
    progressed_at     timestamptz,
    temp_key          text,
    object_key        text,
    object_sha256     text,
    object_bytes      bigint,
    object_rows       bigint,
    columns           jsonb,
    file_name         text,
    object_expires_at timestamptz,
    error_code        text,
    error_message     text,
    rerun_of          bigint REFERENCES jobs (id),
    idempotency_key   text,
    -- The intent of a status change, set in the same UPDATE as the status; the guard records
    -- it in job_history and clears it, so the next change must name its own actor.
    change_actor      text,
    change_person     text,
    change_reason     text,
    change_worker     text,
    UNIQUE (owner, idempotency_key)
);
CREATE INDEX jobs_owner_newest ON jobs (owner, id DESC);
CREATE INDEX jobs_status_oldest ON jobs (status, id);

-- Keyed by (job_id, id): one index serves both uniqueness and a job's timeline.
CREATE TABLE job_history (
    job_id      bigint NOT NULL REFERENCES jobs (id),
    id          bigint GENERATED ALWAYS AS IDENTITY,
    from_status text NOT NULL,
    to_status   text NOT NULL,
    actor       text NOT NULL,
    person      text,
    reason      text,
    worker      text,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (job_id, id)
);

-- One row per job and effect: the key is the exactly-once guarantee.
CREATE TABLE job_side_effects (
    job_id           bigint NOT NULL REFERENCES jobs (id),
    id               bigint GENERATED ALWAYS AS IDENTITY,
    status           text NOT NULL,
    effect           text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_attempt_at  timestamptz,
    last_error       text,
    completed_at     timestamptz,
    given_up_at      timestamptz,
    claimed_by       text,
    claim_expires_at timestamptz,
    PRIMARY KEY (job_id, effect)
);
CREATE INDEX job_side_effects_due ON job_side_effects (next_attempt_at)
    WHERE completed_at IS NULL AND given_up_at IS NULL;

-- The status guard (job_status_guard and its trigger) is generated from the fixture: see
-- sql/postgres/graph.sql.

CREATE FUNCTION job_created_notify() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM pg_notify('reportexport_jobs', NEW.id || ' ' || NEW.status);
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_created_notify
    AFTER INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION job_created_notify();

CREATE FUNCTION reportexport_refuse() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TRIGGER job_history_append_only
    BEFORE UPDATE OR DELETE ON job_history FOR EACH ROW
    EXECUTE FUNCTION reportexport_refuse('job_history is append-only');
CREATE TRIGGER job_history_no_truncate
    BEFORE TRUNCATE ON job_history FOR EACH STATEMENT
    EXECUTE FUNCTION reportexport_refuse('job_history is append-only');
CREATE TRIGGER jobs_no_delete
    BEFORE DELETE ON jobs FOR EACH ROW
    EXECUTE FUNCTION reportexport_refuse('jobs are never deleted: cancel a job instead');
CREATE TRIGGER jobs_no_truncate
    BEFORE TRUNCATE ON jobs FOR EACH STATEMENT
    EXECUTE FUNCTION reportexport_refuse('jobs are never deleted: cancel a job instead');
CREATE TRIGGER job_side_effects_no_delete
    BEFORE DELETE ON job_side_effects FOR EACH ROW
    EXECUTE FUNCTION reportexport_refuse('side-effect rows are never deleted');
CREATE TRIGGER job_side_effects_no_truncate
    BEFORE TRUNCATE ON job_side_effects FOR EACH STATEMENT
    EXECUTE FUNCTION reportexport_refuse('side-effect rows are never deleted');

-- A side-effect row names an effect of a terminal state, and its identity never changes.
CREATE FUNCTION job_side_effect_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND (NEW.job_id, NEW.status, NEW.effect) IS DISTINCT FROM
                            (OLD.job_id, OLD.status, OLD.effect) THEN
        RAISE EXCEPTION 'a side-effect row keeps its job, status and effect'
            USING ERRCODE = 'check_violation';
    END IF;
    IF TG_OP = 'INSERT' AND NOT EXISTS (
        SELECT 1 FROM job_state_effects e WHERE e.status = NEW.status AND e.effect = NEW.effect
    ) THEN
        RAISE EXCEPTION 'side effect % is not an effect of %', NEW.effect, NEW.status
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;

-- Rows inserted by job_status_guard (trigger depth 1) are right by construction.
CREATE TRIGGER job_side_effects_guard
    BEFORE INSERT OR UPDATE ON job_side_effects FOR EACH ROW
    WHEN (pg_trigger_depth() < 1)
    EXECUTE FUNCTION job_side_effect_guard();

-- Triggers fire under session_replication_role = replica too.
ALTER TABLE jobs ENABLE ALWAYS TRIGGER jobs_created_notify;
ALTER TABLE jobs ENABLE ALWAYS TRIGGER jobs_no_delete;
ALTER TABLE jobs ENABLE ALWAYS TRIGGER jobs_no_truncate;
ALTER TABLE job_history ENABLE ALWAYS TRIGGER job_history_append_only;
ALTER TABLE job_history ENABLE ALWAYS TRIGGER job_history_no_truncate;
ALTER TABLE job_side_effects ENABLE ALWAYS TRIGGER job_side_effects_no_delete;
ALTER TABLE job_side_effects ENABLE ALWAYS TRIGGER job_side_effects_no_truncate;
ALTER TABLE job_side_effects ENABLE ALWAYS TRIGGER job_side_effects_guard;
