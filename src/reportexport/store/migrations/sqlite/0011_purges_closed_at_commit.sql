-- A purge's record opens the delete guards (0009) only while it has no completed_at. A record
-- inserted by hand and committed open would leave them open for every transaction after it.
-- SQLite has no deferred triggers, so records are written only through the job store's own
-- connections, which provide reportexport_connection(); in any other client (the sqlite3
-- shell) an insert fails ("no such function"), and the store's purge completes its record in
-- the transaction that writes it. Records left open before this migration are closed here.

UPDATE job_purges SET completed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
 WHERE completed_at IS NULL;

CREATE TRIGGER job_purges_written_by_the_store BEFORE INSERT ON job_purges
WHEN reportexport_connection() IS NOT 1
BEGIN
    SELECT RAISE(ABORT, 'purge records are written by reportexport db purge');
END;
