-- Outside addresses of a schedule (issue 23): an operator adds an e-mail address that is no
-- person of this service (a partner, a shared mailbox) to a schedule; each firing's
-- announcement goes there with a download link signed for the link's lifetime, or the file
-- attached when it is at most `attach_max_bytes` (gzip-compressed first with `attach_gzip`;
-- NULL: never attached). A delivery now names the person whose address it goes to whenever
-- there is one: the deliveries fixed before migration 0024 to an owner's address get that
-- owner, so a delivery to an address with no person is one to an outside address. The trigger
-- (as 0025 left it) also fixes one delivery per outside address of the schedule that made the
-- job (not deleted); an address fixed already (a person's, in any case) is not fixed twice.

CREATE TABLE schedule_addresses (
    schedule_id      INTEGER NOT NULL REFERENCES schedules (id),
    address          TEXT NOT NULL CHECK (address = lower(address)),
    attach_max_bytes INTEGER CHECK (attach_max_bytes > 0),
    attach_gzip      INTEGER NOT NULL DEFAULT 0 CHECK (attach_gzip IN (0, 1)),
    added_by         TEXT NOT NULL,
    added_at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (schedule_id, address)
) STRICT;

UPDATE deliveries SET person = (SELECT j.owner FROM jobs j WHERE j.id = deliveries.job_id)
 WHERE address IS NOT NULL AND person IS NULL;

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
    INSERT OR IGNORE INTO deliveries (job_id, effect, address)
    SELECT NEW.job_id, NEW.effect, a.address
      FROM jobs j
      JOIN schedules s ON s.id = j.schedule_id AND s.deleted_at IS NULL
      JOIN schedule_addresses a ON a.schedule_id = s.id
     WHERE j.id = NEW.job_id
       AND NOT EXISTS (SELECT 1 FROM deliveries d
                        WHERE d.job_id = NEW.job_id AND d.effect = NEW.effect
                          AND lower(d.address) = a.address)
     ORDER BY a.address;
END;
