-- Chat channels (issue 23): a channel reached through its incoming-webhook URL (Slack's message
-- format, which Mattermost and Rocket.Chat take too), registered by an operator for one person's
-- announcements or for everyone's (owner NULL). A channel is one more destination of
-- emit_done_webhook and emit_failed_webhook: the trigger of 0020 now also fixes a delivery
-- record for each enabled channel of the job's owner and each global one, in the transaction of
-- the terminal transition, with the same attempts, backoff, giving up and re-drives. The URL
-- carries the channel's credential: it is never listed back. SQLite changes a table's checks
-- only by building it again: deliveries is copied into its new form, its trigger remade.

CREATE TABLE chat_channels (
    id              INTEGER PRIMARY KEY,
    owner           TEXT,          -- NULL: every person's announcements
    name            TEXT NOT NULL, -- how operators call it (#exports)
    url             TEXT NOT NULL,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    disabled_at     TEXT,
    disabled_reason TEXT
) STRICT;
CREATE INDEX chat_channels_of_owner ON chat_channels (owner) WHERE disabled_at IS NULL;

DROP TRIGGER job_side_effects_recipients_fixed;

CREATE TABLE deliveries_with_channels (
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
    channel_id      INTEGER REFERENCES chat_channels (id),
    FOREIGN KEY (job_id, effect) REFERENCES job_side_effects (job_id, effect),
    CHECK ((endpoint_id IS NOT NULL) + (address IS NOT NULL) + (channel_id IS NOT NULL) = 1),
    CHECK (delivered_at IS NULL OR given_up_at IS NULL),
    UNIQUE (job_id, effect, endpoint_id),
    UNIQUE (job_id, effect, address),
    UNIQUE (job_id, effect, channel_id)
) STRICT;
INSERT INTO deliveries_with_channels
       (id, job_id, effect, endpoint_id, address, created_at, attempts, next_attempt_at,
        last_attempt_at, last_status, last_error, delivered_at, given_up_at, redrives)
SELECT id, job_id, effect, endpoint_id, address, created_at, attempts, next_attempt_at,
       last_attempt_at, last_status, last_error, delivered_at, given_up_at, redrives
  FROM deliveries;
DROP TABLE deliveries;
ALTER TABLE deliveries_with_channels RENAME TO deliveries;
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
    INSERT INTO deliveries (job_id, effect, channel_id)
    SELECT NEW.job_id, NEW.effect, c.id
      FROM chat_channels c JOIN jobs j ON j.id = NEW.job_id
     WHERE (c.owner = j.owner OR c.owner IS NULL) AND c.disabled_at IS NULL
     ORDER BY c.id;
END;
