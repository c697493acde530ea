-- One delivery record per destination of an announcement (issue 23). The recipients of
-- emit_done_webhook and emit_failed_webhook are fixed when their side-effect row is written,
-- in the transaction of the terminal transition (the trigger below): the owner's enabled
-- webhook endpoints and the global one, and the owner's e-mail address when the job asked to
-- notify its owner (users.email: set by an operator or given by the identity provider). Each
-- record has its own attempts, next attempt, last problem, delivered and given-up moments and
-- re-drives: one refused address is given up alone. Numbers and timestamps only, no status
-- word. webhook_deliveries is kept as it was and no longer written.

CREATE TABLE deliveries (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id          bigint NOT NULL,
    effect          text NOT NULL,
    endpoint_id     bigint REFERENCES webhook_endpoints (id),
    address         text,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_attempt_at timestamptz,
    last_status     integer,
    last_error      text,
    delivered_at    timestamptz,
    given_up_at     timestamptz,
    redrives        integer NOT NULL DEFAULT 0 CHECK (redrives >= 0),
    FOREIGN KEY (job_id, effect) REFERENCES job_side_effects (job_id, effect),
    CHECK ((endpoint_id IS NULL) <> (address IS NULL)),
    CHECK (delivered_at IS NULL OR given_up_at IS NULL),
    UNIQUE (job_id, effect, endpoint_id),
    UNIQUE (job_id, effect, address)
);
CREATE INDEX deliveries_given_up ON deliveries (given_up_at) WHERE given_up_at IS NOT NULL;

-- SECURITY DEFINER: a service role needs no INSERT on deliveries to end a job.
CREATE FUNCTION deliveries_recipients_fixed() RETURNS trigger
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
    RETURN NULL;
END $$;

CREATE TRIGGER job_side_effects_recipients_fixed
    AFTER INSERT ON job_side_effects FOR EACH ROW
    WHEN (NEW.effect IN ('emit_done_webhook', 'emit_failed_webhook'))
    EXECUTE FUNCTION deliveries_recipients_fixed();
ALTER TABLE job_side_effects ENABLE ALWAYS TRIGGER job_side_effects_recipients_fixed;

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
