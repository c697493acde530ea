-- Named queries of the PostgreSQL job store. Same names as sql/sqlite/queries.sql and as the
-- store methods that run them. Status words are fixture states (the gate checks them); the
-- database's own trigger checks every change again.

-- set_meta --
-- Record a fact about the schema (version, graph fingerprint), positional (key, value).
INSERT INTO reportexport_meta (key, value) VALUES (%s, %s)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- create_job --
-- Insert a queued job; with an idempotency key already used by this owner, insert nothing.
INSERT INTO jobs (owner, saved_query, source, query_sql, query_hash, parameters, options,
                  rerun_of, idempotency_key, requested_by, status)
VALUES (%(owner)s, %(saved_query)s, %(source)s, %(query_sql)s, %(query_hash)s,
        %(parameters)s, %(options)s, %(rerun_of)s, %(idempotency_key)s, %(requested_by)s,
        %(status)s)
ON CONFLICT (owner, idempotency_key) DO NOTHING
RETURNING id;

-- job_by_idempotency_key --
-- The job an earlier request with this key created.
SELECT * FROM jobs WHERE owner = %(owner)s AND idempotency_key = %(idempotency_key)s;

-- get_job --
-- One job by id.
SELECT * FROM jobs WHERE id = %(id)s;

-- job_history --
-- A job's transitions, oldest first.
SELECT * FROM job_history WHERE job_id = %(id)s ORDER BY id;

-- job_side_effects --
-- A job's side-effect rows, in the fixture's order.
SELECT * FROM job_side_effects WHERE job_id = %(id)s ORDER BY id;

-- list_jobs --
-- Newest first, keyset-paginated on id; NULL filters match everything.
SELECT * FROM jobs
 WHERE (%(owner)s::text IS NULL OR owner = %(owner)s)
   AND (%(status)s::text IS NULL OR status = %(status)s)
   AND (%(saved_query)s::text IS NULL OR saved_query = %(saved_query)s)
   AND (%(before)s::bigint IS NULL OR id < %(before)s)
 ORDER BY id DESC
 LIMIT %(limit)s;

-- claim_jobs --
-- Move up to %(limit)s queued jobs, oldest first, to running under a new lease token; jobs of
-- the sources in %(excluded_sources)s (sources the worker has paused) stay queued.
-- The CTE locks first: an IN (subquery) can be re-run by the planner and claim more.
WITH picked AS (
    SELECT id FROM jobs
     WHERE status = 'queued' AND source <> ALL(%(excluded_sources)s::text[])
     ORDER BY id
     LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)
UPDATE jobs j
   SET status = 'running', change_actor = 'worker', change_worker = %(worker)s,
       lease_owner = %(worker)s, lease_token = j.lease_token + 1,
       lease_expires_at = clock_timestamp() + make_interval(secs => %(lease)s),
       started_at = clock_timestamp()
  FROM picked
 WHERE j.id = picked.id
RETURNING j.*;

-- extend_lease --
-- Push a running job's lease expiry out, if the caller still holds the lease.
UPDATE jobs SET lease_expires_at = clock_timestamp() + make_interval(secs => %(lease)s)
 WHERE id = %(id)s AND lease_token = %(token)s AND status = 'running'
RETURNING lease_expires_at;

