-- Per-recipient daily caps (issue 23): before each e-mail the runner counts what was delivered
-- to the same address (in any case) over the last 24 hours. This index answers that count
-- without reading the other deliveries, however many webhooks and chat messages there are.

CREATE INDEX deliveries_to_address ON deliveries (lower(address), delivered_at)
    WHERE address IS NOT NULL AND delivered_at IS NOT NULL;
