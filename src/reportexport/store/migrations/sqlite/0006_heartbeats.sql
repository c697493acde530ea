-- Each process's heartbeat, replaced at every beat: what `reportexport workers`, /metrics and
-- the operators' pages show. Fixed fields only (numbers, timestamps, names and codes): there is
-- no free-text "what it is doing" column.

CREATE TABLE heartbeats (
    process             TEXT PRIMARY KEY,        -- host-pid-kind
    host                TEXT NOT NULL,
    pid                 INTEGER NOT NULL,
    kind                TEXT NOT NULL CHECK (kind IN ('worker', 'effects', 'serve')),
    started_at          TEXT NOT NULL,
    seen_at             TEXT NOT NULL,
    active_jobs         TEXT NOT NULL DEFAULT '[]', -- JSON array of job ids
    last_claim_at       TEXT,
    claims_paused_until TEXT,
    pause_reason        TEXT CHECK (pause_reason IN ('storage_unavailable', 'source_unavailable')),
    paused_sources      TEXT NOT NULL DEFAULT '[]'  -- JSON array of source names
) STRICT;
