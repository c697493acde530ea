-- "E-mail me when any of my exports ends" (issue 23): a person's own preference, kept on their
-- row (0 or 1). The trigger of 0021 is made again: it now also fixes the e-mail delivery of a
-- job whose owner has the preference on, as it does for a job that asked with options.notify:
-- one delivery per job and effect at the owner's address, whichever asked (or both).

ALTER TABLE users ADD COLUMN notify_always INTEGER NOT NULL DEFAULT 0
    CHECK (notify_always IN (0, 1));

DROP TRIGGER job_side_effects_recipients_fixed;

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
       AND (json_extract(j.options, '$.notify') IS 1 OR u.notify_always = 1);
    INSERT INTO deliveries (job_id, effect, channel_id)
    SELECT NEW.job_id, NEW.effect, c.id
      FROM chat_channels c JOIN jobs j ON j.id = NEW.job_id
     WHERE (c.owner = j.owner OR c.owner IS NULL) AND c.disabled_at IS NULL
     ORDER BY c.id;
END;