-- record_progress --
-- Rows and bytes written so far (and the temp object's key), under a running job's lease.
UPDATE jobs
   SET rows_written = coalesce(%(rows)s, rows_written), bytes_written = %(bytes)s,
       temp_key = coalesce(%(temp_key)s, temp_key),
       progressed_at = clock_timestamp()
 WHERE id = %(id)s AND lease_token = %(token)s AND status = 'running'
RETURNING id;

-- finish_job --
-- Move a running job to a terminal status, fenced by its lease token; a published object's
-- rows and bytes become the job's final progress figures (pipelined per outcome).
UPDATE jobs
   SET status = %(to_status)s, change_actor = 'worker', change_worker = %(worker)s,
       change_reason = %(reason)s, error_code = %(error_code)s,
       error_message = %(error_message)s, object_key = %(object_key)s,
       object_sha256 = %(object_sha256)s, object_bytes = %(object_bytes)s,
       object_rows = %(object_rows)s, columns = %(columns)s::jsonb,
       column_types = %(column_types)s::jsonb, dialect_version = %(dialect_version)s,
       file_name = %(file_name)s,
       object_expires_at = clock_timestamp() + make_interval(secs => %(expires)s),
       rows_written = coalesce(%(object_rows)s, rows_written),
       bytes_written = coalesce(%(object_bytes)s, bytes_written),
       lease_expires_at = NULL
 WHERE id = %(id)s AND lease_token = %(token)s AND status = 'running'
RETURNING id;

-- cancel_job --
-- A person cancels a job that is still in %(expected)s (compare-and-set).
UPDATE jobs
   SET status = 'canceled', change_actor = 'user', change_person = %(person)s,
       change_reason = %(reason)s, lease_expires_at = NULL
 WHERE id = %(id)s AND status = %(expected)s
RETURNING id;

-- reap_expired --
-- Fail every running job whose lease expired more than the grace period ago (the grace
-- parameter is negative: that many seconds before now). A row another transaction holds locked
-- is skipped, not waited for: the reaper must never stall behind a paused process.
WITH expired AS (
    SELECT id FROM jobs
     WHERE status = 'running'
       AND lease_expires_at < clock_timestamp() + make_interval(secs => %(grace)s)
     FOR UPDATE SKIP LOCKED
)
UPDATE jobs j
   SET status = 'failed', change_actor = 'worker', change_worker = %(worker)s,
       change_reason = 'lease_expired', error_code = 'lease_expired',
       error_message = 'the worker running this export stopped renewing its lease',
       lease_expires_at = NULL
  FROM expired
 WHERE j.id = expired.id
RETURNING j.id;

-- claim_side_effects --
-- Claim up to %(limit)s due side-effect rows for a runner under a new claim token.
WITH picked AS (
    SELECT job_id, effect FROM job_side_effects
     WHERE completed_at IS NULL AND given_up_at IS NULL AND next_attempt_at <= %(now)s
       AND (claim_expires_at IS NULL OR claim_expires_at <= %(now)s)
     ORDER BY next_attempt_at, id
     LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)
UPDATE job_side_effects e
   SET claimed_by = %(runner)s, claim_token = e.claim_token + 1,
       claim_expires_at = %(claim_until)s
  FROM picked
 WHERE e.job_id = picked.job_id AND e.effect = picked.effect
RETURNING e.*;

-- complete_side_effect --
-- The claimed row is done (fenced by its claim token); a note is kept in last_error.
UPDATE job_side_effects
   SET completed_at = %(now)s, attempts = attempts + 1, last_attempt_at = %(now)s,
       last_error = %(note)s, claimed_by = NULL, claim_expires_at = NULL
 WHERE job_id = %(job_id)s AND effect = %(effect)s AND claim_token = %(token)s
   AND completed_at IS NULL
RETURNING job_id;

-- retry_side_effect --
-- The claimed row failed: count the attempt, keep the error, schedule or give up.
UPDATE job_side_effects
   SET attempts = attempts + 1, last_attempt_at = %(now)s, last_error = %(last_error)s,
       next_attempt_at = %(next_attempt_at)s,
       given_up_at = CASE WHEN %(give_up)s::boolean THEN %(now)s ELSE NULL END,
       claimed_by = NULL, claim_expires_at = NULL
 WHERE job_id = %(job_id)s AND effect = %(effect)s AND claim_token = %(token)s
   AND completed_at IS NULL
RETURNING job_id;

-- redrive_side_effect --
-- An operator re-drives a given-up row: due now, with a fresh allowance of attempts.
UPDATE job_side_effects
   SET given_up_at = NULL, next_attempt_at = %(now)s, redrives = redrives + 1
 WHERE job_id = %(job_id)s AND effect = %(effect)s AND given_up_at IS NOT NULL
RETURNING job_id;

-- given_up_side_effects --
-- Rows that ran out of attempts, most recent first.
SELECT * FROM job_side_effects WHERE given_up_at IS NOT NULL
 ORDER BY given_up_at DESC LIMIT %(limit)s;

-- add_webhook_endpoint --
-- Register an endpoint for an owner (or the global one, with owner NULL).
INSERT INTO webhook_endpoints (owner, url, secret) VALUES (%(owner)s, %(url)s, %(secret)s)
RETURNING *;

-- list_webhook_endpoints --
-- Endpoints of an owner, or every endpoint when owner is NULL.
SELECT * FROM webhook_endpoints WHERE (%(owner)s::text IS NULL OR owner = %(owner)s) ORDER BY id;

-- get_webhook_endpoint --
-- One endpoint by id.
SELECT * FROM webhook_endpoints WHERE id = %(id)s;

-- rotate_webhook_secret --
-- A new secret; the previous one keeps signing until %(until)s.
UPDATE webhook_endpoints
   SET previous_secret = secret, previous_secret_until = %(until)s, secret = %(secret)s
 WHERE id = %(id)s AND disabled_at IS NULL
RETURNING *;

-- disable_webhook_endpoint --
-- Stop sending to an endpoint (a 410 Gone, or an owner's request).
UPDATE webhook_endpoints SET disabled_at = %(now)s, disabled_reason = %(reason)s
 WHERE id = %(id)s AND disabled_at IS NULL
RETURNING id;

-- webhook_endpoints_for --
-- The enabled endpoints an owner's events go to: theirs and the global one.
SELECT * FROM webhook_endpoints
 WHERE (owner = %(owner)s OR owner IS NULL) AND disabled_at IS NULL ORDER BY id;

-- record_delivery --
-- One delivery attempt to one endpoint; delivered_at is set once, at the first success.
INSERT INTO webhook_deliveries
       (job_id, effect, endpoint_id, attempts, last_attempt_at, last_status, last_error,
        delivered_at)
VALUES (%(job_id)s, %(effect)s, %(endpoint_id)s, 1, %(now)s, %(last_status)s,
        %(last_error)s,
        CASE WHEN %(delivered)s::boolean THEN %(now)s::timestamptz END)
ON CONFLICT (job_id, effect, endpoint_id) DO UPDATE
   SET attempts = webhook_deliveries.attempts + 1, last_attempt_at = excluded.last_attempt_at,
       last_status = excluded.last_status, last_error = excluded.last_error,
       delivered_at = coalesce(webhook_deliveries.delivered_at, excluded.delivered_at);

-- webhook_deliveries --
-- Every endpoint's deliveries of a job's side effects.
SELECT * FROM webhook_deliveries WHERE job_id = %(job_id)s ORDER BY effect, endpoint_id;

-- add_user --
-- A new person with the hash of their token.
INSERT INTO users (name, role, token_hash) VALUES (%(name)s, %(role)s, %(token_hash)s)
RETURNING *;

-- user_by_token_hash --
-- The person a token belongs to, unless revoked.
SELECT * FROM users WHERE token_hash = %(token_hash)s AND revoked_at IS NULL;

-- user_by_name --
-- A person by name, revoked or not.
SELECT * FROM users WHERE name = %(name)s;

-- list_users --
-- Everyone, oldest first.
SELECT * FROM users ORDER BY id;

-- revoke_user --
-- Revoke a person's token.
UPDATE users SET revoked_at = %(now)s WHERE name = %(name)s AND revoked_at IS NULL
RETURNING id;

-- owner_activity --
-- An owner's jobs not yet in a terminal state, and those created since a moment (fairness).
SELECT count(*) FILTER (WHERE NOT s.is_terminal) AS active,
       count(*) FILTER (WHERE j.created_at > %(since)s) AS recent
  FROM jobs j
  JOIN job_states s ON s.status = j.status
 WHERE j.owner = %(owner)s;

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
       coalesce(sum(extract(epoch FROM finished_at - started_at)), 0) AS seconds_total
  FROM jobs WHERE status = 'succeeded';

-- side_effect_totals --
-- Attempts and given-up rows per side effect (metrics).
SELECT effect, coalesce(sum(attempts), 0) AS attempts, count(given_up_at) AS given_up
  FROM job_side_effects GROUP BY effect;

-- oldest_queued --
-- Seconds the oldest queued job has waited, NULL when none is queued (metrics: queue age).
SELECT extract(epoch FROM clock_timestamp() - min(created_at)) AS seconds
  FROM jobs WHERE status = 'queued';

-- record_download --
-- A person asked for a job's download link.
INSERT INTO job_downloads (job_id, person) VALUES (%(job_id)s, %(person)s)
RETURNING id;

-- job_downloads --
-- A job's downloads, oldest first.
SELECT person, at FROM job_downloads WHERE job_id = %(job_id)s ORDER BY id;

-- beat --
-- A process's heartbeat: fixed fields only, one row per process, replaced at each beat.
INSERT INTO heartbeats (process, host, pid, kind, started_at, seen_at, active_jobs, last_claim_at,
                        claims_paused_until, pause_reason, paused_sources)
VALUES (%(process)s, %(host)s, %(pid)s, %(kind)s, %(started_at)s, clock_timestamp(),
        %(active_jobs)s, %(last_claim_at)s, %(claims_paused_until)s, %(pause_reason)s,
        %(paused_sources)s)
ON CONFLICT (process) DO UPDATE
   SET seen_at = excluded.seen_at, active_jobs = excluded.active_jobs,
       last_claim_at = excluded.last_claim_at,
       claims_paused_until = excluded.claims_paused_until,
       pause_reason = excluded.pause_reason, paused_sources = excluded.paused_sources;

-- heartbeats --
-- Every process's last heartbeat, most recently seen first, with its age in seconds.
SELECT *, extract(epoch FROM clock_timestamp() - seen_at) AS age_seconds
  FROM heartbeats ORDER BY seen_at DESC;

-- forget_heartbeats --
-- Drop the rows of processes not seen since a moment (they stopped long ago).
DELETE FROM heartbeats WHERE seen_at < %(before)s;
