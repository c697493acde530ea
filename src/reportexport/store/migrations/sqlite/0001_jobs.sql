-- Jobs, their history and side effects, and the tables that hold the graph.
-- The graph's contents and the status guards come from sql/sqlite/graph.sql, generated from
-- the fixture and applied by `reportexport db upgrade`. Timestamps are UTC ISO 8601 text
-- ('2026-01-31T12:00:00.000Z'), which sorts and compares correctly as text. Rows are never
-- deleted, so INTEGER PRIMARY KEY ids only grow without AUTOINCREMENT's extra writes.

CREATE TABLE reportexport_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE job_states (
    status      TEXT PRIMARY KEY,
    is_initial  INTEGER NOT NULL,
    is_terminal INTEGER NOT NULL,
    position    INTEGER NOT NULL
) STRICT;

CREATE TABLE job_transitions (
    from_status TEXT NOT NULL,
    to_status   TEXT NOT NULL,
    actor       TEXT NOT NULL,
    PRIMARY KEY (from_status, to_status)
) STRICT;

CREATE TABLE job_state_effects (
    status   TEXT NOT NULL,
    effect   TEXT NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (status, effect)
) STRICT;

CREATE TABLE jobs (
    id                INTEGER PRIMARY KEY,
    owner             TEXT NOT NULL,
    saved_query       TEXT NOT NULL,
    source            TEXT NOT NULL DEFAULT '',
    query_sql         TEXT NOT NULL,
    query_hash        TEXT NOT NULL,
    parameters        TEXT NOT NULL DEFAULT '{}',
    options           TEXT NOT NULL DEFAULT '{}',
    status            TEXT NOT NULL,
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    started_at        TEXT,
    finished_at       TEXT,
    lease_owner       TEXT,
    lease_token       INTEGER NOT NULL DEFAULT 0,
    lease_expires_at  TEXT,
    rows_written      INTEGER NOT NULL DEFAULT 0,
    bytes_written     INTEGER NOT NULL DEFAULT 0,
    progressed_at     TEXT,
    temp_key          TEXT,
    object_key        TEXT,
    object_sha256     TEXT,
    object_bytes      INTEGER,
    object_rows       INTEGER,
    columns           TEXT,
    file_name         TEXT,
    object_expires_at TEXT,
    error_code        TEXT,
    error_message     TEXT,
    rerun_of          INTEGER REFERENCES jobs (id),
    idempotency_key   TEXT,
    -- The intent of a status change, set in the same UPDATE as the status; the triggers
    -- record it in job_history and clear it, so the next change must name its own actor.
    change_actor      TEXT,
    change_person     TEXT,
    change_reason     TEXT,
    change_worker     TEXT,
    UNIQUE (owner, idempotency_key)
) STRICT;
CREATE INDEX jobs_owner_newest ON jobs (owner, id DESC);
CREATE INDEX jobs_status_oldest ON jobs (status, id);

CREATE TABLE job_history (
    id          INTEGER PRIMARY KEY,
    job_id      INTEGER NOT NULL REFERENCES jobs (id),
    from_status TEXT NOT NULL,
    to_status   TEXT NOT NULL,
    actor       TEXT NOT NULL,
    person      TEXT,
    reason      TEXT,
    worker      TEXT,
    at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT;
CREATE INDEX job_history_of_job ON job_history (job_id, id);

CREATE TABLE job_side_effects (
    id               INTEGER PRIMARY KEY,
    job_id           INTEGER NOT NULL REFERENCES jobs (id),
    status           TEXT NOT NULL,
    effect           TEXT NOT NULL,
    created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    last_attempt_at  TEXT,
    last_error       TEXT,
    completed_at     TEXT,
    given_up_at      TEXT,
    claimed_by       TEXT,
    claim_expires_at TEXT,
    UNIQUE (job_id, effect)
) STRICT;
CREATE INDEX job_side_effects_due ON job_side_effects (next_attempt_at)
    WHERE completed_at IS NULL AND given_up_at IS NULL;

-- Intent set without a status change is cleared, so no later change can inherit it.
CREATE TRIGGER jobs_stray_intent_cleared
AFTER UPDATE OF change_actor, change_person, change_reason, change_worker ON jobs
WHEN NEW.status IS OLD.status AND coalesce(NEW.change_actor, NEW.change_person,
                                           NEW.change_reason, NEW.change_worker) IS NOT NULL
BEGIN
    UPDATE jobs SET change_actor = NULL, change_person = NULL, change_reason = NULL,
                    change_worker = NULL
     WHERE id = NEW.id;
END;

CREATE TRIGGER jobs_created_intent_cleared AFTER INSERT ON jobs
WHEN coalesce(NEW.change_actor, NEW.change_person, NEW.change_reason,
              NEW.change_worker) IS NOT NULL
BEGIN
    UPDATE jobs SET change_actor = NULL, change_person = NULL, change_reason = NULL,
                    change_worker = NULL
     WHERE id = NEW.id;
END;

CREATE TRIGGER jobs_no_delete BEFORE DELETE ON jobs
BEGIN
    SELECT RAISE(ABORT, 'jobs are never deleted: cancel a job instead');
END;

CREATE TRIGGER job_history_no_update BEFORE UPDATE ON job_history
BEGIN
    SELECT RAISE(ABORT, 'job_history is append-only');
END;

CREATE TRIGGER job_history_no_delete BEFORE DELETE ON job_history
BEGIN
    SELECT RAISE(ABORT, 'job_history is append-only');
END;

CREATE TRIGGER job_side_effects_no_delete BEFORE DELETE ON job_side_effects
BEGIN
    SELECT RAISE(ABORT, 'side-effect rows are never deleted');
END;

CREATE TRIGGER job_side_effects_identity_kept
BEFORE UPDATE OF job_id, status, effect ON job_side_effects
WHEN NEW.job_id IS NOT OLD.job_id OR NEW.status IS NOT OLD.status OR NEW.effect IS NOT OLD.effect
BEGIN
    SELECT RAISE(ABORT, 'a side-effect row keeps its job, status and effect');
END;

CREATE TRIGGER job_side_effects_declared BEFORE INSERT ON job_side_effects
WHEN NOT EXISTS (SELECT 1 FROM job_state_effects e
                  WHERE e.status = NEW.status AND e.effect = NEW.effect)
BEGIN
    SELECT RAISE(ABORT, 'side effect is not an effect of that terminal state');
END;
