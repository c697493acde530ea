-- Side-effect claims get a fencing token and a re-drive count; webhook endpoints and the
-- per-endpoint record of each delivery.

ALTER TABLE job_side_effects ADD COLUMN claim_token bigint NOT NULL DEFAULT 0;
ALTER TABLE job_side_effects ADD COLUMN redrives integer NOT NULL DEFAULT 0;

CREATE TABLE webhook_endpoints (
    id                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner                 text,          -- NULL: the global endpoint, sent every event
    url                   text NOT NULL,
    secret                text NOT NULL,
    previous_secret       text,          -- still signs until previous_secret_until
    previous_secret_until timestamptz,
    created_at            timestamptz NOT NULL DEFAULT clock_timestamp(),
    disabled_at           timestamptz,
    disabled_reason       text
);
CREATE INDEX webhook_endpoints_of_owner ON webhook_endpoints (owner) WHERE disabled_at IS NULL;
CREATE UNIQUE INDEX webhook_endpoints_one_global ON webhook_endpoints ((owner IS NULL))
    WHERE owner IS NULL AND disabled_at IS NULL;

CREATE TABLE webhook_deliveries (
    job_id          bigint NOT NULL,
    effect          text NOT NULL,
    endpoint_id     bigint NOT NULL REFERENCES webhook_endpoints (id),
    attempts        integer NOT NULL DEFAULT 0,
    last_attempt_at timestamptz,
    last_status     integer,
    last_error      text,
    delivered_at    timestamptz,
    PRIMARY KEY (job_id, effect, endpoint_id),
    FOREIGN KEY (job_id, effect) REFERENCES job_side_effects (job_id, effect)
);
