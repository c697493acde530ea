-- Chat channels as a schedule's recipients (issue 23). A channel registered `schedules_only`
-- takes no announcement of its owner's (or, owner NULL, everyone's) exports, only those of the
-- schedules it is added to; any enabled channel may be added to a schedule (who may add which
-- is the service's rule: operators any, a schedule's owner those registered for them). The
-- trigger of 0020 (as 0024 left it) now fixes, for a job made by a schedule not deleted, one
-- delivery per enabled channel of that schedule; a channel fixed already (its owner's or a
-- global one) is not fixed twice.

ALTER TABLE chat_channels ADD COLUMN schedules_only boolean NOT NULL DEFAULT false;

CREATE TABLE schedule_channels (
    schedule_id bigint NOT NULL REFERENCES schedules (id),
    channel_id  bigint NOT NULL REFERENCES chat_channels (id),
    added_by    text NOT NULL,
    added_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (schedule_id, channel_id)
);

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
       AND NOT c.schedules_only
     ORDER BY c.id;
    INSERT INTO deliveries (job_id, effect, channel_id)
    SELECT NEW.job_id, NEW.effect, c.id
      FROM jobs j
      JOIN schedules s ON s.id = j.schedule_id AND s.deleted_at IS NULL
      JOIN schedule_channels sc ON sc.schedule_id = s.id
      JOIN chat_channels c ON c.id = sc.channel_id
     WHERE j.id = NEW.job_id AND c.disabled_at IS NULL
     ORDER BY c.id
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
