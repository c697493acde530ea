"""When schedules fire: cron expressions in a time zone, and how close their firings come."""
