-- Named queries of the job store, written once for SQLite and PostgreSQL (see store/dialect.py
-- for the macros in braces). Each name is the name the role method that runs it uses. Status
-- words are fixture states (the gate checks them); the database's own triggers check every
-- change again.

-- set_meta --
-- Record a fact about the schema (version, graph fingerprint, definitions digest).
INSERT INTO reportexport_meta (key, value) VALUES (:key, :value)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- create_job --
-- Insert a queued job, its turn being how many unfinished jobs its owner has (claims go in
-- turns); with an idempotency key already used by this owner, insert nothing.
INSERT INTO jobs (owner, saved_query, source, query_sql, query_hash, parameters, options,
                  rerun_of, idempotency_key, requested_by, schedule_id, status, turn)
VALUES (:owner, :saved_query, :source, :query_sql, :query_hash, :parameters, :options,
        :rerun_of, :idempotency_key, :requested_by, :schedule_id, :status,
        (SELECT count(*) FROM jobs WHERE owner = :owner AND finished_at IS NULL))
ON CONFLICT (owner, idempotency_key) DO NOTHING
RETURNING id;

-- job_by_idempotency_key --
-- The job an earlier request with this key created.
SELECT * FROM jobs WHERE owner = :owner AND idempotency_key = :idempotency_key;

-- get_job --
-- One job by id.
SELECT * FROM jobs WHERE id = :id;

-- job_history --
-- A job's transitions, oldest first.
SELECT * FROM job_history WHERE job_id = :id ORDER BY id;

-- job_side_effects --
-- A job's side-effect rows, in the fixture's order.
SELECT * FROM job_side_effects WHERE job_id = :id ORDER BY id;

-- list_jobs --
-- Newest first, keyset-paginated on id; NULL filters match everything (and so does an empty
-- :saved_queries unless :by_queries is 1: a search by title that matched no saved query).
SELECT * FROM jobs
 WHERE (CAST(:owner AS TEXT) IS NULL OR owner = :owner)
   AND (CAST(:status AS TEXT) IS NULL OR status = :status)
   AND (CAST(:saved_query AS TEXT) IS NULL OR saved_query = :saved_query)
   AND (:by_queries = 0 OR saved_query IN {names(:saved_queries)})
   AND (CAST(:job_id AS BIGINT) IS NULL OR id = :job_id)
   AND (CAST(:before AS BIGINT) IS NULL OR id < :before)
 ORDER BY id DESC
 LIMIT :limit;

-- list_jobs_oldest_first --
-- The same filters, oldest first, keyset-paginated on id from :after.
SELECT * FROM jobs
 WHERE (CAST(:owner AS TEXT) IS NULL OR owner = :owner)
   AND (CAST(:status AS TEXT) IS NULL OR status = :status)
   AND (CAST(:saved_query AS TEXT) IS NULL OR saved_query = :saved_query)
   AND (:by_queries = 0 OR saved_query IN {names(:saved_queries)})
   AND (CAST(:job_id AS BIGINT) IS NULL OR id = :job_id)
   AND (CAST(:after AS BIGINT) IS NULL OR id > :after)
 ORDER BY id
 LIMIT :limit;

