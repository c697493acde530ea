-- "E-mail me when any of my exports ends" (issue 23): a person's own preference, kept on their
-- row. The trigger of 0020 (as 0021 left it) now also fixes the e-mail delivery of a job whose
-- owner has the preference on, as it does for a job that asked with options.notify: one
-- delivery per job and effect at the owner's address, whichever asked (or both).

ALTER TABLE users ADD COLUMN notify_always boolean NOT NULL DEFAULT false;

-- SECURITY DEFINER: a service role needs no INSERT on deliveries to end a job.
CREATE OR REPLACE FUNCTION deliveries_recipients_fixed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
       AND (j.options -> 'notify' = 'true'::jsonb OR u.notify_always);
    INSERT INTO deliveries (job_id, effect, channel_id)
    SELECT NEW.job_id, NEW.effect, c.id
      FROM chat_channels c JOIN jobs j ON j.id = NEW.job_id
     WHERE (c.owner = j.owner OR c.owner IS NULL) AND c.disabled_at IS NULL
     ORDER BY c.id;
    RETURN NULL;
END $$;
