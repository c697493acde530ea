-- Each process's heartbeat, replaced at every beat: what `reportexport workers`, /metrics and
-- the operators' pages show. Fixed fields only (numbers, timestamps, names and codes): there is
-- no free-text "what it is doing" column.

CREATE TABLE heartbeats (
    process             text PRIMARY KEY,        -- host-pid-kind
    host                text NOT NULL,
    pid                 integer NOT NULL,
    kind                text NOT NULL CHECK (kind IN ('worker', 'effects', 'serve')),
    started_at          timestamptz NOT NULL,
    seen_at             timestamptz NOT NULL,
    active_jobs         jsonb NOT NULL DEFAULT '[]',
    last_claim_at       timestamptz,
    claims_paused_until timestamptz,
    pause_reason        text CHECK (pause_reason IN ('storage_unavailable', 'source_unavailable')),
    paused_sources      jsonb NOT NULL DEFAULT '[]'
);
