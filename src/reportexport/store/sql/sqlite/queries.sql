-- Named queries of the SQLite job store. Same names as sql/postgres/queries.sql and as the
-- store methods that run them. Status words are fixture states (the gate checks them); the
-- database's own triggers check every change again.

-- set_meta --
-- Record a fact about the schema (version, graph fingerprint), positional (key, value).
INSERT INTO reportexport_meta (key, value) VALUES (?, ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- create_job --
-- Insert a queued job; with an idempotency key already used by this owner, insert nothing.
INSERT INTO jobs (owner, saved_query, source, query_sql, query_hash, parameters, options,
                  rerun_of, idempotency_key, requested_by, status)
VALUES (:owner, :saved_query, :source, :query_sql, :query_hash, :parameters, :options,
        :rerun_of, :idempotency_key, :requested_by, :status)
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
-- Newest first, keyset-paginated on id; NULL filters match everything.
SELECT * FROM jobs
 WHERE (:owner IS NULL OR owner = :owner)
   AND (:status IS NULL OR status = :status)
   AND (:saved_query IS NULL OR saved_query = :saved_query)
   AND (:before IS NULL OR id < :before)
 ORDER BY id DESC
 LIMIT :limit;

-- claim_jobs --
-- Move up to :limit queued jobs, oldest first, to running under a new lease token; jobs of the
-- sources in :excluded_sources (a JSON array: sources the worker has paused) stay queued.
-- RETURNING shows the row before the AFTER trigger clears the intent; a Job has no intent.
UPDATE jobs
   SET status = 'running', change_actor = 'worker', change_worker = :worker,
       lease_owner = :worker, lease_token = lease_token + 1,
       lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', :lease),
       started_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
       updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
 WHERE id IN (SELECT id FROM jobs
               WHERE status = 'queued'
                 AND source NOT IN (SELECT value FROM json_each(:excluded_sources))
               ORDER BY id LIMIT :limit)
RETURNING *;

-- extend_lease --
-- Push a running job's lease expiry out, if the caller still holds the lease.
UPDATE jobs SET lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', :lease)
 WHERE id = :id AND lease_token = :token AND status = 'running'
RETURNING lease_expires_at;

-- record_progress --
-- Rows and bytes written so far (and the temp object's key), under a running job's lease.
UPDATE jobs
   SET rows_written = coalesce(:rows, rows_written), bytes_written = :bytes,
       temp_key = coalesce(:temp_key, temp_key),
       progressed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
 WHERE id = :id AND lease_token = :token AND status = 'running'
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
       object_expires_at = CASE WHEN :expires IS NULL THEN NULL
                                ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now', :expires) END,
       rows_written = coalesce(:object_rows, rows_written),
       bytes_written = coalesce(:object_bytes, bytes_written),
       lease_expires_at = NULL
 WHERE id = :id AND lease_token = :token AND status = 'running'
RETURNING id;

-- cancel_job --
-- A person cancels a job that is still in :expected (compare-and-set).
UPDATE jobs
   SET status = 'canceled', change_actor = 'user', change_person = :person,
       change_reason = :reason, lease_expires_at = NULL
 WHERE id = :id AND status = :expected
RETURNING id;

-- reap_expired --
-- Fail every running job whose lease expired more than the grace period ago (SQLite has one
-- writer, so no row can be locked by another transaction meanwhile).
UPDATE jobs
   SET status = 'failed', change_actor = 'worker', change_worker = :worker,
       change_reason = 'lease_expired', error_code = 'lease_expired',
       error_message = 'the worker running this export stopped renewing its lease',
       lease_expires_at = NULL
 WHERE status = 'running'
   AND lease_expires_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', :grace)
RETURNING id;

-- claim_side_effects --
-- Claim up to :limit due side-effect rows for a runner under a new claim token.
UPDATE job_side_effects
   SET claimed_by = :runner, claim_token = claim_token + 1, claim_expires_at = :claim_until
 WHERE id IN (SELECT id FROM job_side_effects
               WHERE completed_at IS NULL AND given_up_at IS NULL AND next_attempt_at <= :now
                 AND (claim_expires_at IS NULL OR claim_expires_at <= :now)
               ORDER BY next_attempt_at, id
               LIMIT :limit)
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
       given_up_at = CASE WHEN :give_up THEN :now ELSE NULL END,
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

-- add_webhook_endpoint --
-- Register an endpoint for an owner (or the global one, with owner NULL).
INSERT INTO webhook_endpoints (owner, url, secret) VALUES (:owner, :url, :secret)
RETURNING *;

-- list_webhook_endpoints --
-- Endpoints of an owner, or every endpoint when owner is NULL.
SELECT * FROM webhook_endpoints WHERE (:owner IS NULL OR owner = :owner) ORDER BY id;

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

-- webhook_endpoints_for --
-- The enabled endpoints an owner's events go to: theirs and the global one.
SELECT * FROM webhook_endpoints
 WHERE (owner = :owner OR owner IS NULL) AND disabled_at IS NULL ORDER BY id;

-- record_delivery --
-- One delivery attempt to one endpoint; delivered_at is set once, at the first success.
INSERT INTO webhook_deliveries
       (job_id, effect, endpoint_id, attempts, last_attempt_at, last_status, last_error,
        delivered_at)
VALUES (:job_id, :effect, :endpoint_id, 1, :now, :last_status,
        :last_error,
        CASE WHEN :delivered THEN :now END)
ON CONFLICT (job_id, effect, endpoint_id) DO UPDATE
   SET attempts = attempts + 1, last_attempt_at = excluded.last_attempt_at,
       last_status = excluded.last_status, last_error = excluded.last_error,
       delivered_at = coalesce(delivered_at, excluded.delivered_at);

-- webhook_deliveries --
-- Every endpoint's deliveries of a job's side effects.
SELECT * FROM webhook_deliveries WHERE job_id = :job_id ORDER BY effect, endpoint_id;

-- add_user --
-- A new person with the hash of their token.
INSERT INTO users (name, role, token_hash) VALUES (:name, :role, :token_hash)
RETURNING *;

-- user_by_token_hash --
-- The person a token belongs to, unless revoked.
SELECT * FROM users WHERE token_hash = :token_hash AND revoked_at IS NULL;

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

-- owner_activity --
-- An owner's jobs not yet in a terminal state, and those created since a moment (fairness).
SELECT count(*) FILTER (WHERE NOT s.is_terminal) AS active,
       count(*) FILTER (WHERE j.created_at > :since) AS recent
  FROM jobs j
  JOIN job_states s ON s.status = j.status
 WHERE j.owner = :owner;

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
       coalesce(sum((julianday(finished_at) - julianday(started_at)) * 86400), 0) AS seconds_total
  FROM jobs WHERE status = 'succeeded';

-- side_effect_totals --
-- Attempts and given-up rows per side effect (metrics).
SELECT effect, coalesce(sum(attempts), 0) AS attempts, count(given_up_at) AS given_up
  FROM job_side_effects GROUP BY effect;

-- oldest_queued --
-- Seconds the oldest queued job has waited, NULL when none is queued (metrics: queue age).
SELECT (julianday('now') - julianday(min(created_at))) * 86400 AS seconds
  FROM jobs WHERE status = 'queued';

-- record_download --
-- A person asked for a job's download link.
INSERT INTO job_downloads (job_id, person) VALUES (:job_id, :person)
RETURNING id;

-- job_downloads --
-- A job's downloads, oldest first.
SELECT person, at FROM job_downloads WHERE job_id = :job_id ORDER BY id;

-- beat --
-- A process's heartbeat: fixed fields only, one row per process, replaced at each beat.
INSERT INTO heartbeats (process, host, pid, kind, started_at, seen_at, active_jobs, last_claim_at,
                        claims_paused_until, pause_reason, paused_sources)
VALUES (:process, :host, :pid, :kind, :started_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
        :active_jobs, :last_claim_at, :claims_paused_until, :pause_reason, :paused_sources)
ON CONFLICT (process) DO UPDATE
   SET seen_at = excluded.seen_at, active_jobs = excluded.active_jobs,
       last_claim_at = excluded.last_claim_at,
       claims_paused_until = excluded.claims_paused_until,
       pause_reason = excluded.pause_reason, paused_sources = excluded.paused_sources;

-- heartbeats --
-- Every process's last heartbeat, most recently seen first, with its age in seconds.
SELECT *, (julianday('now') - julianday(seen_at)) * 86400 AS age_seconds
  FROM heartbeats ORDER BY seen_at DESC;

-- forget_heartbeats --
-- Drop the rows of processes not seen since a moment (they stopped long ago).
DELETE FROM heartbeats WHERE seen_at < :before;
