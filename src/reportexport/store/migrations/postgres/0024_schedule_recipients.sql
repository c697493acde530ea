-- A schedule's recipients (issue 23): people of the system who get each firing's announcement
-- by e-mail besides its owner. Who may be added is decided by the service (a person who may run
-- the saved query as its owner does); the runner checks again before each e-mail. A delivery
-- now names the person whose address it goes to (`person`; NULL for webhook endpoints, chat
-- channels and deliveries fixed before this migration): whose access is checked before sending
-- and whose one-click link it carries. The trigger of 0020 (as 0022 left it) now also fixes,
-- for a job made by a schedule not deleted, one e-mail delivery per recipient with an address
-- who is neither revoked nor suspended; an address already fixed for the job (its owner's) is not
-- fixed twice.

CREATE TABLE schedule_recipients (
    schedule_id bigint NOT NULL REFERENCES schedules (id),
    person      text NOT NULL REFERENCES users (name),
    added_by    text NOT NULL,
    added_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (schedule_id, person)
);

ALTER TABLE deliveries ADD COLUMN person text;

-- SECURITY DEFINER: a service role needs no INSERT on deliveries to end a job.
CREATE OR REPLACE FUNCTION deliveries_recipients_fixed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
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
       AND (j.options -> 'notify' = 'true'::jsonb OR u.notify_always);
    INSERT INTO deliveries (job_id, effect, address, person)
    SELECT NEW.job_id, NEW.effect, u.email, u.name
      FROM jobs j
      JOIN schedules s ON s.id = j.schedule_id AND s.deleted_at IS NULL
      JOIN schedule_recipients r ON r.schedule_id = s.id
      JOIN users u ON u.name = r.person
     WHERE j.id = NEW.job_id AND u.email IS NOT NULL
       AND u.revoked_at IS NULL AND u.suspended_at IS NULL
     ORDER BY u.name
    ON CONFLICT DO NOTHING;
    INSERT INTO deliveries (job_id, effect, channel_id)
    SELECT NEW.job_id, NEW.effect, c.id
      FROM chat_channels c JOIN jobs j ON j.id = NEW.job_id
     WHERE (c.owner = j.owner OR c.owner IS NULL) AND c.disabled_at IS NULL
     ORDER BY c.id;
    RETURN NULL;
END $$;
