-- Chat channels (issue 23): a channel reached through its incoming-webhook URL (Slack's message
-- format, which Mattermost and Rocket.Chat take too), registered by an operator for one person's
-- announcements or for everyone's (owner NULL). A channel is one more destination of
-- emit_done_webhook and emit_failed_webhook: the trigger of 0020 now also fixes a delivery
-- record for each enabled channel of the job's owner and each global one, in the transaction of
-- the terminal transition, with the same attempts, backoff, giving up and re-drives. The URL
-- carries the channel's credential: it is never listed back.

CREATE TABLE chat_channels (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner           text,          -- NULL: every person's announcements
    name            text NOT NULL, -- how operators call it (#exports)
    url             text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    disabled_at     timestamptz,
    disabled_reason text
);
CREATE INDEX chat_channels_of_owner ON chat_channels (owner) WHERE disabled_at IS NULL;

ALTER TABLE deliveries ADD COLUMN channel_id bigint REFERENCES chat_channels (id);
ALTER TABLE deliveries DROP CONSTRAINT deliveries_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_one_destination
    CHECK (num_nonnulls(endpoint_id, address, channel_id) = 1);
ALTER TABLE deliveries ADD CONSTRAINT deliveries_job_id_effect_channel_id_key
    UNIQUE (job_id, effect, channel_id);

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
       AND j.options -> 'notify' = 'true'::jsonb;
    INSERT INTO deliveries (job_id, effect, channel_id)
    SELECT NEW.job_id, NEW.effect, c.id
      FROM chat_channels c JOIN jobs j ON j.id = NEW.job_id
     WHERE (c.owner = j.owner OR c.owner IS NULL) AND c.disabled_at IS NULL
     ORDER BY c.id;
    RETURN NULL;
END $$;
