-- One delivery record per destination of an announcement (issue 23). The recipients of
-- emit_done_webhook and emit_failed_webhook are fixed when their side-effect row is written,
-- in the transaction of the terminal transition (the trigger below): the owner's enabled
-- webhook endpoints and the global one, and the owner's e-mail address when the job asked to
-- notify its owner (users.email: set by an operator or given by the identity provider). Each
-- record has its own attempts, next attempt, last problem, delivered and given-up moments and
-- re-drives: one refused address is given up alone. Numbers and timestamps only, no status
-- word. webhook_deliveries is kept as it was and no longer written.

CREATE TABLE deliveries (
    id              INTEGER PRIMARY KEY,
    job_id          INTEGER NOT NULL,
    effect          TEXT NOT NULL,
    endpoint_id     INTEGER REFERENCES webhook_endpoints (id),
    address         TEXT,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    last_attempt_at TEXT,
    last_status     INTEGER,
    last_error      TEXT,
    delivered_at    TEXT,
    given_up_at     TEXT,
    redrives        INTEGER NOT NULL DEFAULT 0 CHECK (redrives >= 0),
    FOREIGN KEY (job_id, effect) REFERENCES job_side_effects (job_id, effect),
    CHECK ((endpoint_id IS NULL) <> (address IS NULL)),
    CHECK (delivered_at IS NULL OR given_up_at IS NULL),
    UNIQUE (job_id, effect, endpoint_id),
    UNIQUE (job_id, effect, address)
) STRICT;
CREATE INDEX deliveries_given_up ON deliveries (given_up_at) WHERE given_up_at IS NOT NULL;

CREATE TRIGGER job_side_effects_recipients_fixed AFTER INSERT ON job_side_effects
WHEN NEW.effect IN ('emit_done_webhook', 'emit_failed_webhook')
BEGIN
    INSERT INTO deliveries (job_id, effect, endpoint_id)
    SELECT NEW.job_id, NEW.effect, w.id
      FROM webhook_endpoints w JOIN jobs j ON j.id = NEW.job_id
     WHERE (w.owner = j.owner OR w.owner IS NULL) AND w.disabled_at IS NULL
     ORDER BY w.id;
    INSERT INTO deliveries (job_id, effect, address)
    SELECT NEW.job_id, NEW.effect, u.email
      FROM jobs j JOIN users u ON u.name = j.owner
     WHERE j.id = NEW.job_id AND u.email IS NOT NULL
       AND json_extract(j.options, '$.notify') IS 1;
END;

-- Announcements not yet carried out when this migration runs get their recipients now.
INSERT INTO deliveries (job_id, effect, endpoint_id)
SELECT e.job_id, e.effect, w.id
  FROM job_side_effects e JOIN jobs j ON j.id = e.job_id
  JOIN webhook_endpoints w ON (w.owner = j.owner OR w.owner IS NULL) AND w.disabled_at IS NULL
 WHERE e.effect IN ('emit_done_webhook', 'emit_failed_webhook')
   AND e.completed_at IS NULL
   AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                    WHERE d.job_id = e.job_id AND d.effect = e.effect
                      AND d.endpoint_id = w.id AND d.delivered_at IS NOT NULL);
