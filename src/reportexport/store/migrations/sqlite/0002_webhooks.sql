-- Side-effect claims get a fencing token and a re-drive count; webhook endpoints and the
-- per-endpoint record of each delivery.

ALTER TABLE job_side_effects ADD COLUMN claim_token INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_side_effects ADD COLUMN redrives INTEGER NOT NULL DEFAULT 0;

CREATE TABLE webhook_endpoints (
    id                    INTEGER PRIMARY KEY,
    owner                 TEXT,          -- NULL: the global endpoint, sent every event
    url                   TEXT NOT NULL,
    secret                TEXT NOT NULL,
    previous_secret       TEXT,          -- still signs until previous_secret_until
    previous_secret_until TEXT,
    created_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    disabled_at           TEXT,
    disabled_reason       TEXT
) STRICT;
CREATE INDEX webhook_endpoints_of_owner ON webhook_endpoints (owner) WHERE disabled_at IS NULL;
CREATE UNIQUE INDEX webhook_endpoints_one_global ON webhook_endpoints (owner IS NULL)
    WHERE owner IS NULL AND disabled_at IS NULL;

CREATE TABLE webhook_deliveries (
    job_id          INTEGER NOT NULL,
    effect          TEXT NOT NULL,
    endpoint_id     INTEGER NOT NULL REFERENCES webhook_endpoints (id),
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_attempt_at TEXT,
    last_status     INTEGER,
    last_error      TEXT,
    delivered_at    TEXT,
    PRIMARY KEY (job_id, effect, endpoint_id)
) STRICT;