-- jobs_by_ids --
-- The jobs of these ids (a live page's change feed: primary-key lookups only).
SELECT * FROM jobs WHERE id IN {ids(:ids)};

-- previous_success --
-- The owner's last succeeded job of the same saved query with the same parameters, before this
-- one (what a live page estimates from).
SELECT * FROM jobs
 WHERE owner = :owner AND saved_query = :saved_query AND parameters = :parameters
   AND status = 'succeeded' AND id < :id
 ORDER BY id DESC
 LIMIT 1;

-- owner_activity --
-- An owner's jobs not yet in a terminal state, and those created since a moment (fairness).
SELECT count(*) FILTER (WHERE NOT s.is_terminal) AS active,
       count(*) FILTER (WHERE j.created_at > :since) AS recent
  FROM jobs j
  JOIN job_states s ON s.status = j.status
 WHERE j.owner = :owner;

-- cancel_job --
-- A person cancels a job that is still in :expected (compare-and-set).
UPDATE jobs
   SET status = 'canceled', change_actor = 'user', change_person = :person,
       change_reason = :reason, lease_expires_at = NULL
 WHERE id = :id AND status = :expected
RETURNING id;

-- set_job_options --
-- A job's options, while it is in one of :statuses (not yet ended: compare-and-set).
UPDATE jobs SET options = :options
 WHERE id = :id AND status IN {names(:statuses)}
RETURNING id;

-- claim_jobs --
-- Move up to :limit queued jobs to running under a new lease token, what a worker needs back.
-- Owners take turns (a job's turn is how many unfinished jobs its owner had when it was made),
-- so one person's backlog cannot hold back another's first export; within a turn, owners with
-- fewer jobs waiting go first, then older jobs. Jobs of the sources in
-- :excluded_sources (paused by this worker) stay queued, and so do those of a source without a
-- free slot: its max_concurrent holds across every worker, and the slot trigger has the last
-- word (a row it finds no slot for stays queued). Only the first :window jobs in turn order are
-- considered, so a claim costs the same with ten or a million jobs waiting. Rows another
-- claim holds are skipped before the limit is counted: concurrent claims take the next jobs in
-- turn order instead of coming back empty.
WITH free_slots AS (
    SELECT c.source, count(s.slot) AS free
      FROM source_caps c
      LEFT JOIN source_slots s ON s.source = c.source AND s.job_id IS NULL
     GROUP BY c.source
), candidates AS (
    SELECT id, source, owner, turn FROM jobs {indexed_by(jobs_claim_order)}
     WHERE status = 'queued'
       AND source NOT IN {names(:excluded_sources)}
       AND source NOT IN (SELECT source FROM free_slots WHERE free = 0)
     ORDER BY turn, id
     LIMIT :window
), waiting AS (
    SELECT owner, count(*) AS jobs FROM candidates GROUP BY owner
), placed AS (
    SELECT c.id, c.turn, w.jobs AS waiting, f.free,
           row_number() OVER (PARTITION BY c.source ORDER BY c.turn, w.jobs, c.id) AS place
      FROM candidates c
      JOIN waiting w ON w.owner = c.owner
      LEFT JOIN free_slots f ON f.source = c.source
), picked AS (
    SELECT j.id FROM jobs j JOIN placed p ON p.id = j.id
     WHERE (p.free IS NULL OR p.place <= p.free) AND j.status = 'queued'
     ORDER BY p.turn, p.waiting, j.id
     LIMIT :limit
     {skip_locked_of(j)}
)
UPDATE jobs
   SET status = 'running', change_actor = 'worker', change_worker = :worker,
       lease_owner = :worker, lease_token = lease_token + 1,
       lease_expires_at = {now_plus(:lease)}, started_at = {now}
 WHERE id IN (SELECT id FROM picked)
RETURNING id, owner, saved_query, source, query_sql, parameters, options, lease_token,
          lease_expires_at;

-- extend_lease --
-- Push a running job's lease expiry out, if the caller still holds the lease. A row another
-- transaction holds is skipped, never waited for (no row back: see lease_held).
UPDATE jobs SET lease_expires_at = {now_plus(:lease)}
 WHERE id IN (SELECT id FROM jobs
               WHERE id = :id AND lease_token = :token AND status = 'running'
               {skip_locked})
RETURNING lease_expires_at;

-- lease_held --
-- A running job still under this lease token, and its expiry: a plain read, which waits on no
-- row lock (whether a skipped renewal or progress write was stale or only locked out).
SELECT lease_expires_at, lease_expires_at > {now} AS valid FROM jobs
 WHERE id = :id AND lease_token = :token AND status = 'running';

-- record_progress --
-- Rows and bytes written so far (and the temp object's key), under a running job's lease; a
-- row another transaction holds is skipped, never waited for.
UPDATE jobs
   SET rows_written = coalesce(:rows, rows_written), bytes_written = :bytes,
       temp_key = coalesce(:temp_key, temp_key), progressed_at = {now}
 WHERE id IN (SELECT id FROM jobs
               WHERE id = :id AND lease_token = :token AND status = 'running'
               {skip_locked})
RETURNING id;

-- finish_job --
-- Move a running job to a terminal status, fenced by its lease token; a published object's
-- rows and bytes become the job's final progress figures (run per outcome).
UPDATE jobs
   SET status = :to_status, change_actor = 'worker', change_worker = :worker,
       change_reason = :reason, error_code = :error_code, error_message = :error_message,
       object_key = :object_key, object_sha256 = :object_sha256, object_bytes = :object_bytes,
       object_rows = :object_rows, columns = :columns, column_types = :column_types,
       dialect_version = :dialect_version, file_name = :file_name,
       -- NULL when :expires is (an object kept until deleted by hand)
       object_expires_at = {now_plus(:expires)},
       rows_written = coalesce(:object_rows, rows_written),
       bytes_written = coalesce(:object_bytes, bytes_written),
       lease_expires_at = NULL
 WHERE id = :id AND lease_token = :token AND status = 'running'
RETURNING id;

-- reap_expired --
-- Fail every running job whose lease expired more than the grace period ago; rows another
-- transaction holds are left for the next pass.
WITH expired AS (
    SELECT id FROM jobs
     WHERE status = 'running' AND lease_expires_at < {now_plus(:grace)}
     {skip_locked}
)
UPDATE jobs
   SET status = 'failed', change_actor = 'worker', change_worker = :worker,
       change_reason = 'lease_expired', error_code = 'lease_expired',
       error_message = 'the worker running this export stopped renewing its lease',
       lease_expires_at = NULL
 WHERE id IN (SELECT id FROM expired)
RETURNING id;

-- source_cap --
-- The cap a source has now, and the process that set it.
SELECT max_concurrent, set_by FROM source_caps WHERE source = :source;

-- set_source_cap --
-- A process publishes its catalog's max_concurrent for a source; the last one to start wins.
INSERT INTO source_caps (source, max_concurrent, set_by, set_at)
VALUES (:source, :max_concurrent, :process, {now})
ON CONFLICT (source) DO UPDATE
   SET max_concurrent = excluded.max_concurrent, set_by = excluded.set_by,
       set_at = excluded.set_at;

-- source_slots_of --
-- A source's slots and the job holding each.
SELECT slot, job_id FROM source_slots WHERE source = :source ORDER BY slot;

-- add_source_slot --
-- One more free slot for a source.
INSERT INTO source_slots (source, slot) VALUES (:source, :slot);

-- remove_free_source_slot --
-- A free slot of a source whose cap was lowered goes (a taken one goes when its job ends).
DELETE FROM source_slots WHERE source = :source AND slot = :slot AND job_id IS NULL;

-- source_caps --
-- Each source's cap, who set it, and how many of its slots are taken (metrics, workers page).
SELECT c.source, c.max_concurrent, c.set_by, c.set_at, count(s.job_id) AS running
  FROM source_caps c
  LEFT JOIN source_slots s ON s.source = c.source
 GROUP BY c.source, c.max_concurrent, c.set_by, c.set_at
 ORDER BY c.source;

-- claim_side_effects --
-- Claim up to :limit due side-effect rows for a runner under a new claim token.
WITH picked AS (
    SELECT job_id, effect FROM job_side_effects
     WHERE completed_at IS NULL AND given_up_at IS NULL AND next_attempt_at <= :now
       AND (claim_expires_at IS NULL OR claim_expires_at <= :now)
     ORDER BY next_attempt_at, id
     LIMIT :limit
     {skip_locked}
)
UPDATE job_side_effects
   SET claimed_by = :runner, claim_token = claim_token + 1, claim_expires_at = :claim_until
 WHERE (job_id, effect) IN (SELECT job_id, effect FROM picked)
RETURNING *;

-- complete_side_effect --
-- The claimed row is done (fenced by its claim token); a note is kept in last_error.
UPDATE job_side_effects
   SET completed_at = :now, attempts = attempts + 1, last_attempt_at = :now,
       last_error = :note, claimed_by = NULL, claim_expires_at = NULL
 WHERE job_id = :job_id AND effect = :effect AND claim_token = :token
   AND completed_at IS NULL
RETURNING job_id;

-- retry_side_effect --
-- The claimed row failed: count the attempt, keep the error, schedule or give up.
UPDATE job_side_effects
   SET attempts = attempts + 1, last_attempt_at = :now, last_error = :last_error,
       next_attempt_at = :next_attempt_at,
       given_up_at = CASE WHEN CAST(:give_up AS BOOLEAN) THEN :now ELSE NULL END,
       claimed_by = NULL, claim_expires_at = NULL
 WHERE job_id = :job_id AND effect = :effect AND claim_token = :token
   AND completed_at IS NULL
RETURNING job_id;

-- redrive_side_effect --
-- An operator re-drives a given-up row: due now, with a fresh allowance of attempts.
UPDATE job_side_effects
   SET given_up_at = NULL, next_attempt_at = :now, redrives = redrives + 1
 WHERE job_id = :job_id AND effect = :effect AND given_up_at IS NOT NULL
RETURNING job_id;

-- given_up_side_effects --
-- Rows that ran out of attempts, most recent first.
SELECT * FROM job_side_effects WHERE given_up_at IS NOT NULL
 ORDER BY given_up_at DESC LIMIT :limit;

-- list_side_effects --
-- Side-effect rows given up (:given_up 1), or neither completed nor given up (0), with their
-- job's owner, saved query and options; keyset-paginated on id past :cursor, newest first or
-- (:oldest 1) oldest first. NULL filters match everything, and so does an empty
-- :saved_queries unless :by_queries is 1 (a search by title that matched no saved query).
SELECT e.*, j.owner AS job_owner, j.saved_query AS job_saved_query, j.options AS job_options
  FROM job_side_effects e
  JOIN jobs j ON j.id = e.job_id
 WHERE ((:given_up = 1 AND e.given_up_at IS NOT NULL)
        OR (:given_up = 0 AND e.completed_at IS NULL AND e.given_up_at IS NULL))
   AND (CAST(:owner AS TEXT) IS NULL OR j.owner = :owner)
   AND (CAST(:job_id AS BIGINT) IS NULL OR e.job_id = :job_id)
   AND (:by_queries = 0 OR j.saved_query IN {names(:saved_queries)})
   AND (CAST(:cursor AS BIGINT) IS NULL
        OR (:oldest = 1 AND e.id > :cursor) OR (:oldest = 0 AND e.id < :cursor))
 ORDER BY CASE WHEN :oldest = 1 THEN e.id END, e.id DESC
 LIMIT :limit;

-- side_effect_counts --
-- How many side-effect rows are given up, and how many are neither completed nor given up.
SELECT count(*) FILTER (WHERE given_up_at IS NOT NULL) AS given_up,
       count(*) FILTER (WHERE completed_at IS NULL AND given_up_at IS NULL) AS waiting
  FROM job_side_effects;

-- add_webhook_endpoint --
-- Register an endpoint for an owner (or the global one, with owner NULL).
INSERT INTO webhook_endpoints (owner, url, secret) VALUES (:owner, :url, :secret)
RETURNING *;

-- list_webhook_endpoints --
-- Endpoints of an owner, or every endpoint when owner is NULL.
SELECT * FROM webhook_endpoints
 WHERE (CAST(:owner AS TEXT) IS NULL OR owner = :owner) ORDER BY id;

-- get_webhook_endpoint --
-- One endpoint by id.
SELECT * FROM webhook_endpoints WHERE id = :id;

-- rotate_webhook_secret --
-- A new secret; the previous one keeps signing until :until.
UPDATE webhook_endpoints
   SET previous_secret = secret, previous_secret_until = :until, secret = :secret
 WHERE id = :id AND disabled_at IS NULL
RETURNING *;

-- disable_webhook_endpoint --
-- Stop sending to an endpoint (a 410 Gone, or an owner's request).
UPDATE webhook_endpoints SET disabled_at = :now, disabled_reason = :reason
 WHERE id = :id AND disabled_at IS NULL
RETURNING id;

-- webhook_endpoints_page --
-- Every endpoint (or one owner's; :global 1: the global one only), newest first,
-- keyset-paginated on id below :before.
SELECT * FROM webhook_endpoints
 WHERE (CAST(:owner AS TEXT) IS NULL OR owner = :owner)
   AND (:global = 0 OR owner IS NULL)
   AND (CAST(:before AS BIGINT) IS NULL OR id < :before)
 ORDER BY id DESC
 LIMIT :limit;

-- webhook_endpoints_for --
-- The enabled endpoints an owner's events go to: theirs and the global one.
SELECT * FROM webhook_endpoints
 WHERE (owner = :owner OR owner IS NULL) AND disabled_at IS NULL ORDER BY id;

-- add_chat_channel --
-- Register a chat channel for an owner (or for everyone, with owner NULL); schedules_only (1):
-- only for the schedules it is added to.
INSERT INTO chat_channels (owner, name, url, schedules_only)
VALUES (:owner, :name, :url, (:schedules_only = 1))
RETURNING *;

-- list_chat_channels --
-- Chat channels of an owner, or every channel when owner is NULL.
SELECT * FROM chat_channels
 WHERE (CAST(:owner AS TEXT) IS NULL OR owner = :owner) ORDER BY id;

-- get_chat_channel --
-- One chat channel by id.
SELECT * FROM chat_channels WHERE id = :id;

-- disable_chat_channel --
-- Stop sending to a chat channel.
UPDATE chat_channels SET disabled_at = :now, disabled_reason = :reason
 WHERE id = :id AND disabled_at IS NULL
RETURNING id;

-- effect_deliveries --
-- The destinations of one announcement, fixed when its job ended, in the order they were fixed.
SELECT * FROM deliveries WHERE job_id = :job_id AND effect = :effect ORDER BY id;

-- get_delivery --
-- One destination of an announcement by id.
SELECT * FROM deliveries WHERE id = :id;

-- job_deliveries --
-- Every destination of every announcement of a job.
SELECT * FROM deliveries WHERE job_id = :job_id ORDER BY id;

-- record_delivery_attempt --
-- One attempt at one destination, by the runner holding the announcement's claim (fenced by
-- its token): delivered, to be tried at :next_attempt_at, or given up.
UPDATE deliveries
   SET attempts = attempts + 1, last_attempt_at = :now, last_status = :last_status,
       last_error = :last_error, next_attempt_at = :next_attempt_at,
       delivered_at = CASE WHEN CAST(:delivered AS BOOLEAN) THEN :now END,
       given_up_at = CASE WHEN CAST(:give_up AS BOOLEAN) THEN :now END
 WHERE id = :id AND delivered_at IS NULL AND given_up_at IS NULL
   AND EXISTS (SELECT 1 FROM job_side_effects e
                WHERE e.job_id = deliveries.job_id AND e.effect = deliveries.effect
                  AND e.claim_token = :token AND e.completed_at IS NULL)
RETURNING id;

-- redrive_delivery --
-- An operator re-drives one given-up destination: due now, with a fresh allowance of attempts.
UPDATE deliveries
   SET given_up_at = NULL, next_attempt_at = :now, redrives = redrives + 1
 WHERE id = :id AND given_up_at IS NOT NULL
RETURNING job_id, effect;

-- reopen_side_effect --
-- The announcement of a re-driven destination is due now (given up or waiting; a completed
-- one stays completed).
UPDATE job_side_effects SET given_up_at = NULL, next_attempt_at = :now
 WHERE job_id = :job_id AND effect = :effect AND completed_at IS NULL
RETURNING job_id;

-- redrive_effect_deliveries --
-- Re-driving an announcement re-drives each of its given-up destinations.
UPDATE deliveries
   SET given_up_at = NULL, next_attempt_at = :now, redrives = redrives + 1
 WHERE job_id = :job_id AND effect = :effect AND given_up_at IS NOT NULL
RETURNING id;

-- given_up_deliveries --
-- Destinations that ran out of attempts or refused for good, most recent first.
SELECT * FROM deliveries WHERE given_up_at IS NOT NULL
 ORDER BY given_up_at DESC, id DESC LIMIT :limit;

-- emails_delivered_since --
-- How many e-mails reached one address (in any case) since :since: the daily cap's count, over
-- the index deliveries_to_address (migration 0023).
SELECT count(*) AS delivered FROM deliveries
 WHERE address IS NOT NULL AND lower(address) = lower(:address)
   AND delivered_at IS NOT NULL AND delivered_at >= :since;

-- add_user --
-- A new person (or service account) with the hash of their token.
INSERT INTO users (name, role, token_hash, kind) VALUES (:name, :role, :token_hash, :kind)
RETURNING *;

-- any_user --
-- Whether the store has anyone at all (a first run makes its first people when not).
SELECT id FROM users LIMIT 1;

-- user_by_token_hash --
-- The person a token belongs to, unless the token or the person was revoked or suspended.
SELECT * FROM users
 WHERE token_hash = :token_hash AND revoked_at IS NULL AND token_revoked_at IS NULL
   AND suspended_at IS NULL;

-- user_by_name --
-- A person by name, revoked or not.
SELECT * FROM users WHERE name = :name;

-- list_users --
-- Everyone, oldest first.
SELECT * FROM users ORDER BY id;

-- revoke_user --
-- Revoke a person's token.
UPDATE users SET revoked_at = :now WHERE name = :name AND revoked_at IS NULL
RETURNING id;

-- replace_token --
-- A person's new token (the old one stops working, a revoked token is replaced), unless the
-- person was revoked.
UPDATE users SET token_hash = :token_hash, token_revoked_at = NULL
 WHERE name = :name AND revoked_at IS NULL
RETURNING *;

-- revoke_token --
-- A person's token stops working (until they are given a new one); the person stays.
UPDATE users SET token_revoked_at = :now
 WHERE name = :name AND revoked_at IS NULL AND token_revoked_at IS NULL
RETURNING id;

-- people_page --
-- People whose name holds :pattern (a LIKE pattern escaped with !), with their live dashboard
-- sessions; keyset-paginated on id past :cursor, oldest first or (:newest 1) newest first.
SELECT u.*,
       (SELECT count(*) FROM dashboard_sessions s
         WHERE s.user_id = u.id AND s.ended_at IS NULL AND s.expires_at > :now) AS live_sessions
  FROM users u
 WHERE (CAST(:pattern AS TEXT) IS NULL OR lower(u.name) LIKE :pattern ESCAPE '!')
   AND (CAST(:cursor AS BIGINT) IS NULL
        OR (:newest = 1 AND u.id < :cursor) OR (:newest = 0 AND u.id > :cursor))
 ORDER BY CASE WHEN :newest = 1 THEN u.id END DESC, u.id
 LIMIT :limit;

-- start_session --
-- A dashboard session of a person, known by the hash of its id, until :expires_at.
INSERT INTO dashboard_sessions (session_hash, user_id, client, expires_at)
VALUES (:session_hash, :user_id, :client, :expires_at)
RETURNING id;

-- session_user --
-- The person a live session belongs to: not ended, not expired, the person not revoked.
SELECT u.* FROM dashboard_sessions s
  JOIN users u ON u.id = s.user_id
 WHERE s.session_hash = :session_hash AND s.ended_at IS NULL AND s.expires_at > :now
   AND u.revoked_at IS NULL AND u.suspended_at IS NULL;

-- end_session --
-- Signing out ends a session for good.
UPDATE dashboard_sessions SET ended_at = :now
 WHERE session_hash = :session_hash AND ended_at IS NULL
RETURNING id;

-- forget_sessions --
-- Drop sessions that expired or ended before a moment.
DELETE FROM dashboard_sessions WHERE expires_at < :before OR ended_at < :before;

-- end_sessions_of_user --
-- Every live dashboard session of a person ends (their token or they were revoked).
UPDATE dashboard_sessions SET ended_at = :now
 WHERE user_id = :user_id AND ended_at IS NULL
RETURNING id;

-- record_operator_action --
-- One operator action, in the action's own transaction; the table refuses UPDATE and DELETE.
INSERT INTO operator_audit (person, action, object_kind, object_id, detail)
VALUES (:person, :action, :object_kind, :object_id, :detail)
RETURNING id;

-- operator_audit_page --
-- The audit newest first, keyset-paginated on id below :before; NULL filters match all.
SELECT * FROM operator_audit
 WHERE (CAST(:person AS TEXT) IS NULL OR person = :person)
   AND (CAST(:action AS TEXT) IS NULL OR action = :action)
   AND (CAST(:object_kind AS TEXT) IS NULL OR object_kind = :object_kind)
   AND (CAST(:object_id AS TEXT) IS NULL OR object_id = :object_id)
   AND (CAST(:before AS BIGINT) IS NULL OR id < :before)
 ORDER BY id DESC
 LIMIT :limit;

-- record_download --
-- A person asked for a job's download link.
INSERT INTO job_downloads (job_id, person) VALUES (:job_id, :person)
RETURNING id;

-- job_downloads --
-- A job's downloads, oldest first.
SELECT person, at FROM job_downloads WHERE job_id = :job_id ORDER BY id;

-- jobs_by_status --
-- How many jobs are in each status (metrics).
SELECT status, count(*) AS n FROM jobs GROUP BY status;

-- transitions_by_edge --
-- How many times each edge was taken, by actor (metrics).
SELECT from_status, to_status, actor, count(*) AS n
  FROM job_history GROUP BY from_status, to_status, actor;

-- export_totals --
-- Succeeded exports: how many, their rows, bytes and running seconds (metrics).
SELECT count(*) AS n, coalesce(sum(object_rows), 0) AS rows_total,
       coalesce(sum(object_bytes), 0) AS bytes_total,
       coalesce(sum({seconds_between(finished_at, started_at)}), 0) AS seconds_total
  FROM jobs WHERE status = 'succeeded';

-- side_effect_totals --
-- Attempts and given-up rows per side effect (metrics).
SELECT effect, coalesce(sum(attempts), 0) AS attempts, count(given_up_at) AS given_up
  FROM job_side_effects GROUP BY effect;

-- waiting_owners --
-- Owners with queued jobs, and the longest one owner's queue (metrics: is anyone hogging).
SELECT count(*) AS owners, coalesce(max(n), 0) AS longest
  FROM (SELECT owner, count(*) AS n FROM jobs WHERE status = 'queued' GROUP BY owner) AS q;

-- oldest_queued --
-- Seconds the oldest queued job has waited, NULL when none is queued (metrics: queue age).
SELECT {seconds_between({now}, min(created_at))} AS seconds
  FROM jobs WHERE status = 'queued';

-- beat --
-- A process's heartbeat: fixed fields only, one row per process, replaced at each beat.
INSERT INTO heartbeats (process, host, pid, kind, started_at, seen_at, active_jobs, last_claim_at,
                        last_poll_at, claims_paused_until, pause_reason, paused_sources)
VALUES (:process, :host, :pid, :kind, :started_at, {now}, :active_jobs, :last_claim_at,
        :last_poll_at, :claims_paused_until, :pause_reason, :paused_sources)
ON CONFLICT (process) DO UPDATE
   SET seen_at = excluded.seen_at, active_jobs = excluded.active_jobs,
       last_claim_at = excluded.last_claim_at, last_poll_at = excluded.last_poll_at,
       claims_paused_until = excluded.claims_paused_until,
       pause_reason = excluded.pause_reason, paused_sources = excluded.paused_sources,
       stopped_at = NULL;

-- stop_heartbeat --
-- A process that stopped cleanly records when on its row: it is stopped, not silent.
UPDATE heartbeats SET stopped_at = {now}, active_jobs = '[]' WHERE process = :process;

-- heartbeats --
-- Every process's last heartbeat, most recently seen first, with its age in seconds.
SELECT *, {seconds_between({now}, seen_at)} AS age_seconds
  FROM heartbeats ORDER BY seen_at DESC;

-- forget_heartbeats --
-- Drop the rows of processes not seen since a moment (they stopped long ago).
DELETE FROM heartbeats WHERE seen_at < :before;

-- purgeable --
-- How many terminal jobs finished before :before (what a purge would remove).
SELECT count(*) AS jobs FROM jobs WHERE finished_at < :before;

-- begin_purge --
-- Record a purge before it deletes anything: while its row has no completed_at, the delete
-- guards let this transaction remove terminal jobs finished before :before, and nothing else.
INSERT INTO job_purges (before, requested_by, os_user) VALUES (:before, :person, :os_user)
RETURNING *;

-- purge_deliveries --
-- Webhook deliveries of the jobs a purge removes.
DELETE FROM webhook_deliveries
 WHERE job_id IN (SELECT id FROM jobs WHERE finished_at < :before);

-- purge_destination_deliveries --
-- Delivery records of the jobs a purge removes.
DELETE FROM deliveries WHERE job_id IN (SELECT id FROM jobs WHERE finished_at < :before);

-- purge_downloads --
-- Download records of the jobs a purge removes.
DELETE FROM job_downloads WHERE job_id IN (SELECT id FROM jobs WHERE finished_at < :before);

-- purge_history --
-- History of the jobs a purge removes.
DELETE FROM job_history WHERE job_id IN (SELECT id FROM jobs WHERE finished_at < :before);

-- purge_side_effects --
-- Side-effect rows of the jobs a purge removes.
DELETE FROM job_side_effects WHERE job_id IN (SELECT id FROM jobs WHERE finished_at < :before);

-- purge_firings --
-- Schedule firings that made the jobs a purge removes.
DELETE FROM schedule_firings WHERE job_id IN (SELECT id FROM jobs WHERE finished_at < :before);

-- purge_unlink_reruns --
-- A kept job that reran a removed one keeps no link to it.
UPDATE jobs SET rerun_of = NULL
 WHERE rerun_of IN (SELECT id FROM jobs WHERE finished_at < :before);

-- purge_jobs --
-- The terminal jobs finished before :before (finished_at is set exactly when terminal).
DELETE FROM jobs WHERE finished_at < :before;

-- complete_purge --
-- What a purge removed, recorded on its row; the row is kept for good.
UPDATE job_purges
   SET completed_at = {now}, jobs = :jobs, history_rows = :history_rows,
       side_effect_rows = :side_effect_rows, deliveries = :deliveries,
       downloads = :downloads, reruns_unlinked = :reruns_unlinked,
       schedule_firings = :schedule_firings
 WHERE id = :id
RETURNING *;

-- purges --
-- Every purge, newest first.
SELECT * FROM job_purges ORDER BY id DESC;

-- create_schedule --
-- A new schedule; its first firing time is computed by the caller.
INSERT INTO schedules (owner, saved_query, parameters, cron, time_zone, ends_at, next_fire_at,
                       created_by, idempotency_key)
VALUES (:owner, :saved_query, :parameters, :cron, :time_zone, :ends_at, :next_fire_at,
        :created_by, :idempotency_key)
RETURNING *;

-- schedule_by_idempotency_key --
-- The schedule an earlier request of this owner with this key created, deleted or not.
SELECT * FROM schedules WHERE owner = :owner AND idempotency_key = :idempotency_key;

-- schedules_of_owner --
-- How many schedules an owner has (the per-person limit).
SELECT count(*) AS n FROM schedules WHERE owner = :owner AND deleted_at IS NULL;

-- get_schedule --
-- One schedule by id, unless deleted.
SELECT * FROM schedules WHERE id = :id AND deleted_at IS NULL;

-- list_schedules --
-- An owner's schedules, or everyone's when owner is NULL; newest first, keyset-paginated on
-- id below :before.
SELECT * FROM schedules
 WHERE deleted_at IS NULL AND (CAST(:owner AS TEXT) IS NULL OR owner = :owner)
   AND (CAST(:before AS BIGINT) IS NULL OR id < :before)
 ORDER BY id DESC LIMIT :limit;

-- pause_schedule --
-- Stop firing until resumed, with the reason shown on the schedule.
UPDATE schedules SET paused_at = :now, pause_reason = :reason
 WHERE id = :id AND deleted_at IS NULL AND paused_at IS NULL
RETURNING *;

-- resume_schedule --
-- Fire again, from the next time after now (paused times are not caught up).
UPDATE schedules SET paused_at = NULL, pause_reason = NULL, next_fire_at = :next_fire_at
 WHERE id = :id AND deleted_at IS NULL AND paused_at IS NOT NULL
RETURNING *;

-- delete_schedule --
-- A schedule is removed from view and never fires again; its firings and jobs stay.
UPDATE schedules SET deleted_at = :now, next_fire_at = NULL
 WHERE id = :id AND deleted_at IS NULL
RETURNING id;

-- schedule_recipients --
-- The people a schedule's announcements go to besides its owner, by name.
SELECT * FROM schedule_recipients WHERE schedule_id = :schedule_id ORDER BY person;

-- add_schedule_recipient --
-- A recipient added; nothing when they are one already.
INSERT INTO schedule_recipients (schedule_id, person, added_by)
VALUES (:schedule_id, :person, :added_by)
ON CONFLICT (schedule_id, person) DO NOTHING
RETURNING *;

-- schedule_recipient --
-- One recipient of a schedule, if they are one and it is not deleted.
SELECT r.* FROM schedule_recipients r JOIN schedules s ON s.id = r.schedule_id
 WHERE r.schedule_id = :schedule_id AND r.person = :person AND s.deleted_at IS NULL;

-- remove_schedule_recipient --
-- A recipient removed: the announcements of jobs that end later no longer go to them.
DELETE FROM schedule_recipients WHERE schedule_id = :schedule_id AND person = :person
RETURNING person;

-- schedule_channels --
-- The chat channels a schedule's announcements go to besides its owner's and the global ones.
SELECT * FROM schedule_channels WHERE schedule_id = :schedule_id ORDER BY channel_id;

-- add_schedule_channel --
-- A chat channel added to a schedule; nothing when it is one of its channels already.
INSERT INTO schedule_channels (schedule_id, channel_id, added_by)
VALUES (:schedule_id, :channel_id, :added_by)
ON CONFLICT (schedule_id, channel_id) DO NOTHING
RETURNING *;

-- schedule_channel --
-- One chat channel of a schedule, if it is one and the schedule is not deleted.
SELECT sc.* FROM schedule_channels sc JOIN schedules s ON s.id = sc.schedule_id
 WHERE sc.schedule_id = :schedule_id AND sc.channel_id = :channel_id AND s.deleted_at IS NULL;

-- remove_schedule_channel --
-- A chat channel taken off a schedule: jobs that end later are not announced there.
DELETE FROM schedule_channels WHERE schedule_id = :schedule_id AND channel_id = :channel_id
RETURNING channel_id;

-- schedule_addresses --
-- The outside addresses a schedule's announcements go to by e-mail.
SELECT * FROM schedule_addresses WHERE schedule_id = :schedule_id ORDER BY address;

-- add_schedule_address --
-- An outside address added to a schedule; nothing when it is one of its addresses already.
INSERT INTO schedule_addresses (schedule_id, address, attach_max_bytes, attach_gzip, added_by)
VALUES (:schedule_id, :address, :attach_max_bytes, (:attach_gzip = 1), :added_by)
ON CONFLICT (schedule_id, address) DO NOTHING
RETURNING *;

-- set_schedule_address --
-- What an outside address of a schedule gets attached, set again.
UPDATE schedule_addresses
   SET attach_max_bytes = :attach_max_bytes, attach_gzip = (:attach_gzip = 1)
 WHERE schedule_id = :schedule_id AND address = :address
RETURNING *;

-- person_at_address --
-- A person of this service (not revoked) whose e-mail address this is, in any case.
SELECT name FROM users WHERE lower(email) = :address AND revoked_at IS NULL ORDER BY name LIMIT 1;

-- schedule_address --
-- One outside address of a schedule, if it is one and the schedule is not deleted.
SELECT a.* FROM schedule_addresses a JOIN schedules s ON s.id = a.schedule_id
 WHERE a.schedule_id = :schedule_id AND a.address = :address AND s.deleted_at IS NULL;

-- remove_schedule_address --
-- An outside address taken off a schedule: jobs that end later are not announced there.
DELETE FROM schedule_addresses WHERE schedule_id = :schedule_id AND address = :address
RETURNING address;

-- due_schedules --
-- Schedules whose next firing time has come.
SELECT * FROM schedules
 WHERE next_fire_at <= :now AND paused_at IS NULL AND deleted_at IS NULL
 ORDER BY next_fire_at LIMIT :limit;

-- advance_schedule --
-- Move a due schedule to its next time, if no other process has (compare-and-set): the
-- process that moves it is the one that fires it.
UPDATE schedules SET next_fire_at = :next_fire_at
 WHERE id = :id AND next_fire_at = :expected AND paused_at IS NULL AND deleted_at IS NULL
RETURNING id;

-- record_firing --
-- A firing, unique by (schedule, scheduled time); nothing when it exists already. fired_at is
-- the scheduler's clock, which also decides when an unsettled firing is taken up again.
INSERT INTO schedule_firings (schedule_id, scheduled_for, fired_at, fired_by, manual, missed)
VALUES (:schedule_id, :scheduled_for, :fired_at, :fired_by, :manual, :missed)
ON CONFLICT (schedule_id, scheduled_for) DO NOTHING
RETURNING *;

-- settle_firing_job --
-- The job a firing made, and the content hash of the query it ran.
UPDATE schedule_firings SET job_id = :job_id, query_hash = :query_hash
 WHERE schedule_id = :schedule_id AND scheduled_for = :scheduled_for
   AND job_id IS NULL AND refusal_code IS NULL
RETURNING schedule_id;

-- settle_firing_refusal --
-- Why a firing made no job (the owner's cap or rate, parameters that no longer validate).
UPDATE schedule_firings SET refusal_code = :refusal_code, refusal = :refusal
 WHERE schedule_id = :schedule_id AND scheduled_for = :scheduled_for
   AND job_id IS NULL AND refusal_code IS NULL
RETURNING schedule_id;

-- unsettled_firings --
-- Firings whose process stopped between recording them and making their job.
SELECT * FROM schedule_firings
 WHERE job_id IS NULL AND refusal_code IS NULL AND fired_at < :before
 ORDER BY fired_at LIMIT :limit;

-- firings_of_schedule --
-- A schedule's most recent firings.
SELECT * FROM schedule_firings WHERE schedule_id = :schedule_id
 ORDER BY scheduled_for DESC LIMIT :limit;

-- firing_of_job --
-- The firing that made a job, if a schedule made it.
SELECT * FROM schedule_firings WHERE job_id = :job_id;

-- schedule_totals --
-- Schedules firing, paused and ended; firings, their jobs and refusals; skipped times
-- (metrics: counts, no state label).
SELECT (SELECT count(*) FROM schedules
         WHERE deleted_at IS NULL AND paused_at IS NULL AND next_fire_at IS NOT NULL) AS firing,
       (SELECT count(*) FROM schedules
         WHERE deleted_at IS NULL AND paused_at IS NOT NULL) AS paused,
       (SELECT count(*) FROM schedules
         WHERE deleted_at IS NULL AND paused_at IS NULL AND next_fire_at IS NULL) AS ended,
       (SELECT count(*) FROM schedule_firings) AS firings,
       (SELECT count(job_id) FROM schedule_firings) AS firing_jobs,
       (SELECT count(refusal_code) FROM schedule_firings) AS firing_refusals,
       (SELECT coalesce(sum(missed), 0) FROM schedule_firings) AS missed;

-- create_group --
-- A new group (the name is unique; `everyone` is no group's name).
INSERT INTO groups (name, description, created_by) VALUES (:name, :description, :created_by)
ON CONFLICT (name) DO NOTHING
RETURNING *;

-- delete_group --
-- A group goes, and its memberships with it.
DELETE FROM groups WHERE name = :name
RETURNING id;

-- members_of_group --
-- The names of a group's members, each once, whatever gave them the membership.
SELECT DISTINCT u.name FROM group_members m JOIN users u ON u.id = m.user_id
 WHERE m.group_id = (SELECT id FROM groups WHERE name = :name)
 ORDER BY u.name;

-- list_groups --
-- Every group with its number of members, by name.
SELECT g.*, (SELECT count(DISTINCT m.user_id) FROM group_members m WHERE m.group_id = g.id)
            AS member_count
  FROM groups g
 ORDER BY g.name;

-- add_member --
-- A person joins a group, as the origin says (an operator, or the identity provider); once.
INSERT INTO group_members (group_id, user_id, origin, added_by)
SELECT g.id, u.id, :origin, :added_by FROM groups g, users u
 WHERE g.name = :group_name AND u.name = :user_name
ON CONFLICT (group_id, user_id, origin) DO NOTHING
RETURNING group_id;

-- remove_member --
-- A person leaves a group, whatever gave them the membership.
DELETE FROM group_members
 WHERE group_id = (SELECT id FROM groups WHERE name = :group_name)
   AND user_id = (SELECT id FROM users WHERE name = :user_name)
RETURNING group_id;

-- groups_of_user --
-- The groups a person belongs to, with what gave them each membership.
SELECT g.name, m.origin FROM group_members m
  JOIN groups g ON g.id = m.group_id
  JOIN users u ON u.id = m.user_id
 WHERE u.name = :name
 ORDER BY g.name, m.origin;

-- set_attribute --
-- A person's attribute takes a value (the last one set wins, whoever set it).
INSERT INTO person_attributes (user_id, name, value, origin, set_by)
SELECT id, :attribute, :value, :origin, :set_by FROM users WHERE name = :user_name
ON CONFLICT (user_id, name) DO UPDATE
   SET value = excluded.value, origin = excluded.origin, set_by = excluded.set_by,
       set_at = excluded.set_at
RETURNING user_id;

-- unset_attribute --
-- A person's attribute goes.
DELETE FROM person_attributes
 WHERE user_id = (SELECT id FROM users WHERE name = :user_name) AND name = :attribute
RETURNING user_id;

-- attributes_of_user --
-- A person's attributes by name.
SELECT a.name, a.value, a.origin FROM person_attributes a JOIN users u ON u.id = a.user_id
 WHERE u.name = :name
 ORDER BY a.name;

-- known_attributes --
-- The names of the attributes somebody has.
SELECT DISTINCT name FROM person_attributes ORDER BY name;

-- user_by_subject --
-- The person the identity provider knows by this subject, revoked or not.
SELECT * FROM users WHERE provider_subject = :subject;

-- add_provider_user --
-- A person made at their first company sign-in (their token is never shown: an operator may
-- give them one).
INSERT INTO users (name, role, token_hash, provider_subject, email)
VALUES (:name, 'user', :token_hash, :subject, :email)
RETURNING *;

-- set_user_email --
-- The e-mail address the identity provider gives now.
UPDATE users SET email = :email WHERE id = :id
RETURNING id;

-- set_email_of_user --
-- An operator sets (or, NULL, removes) an active person's e-mail address.
UPDATE users SET email = :email WHERE name = :name AND revoked_at IS NULL
RETURNING id;

-- set_notify_always_of_user --
-- A person turns on (1) or off (0) an e-mail when any of their exports ends.
UPDATE users SET notify_always = (:enabled = 1) WHERE name = :name AND revoked_at IS NULL
RETURNING id;

-- provider_groups_of_user --
-- The groups the identity provider gave a person.
SELECT g.name FROM group_members m JOIN groups g ON g.id = m.group_id
 WHERE m.user_id = :user_id AND m.origin = 'provider'
 ORDER BY g.name;

-- remove_provider_member --
-- The identity provider no longer says the person is in the group (an operator's membership
-- of the same group stays).
DELETE FROM group_members
 WHERE group_id = (SELECT id FROM groups WHERE name = :group_name)
   AND user_id = :user_id AND origin = 'provider'
RETURNING group_id;

-- unset_provider_attribute --
-- An attribute the identity provider gave and no longer gives.
DELETE FROM person_attributes
 WHERE user_id = :user_id AND name = :attribute AND origin = 'provider'
RETURNING user_id;

-- start_provider_session --
-- A dashboard session started through the identity provider, with its refresh token.
INSERT INTO dashboard_sessions
       (session_hash, user_id, client, expires_at, provider_refresh, provider_checked_at)
VALUES (:session_hash, :user_id, :client, :expires_at, :refresh, :now)
RETURNING id;

-- session_provider --
-- A live session's refresh token and when the identity provider was last asked (no row for a
-- session started with a token).
SELECT provider_refresh, provider_checked_at FROM dashboard_sessions
 WHERE session_hash = :session_hash AND provider_checked_at IS NOT NULL AND ended_at IS NULL;

-- record_provider_check --
-- The identity provider was asked again and still lets the person in.
UPDATE dashboard_sessions SET provider_refresh = :refresh, provider_checked_at = :now
 WHERE session_hash = :session_hash AND ended_at IS NULL
RETURNING id;

-- subject_of_user --
-- The identity provider's subject of a person.
SELECT provider_subject FROM users WHERE id = :id;

-- suspend_user --
-- A person is suspended: their token and sessions stop working until they are resumed.
UPDATE users SET suspended_at = :now, suspended_by = :by, suspend_reason = :reason
 WHERE name = :name AND revoked_at IS NULL AND suspended_at IS NULL
RETURNING id;

-- resume_user --
-- A suspended person's token works again (their ended sessions stay ended).
UPDATE users SET suspended_at = NULL, suspended_by = NULL, suspend_reason = NULL
 WHERE name = :name AND suspended_at IS NOT NULL
RETURNING id;
