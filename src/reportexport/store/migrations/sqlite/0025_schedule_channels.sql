-- Chat channels as a schedule's recipients (issue 23). A channel registered `schedules_only`
-- takes no announcement of its owner's (or, owner NULL, everyone's) exports, only those of the
-- schedules it is added to; any enabled channel may be added to a schedule (who may add which
-- is the service's rule: operators any, a schedule's owner those registered for them). The
-- trigger of 0024 is made again: it now also fixes, for a job made by a schedule not deleted,
-- one delivery per enabled channel of that schedule; a channel fixed already (its owner's or a
-- global one) is not fixed twice.

ALTER TABLE chat_channels ADD COLUMN schedules_only INTEGER NOT NULL DEFAULT 0
    CHECK (schedules_only IN (0, 1));

CREATE TABLE schedule_channels (
    schedule_id INTEGER NOT NULL REFERENCES schedules (id),
    channel_id  INTEGER NOT NULL REFERENCES chat_channels (id),
    added_by    TEXT NOT NULL,
    added_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (schedule_id, channel_id)
) STRICT;

DROP TRIGGER job_side_effects_recipients_fixed;

CREATE TRIGGER job_side_effects_recipients_fixed AFTER INSERT ON job_side_effects
WHEN NEW.effect IN ('emit_done_webhook', 'emit_failed_webhook')
BEGIN
    INSERT INTO deliveries (job_id, effect, endpoint_id)
    SELECT NEW.job_id, NEW.effect, w.id
      FROM webhook_endpoints w JOIN jobs j ON j.id = NEW.job_id
     WHERE (w.owner = j.owner OR w.owner IS NULL) AND w.disabled_at IS NULL
     ORDER BY w.id;
    INSERT INTO deliveries (job_id, effect, address, person)
    SELECT NEW.job_id, NEW.effect, u.email, u.name
      FROM jobs j JOIN users u ON u.name = j.owner
     WHERE j.id = NEW.job_id AND u.email IS NOT NULL
       AND (json_extract(j.options, '$.notify') IS 1 OR u.notify_always = 1);
    INSERT OR IGNORE INTO deliveries (job_id, effect, address, person)
    SELECT NEW.job_id, NEW.effect, u.email, u.name
      FROM jobs j
      JOIN schedules s ON s.id = j.schedule_id AND s.deleted_at IS NULL
      JOIN schedule_recipients r ON r.schedule_id = s.id
      JOIN users u ON u.name = r.person
     WHERE j.id = NEW.job_id AND u.email IS NOT NULL
       AND u.revoked_at IS NULL AND u.suspended_at IS NULL
     ORDER BY u.name;
    INSERT INTO deliveries (job_id, effect, channel_id)
    SELECT NEW.job_id, NEW.effect, c.id
      FROM chat_channels c JOIN jobs j ON j.id = NEW.job_id
     WHERE (c.owner = j.owner OR c.owner IS NULL) AND c.disabled_at IS NULL
       AND c.schedules_only = 0
     ORDER BY c.id;
    INSERT OR IGNORE INTO deliveries (job_id, effect, channel_id)
    SELECT NEW.job_id, NEW.effect, c.id
      FROM jobs j
      JOIN schedules s ON s.id = j.schedule_id AND s.deleted_at IS NULL
      JOIN schedule_channels sc ON sc.schedule_id = s.id
      JOIN chat_channels c ON c.id = sc.channel_id
     WHERE j.id = NEW.job_id AND c.disabled_at IS NULL
     ORDER BY c.id;
END;
