"""The worker: claims jobs, runs their exports, and ends each one by the graph's rules.

Each running export holds a lease whose token fences every write. Five loops run beside the
exports, each in its own thread and none waiting behind another:

- **claims** takes queued jobs while there is room, paced by the health of what they need
  (see `pacing`): after repeated infrastructure failures the jobs of a broken object store or
  source stay queued until a probe finds it back;
- **leases** renews the leases of running exports on a connection of its own, so no other
  query (a progress write waiting on a row lock, a slow reap) can delay a renewal;
- **progress** records rows and bytes so far every half second, which is also how a person's
  cancel is noticed (the guarded write finds the job no longer running);
- **housekeeping** reaps the jobs of workers that vanished and writes this process's heartbeat;
- **probes** tries paused dependencies the way exports use them (a probe that hangs holds back
  no heartbeat). Exports that fail against one past its budget are held on their leases and
  run again once it is back, rather than failed.

A database that blinks is waited out: every loop retries with backoff, and the transaction
that ends a job is retried for as long as its lease may still be valid, so a published export
is never reported as failed because of it. On SIGTERM the worker stops claiming, lets running
exports finish within a grace period, then ends the rest `failed` with reason
`worker_shutdown`.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from reportexport.core.access import AccessWithdrawnError, Member
from reportexport.core.catalog import Catalog
from reportexport.core.csvformat import DIALECT_VERSION
from reportexport.core.job_status import FAIL, SUCCEED
from reportexport.core.loops import Supervisor, record_stop
from reportexport.core.pacing import STORAGE, Pacing
from reportexport.core.records import ClaimedJob, Heartbeat, ProcessKind
from reportexport.core.retry import Backoff
from reportexport.core.settings import default
from reportexport.objects import (
    ObjectExistsError,
    ObjectStore,
    ObjectStoreError,
    ObjectStoreUnavailableError,
    PublishWithheldError,
    TempObject,
    final_key,
)
from reportexport.pipeline.export import ObjectSink, job_spec, run_export
from reportexport.runners.failures import STOP_MESSAGES, UNEXPECTED, failure_of
from reportexport.services.access import StoreMembers
from reportexport.sources import (
    CancelToken,
    Source,
    SourceError,
    open_source,
    remove_leftovers,
)
from reportexport.store import (
    Claim,
    Groups,
    Heartbeats,
    JobQueue,
    JobStore,
    Lease,
    LeaseBusyError,
    Outcome,
    PublishedObject,
    SourceCaps,
    StaleStatusError,
    TransientStoreError,
    Users,
)

log = logging.getLogger("reportexport.worker")

# Between tries at the job store while a lease may still be valid (ending a job, renewing its
# lease), and between tries at deleting an object that must not outlive its job.
STORE_BACKOFF = Backoff(first=0.2, ceiling=2.0)
DELETE_BACKOFF = Backoff(first=0.2, ceiling=1.6)
DELETE_ATTEMPTS = 5

# The heartbeat rows of processes gone this long are dropped (checked this often).
FORGET_AFTER = timedelta(days=1)
FORGET_EVERY_SECONDS = 3600.0

UNKNOWN_END = (
    "job %s: could not learn whether it ended; if it did not, the reaper fails it and the "
    "sweeper removes its object"
)


def _named(key: str) -> str:
    """A paused dependency as log lines name it: a source by its name, else the object store."""
    return key or "the object store"


@dataclass(frozen=True, kw_only=True)
class WorkerSettings:
    worker_id: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    kind: ProcessKind = "worker"
    concurrency: int = default("concurrency")
    lease_seconds: float = default("lease_seconds")
    progress_seconds: float = 0.5
    poll_seconds: float = 1.0
    reap_grace_seconds: float = 10.0
    retention_seconds: float = default("retention_days") * 86400
    heartbeat_seconds: float = 5.0
    # False for a short-lived worker (a local `reportexport export`): it writes no heartbeat,
    # so the operators never see it as a process that went silent.
    beats: bool = True
    # Infrastructure failures in a row against one dependency before its jobs stay queued.
    failure_limit: int = default("pause_after_failures")
    first_probe_seconds: float = 1.0
    max_probe_seconds: float = 60.0


class WorkerStore(Protocol):
    """The job store's roles a worker uses (a `Database` has them all)."""

    @property
    def queue(self) -> JobQueue: ...

    @property
    def jobs(self) -> JobStore: ...

    @property
    def heartbeats(self) -> Heartbeats: ...

    @property
    def caps(self) -> SourceCaps: ...

    @property
    def users(self) -> Users: ...

    @property
    def groups(self) -> Groups: ...


@dataclass
class Running:
    lease: Lease
    cancel: CancelToken
    source: str
    sink: ObjectSink | None = None
    temp_key: str | None = None
    temp_key_recorded: bool = False
    lease_renewed_at: float = field(default_factory=time.monotonic)
    held: str | None = None  # the dependency this export waits for (see Worker._hold)
    # What an attempt was publishing when it ended: whether that publish went through is
    # learnt before the next attempt (see Worker._published_before).
    publishing: PublishedObject | None = None


class Worker:
    def __init__(
        self,
        store: WorkerStore,
        catalog: Catalog,
        objects: ObjectStore,
        settings: WorkerSettings | None = None,
        *,
        lease_queue: JobQueue | None = None,
        restart_loops: bool = True,
        also: Sequence[tuple[str, Callable[[], float]]] = (),
    ) -> None:
        """`lease_queue`: the queue the lease loop renews through, ideally on a connection of
        its own (default: `store.queue`). `restart_loops`: restart a loop that fails
        unexpectedly (`serve`), or stop the worker and let `run_until_signal` return 1 (a
        supervised `worker` process). `also`: more loops to run and supervise beside the
        worker's own (the scheduler), as (name, step) with step returning its delay."""
        self.also = tuple(also)
        self.queue = store.queue
        self.jobs = store.jobs
        self.heartbeats = store.heartbeats
        self.caps = store.caps
        self.lease_queue = lease_queue or store.queue
        self.catalog = catalog
        self.members = StoreMembers(users=store.users, groups=store.groups)
        self.objects = objects
        self.settings = settings or WorkerSettings()
        self.started_at = datetime.now(UTC)
        self.pacing = Pacing(
            limit=self.settings.failure_limit,
            first_probe_seconds=self.settings.first_probe_seconds,
            max_probe_seconds=self.settings.max_probe_seconds,
        )
        self._crashed = threading.Event()  # a loop cannot go on
        self._wake = threading.Event()  # a signal, or a crash
        self._running: dict[int, Running] = {}
        self._lock = threading.Condition()
        self._claiming = threading.Event()  # set: stop claiming
        # Room promised to claims in flight (the claims loop's, or one made as an export ends),
        # so that two claiming at once never take more than `concurrency` between them.
        self._reserved = 0
        self._stopped = threading.Event()  # set: every loop ends
        self._last_claim_at: datetime | None = None
        self._last_poll_at: datetime | None = None
        self._last_beat = self._last_reap = self._last_forget = 0.0
        self._probes = 0
        self._pool = ThreadPoolExecutor(self.settings.concurrency, thread_name_prefix="export")
        self._sources: dict[str, Source] = {}
        self.loops = Supervisor(
            stopping=self._stopped,
            transient=(TransientStoreError,),
            restart=restart_loops,
            on_crash=self._on_crash,
        )

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        remove_leftovers()
        self.publish_caps()
        self.loops.start("claims", self._claims, until=self._claiming)
        self.loops.start("leases", self._leases, max_delay=1.0)
        self.loops.start("progress", self._progress, max_delay=5.0)
        self.loops.start("housekeeping", self._housekeeping)
        self.loops.start("probes", self._probes_step)
        for name, step in self.also:
            self.loops.start(name, step)

    def publish_caps(self) -> None:
        """The catalog's max_concurrent of each source becomes the database's, which every
        worker's claims obey; the last process to start wins, and says so when it changes
        what another one set."""
        caps = {name: config.max_concurrent for name, config in self.catalog.sources.items()}
        process = f"{self.settings.worker_id}-{self.settings.kind}"
        for change in self.caps.publish(caps, process=process):
            log.warning(
                "source %s: max_concurrent %s set by %s is now %s (this process's catalog); "
                "the catalogs of the two differ",
                change.source,
                change.previous,
                change.previous_set_by,
                change.now,
            )

    def stop(self, grace_seconds: float = default("grace_seconds")) -> None:
        """Stop claiming; let running exports finish within the grace period, then end them."""
        self._claiming.set()
        self.loops.join_loop("claims")
        deadline = time.monotonic() + grace_seconds
        with self._lock:
            self._lock.notify_all()
            while self._running and time.monotonic() < deadline:
                self._lock.wait(timeout=max(0.0, deadline - time.monotonic()))
            while self._reserved:  # a claim in flight: its jobs are ended below with the rest
                self._lock.wait(timeout=0.1)
            for running in self._running.values():
                running.cancel.cancel("worker_shutdown")
        self._pool.shutdown(wait=True)
        self._stopped.set()
        self.loops.join()
        if self.settings.beats:
            record_stop(self.heartbeats, self.heartbeat().process)

    def run_until_signal(self, grace_seconds: float = default("grace_seconds")) -> int:
        """Run until SIGTERM or SIGINT (0), or until a loop cannot go on (1); then stop."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: self._wake.set())
        self.start()
        log.info("worker %s started", self.settings.worker_id)
        self._wake.wait()
        code = 1 if self._crashed.is_set() else 0
        if code:
            log.critical(
                "worker %s is stopping because a loop cannot continue; its supervisor should "
                "start it again",
                self.settings.worker_id,
            )
        log.info("worker %s stopping (grace %ss)", self.settings.worker_id, grace_seconds)
        self.stop(grace_seconds)
        return code

    def _on_crash(self, loop: str, exc: BaseException) -> None:
        self._crashed.set()
        self._wake.set()

    @property
    def active(self) -> int:
        with self._lock:
            return len(self._running)

    def heartbeat(self) -> Heartbeat:
        """This worker's state, as its heartbeat row shows it."""
        with self._lock:
            active = tuple(sorted(self._running))
        paused = self.pacing.paused()
        now, monotonic = datetime.now(UTC), time.monotonic()
        until = None
        if paused:
            until = now + timedelta(seconds=max(0.0, min(paused.values()) - monotonic))
        return Heartbeat(
            process=f"{self.settings.worker_id}-{self.settings.kind}",
            host=socket.gethostname(),
            pid=os.getpid(),
            kind=self.settings.kind,
            started_at=self.started_at,
            active_jobs=active,
            last_claim_at=self._last_claim_at,
            last_poll_at=self._last_poll_at,
            claims_paused_until=until,
            pause_reason=self.pacing.pause_reason,
            paused_sources=tuple(sorted(key for key in paused if key != STORAGE)),
        )

    # -- the loops ----------------------------------------------------------------------------

    def _claims(self) -> float:
        settings = self.settings
        with self._lock:
            free, in_flight = self._room()
            if free <= 0:
                self._lock.wait(timeout=settings.poll_seconds)  # an export ending wakes this
                return 0.0
            self._reserved += free
        try:
            plan = self.pacing.plan(free, in_flight)
            if plan.limit <= 0:
                return settings.poll_seconds
            self._last_poll_at = datetime.now(UTC)
            claims = self.queue.claim_jobs(
                settings.worker_id,
                limit=plan.limit,
                lease_seconds=settings.lease_seconds,
                excluded_sources=plan.excluded_sources,
            )
            self._begin_all(claims)
        finally:
            self._release(free)
        if not claims:
            self.queue.wait_for_change(settings.poll_seconds)
        return 0.0

    def _begin_all(self, claims: Sequence[Claim]) -> None:
        for claim in claims:
            self._last_claim_at = datetime.now(UTC)
            self._begin(claim)

    def _room(self, leaving: Running | None = None) -> tuple[int, Counter[str]]:
        """Under the lock: how many more exports fit beside those running (`leaving` counted
        as gone) and the room claims in flight hold; and the sources of those that stay."""
        staying = [item for item in self._running.values() if item is not leaving]
        free = self.settings.concurrency - len(staying) - self._reserved
        return free, Counter(item.source for item in staying)

    def _release(self, reserved: int) -> None:
        with self._lock:
            self._reserved -= reserved
            self._lock.notify_all()

    def _leases(self) -> float:
        renew_after = self.settings.lease_seconds / 3
        for item in self._snapshot():
            if item.cancel.cancelled or time.monotonic() - item.lease_renewed_at < renew_after:
                continue
            try:
                item.lease = self.lease_queue.extend_lease(
                    item.lease, lease_seconds=self.settings.lease_seconds
                )
                item.lease_renewed_at = time.monotonic()
            except LeaseBusyError:
                continue  # another transaction holds the row: not waited for, next round
            except StaleStatusError:
                item.cancel.cancel("stale")  # canceled by a person, or reaped: stop, end nothing
        return min(0.5, renew_after / 2)

    def _progress(self) -> float:
        for item in self._snapshot():
            if item.cancel.cancelled:
                continue
            sink = item.sink
            temp_key = None if item.temp_key_recorded else item.temp_key
            try:
                self.queue.record_progress(
                    item.lease,
                    rows=sink.records.rows if sink else 0,
                    bytes_written=sink.object_bytes if sink else 0,
                    temp_key=temp_key,
                )
            except LeaseBusyError:
                continue  # locked by another transaction: the next write says it all
            except StaleStatusError:
                item.cancel.cancel("stale")
                continue
            item.temp_key_recorded = item.temp_key_recorded or temp_key is not None
        return self.settings.progress_seconds

    def _housekeeping(self) -> float:
        settings = self.settings
        now = time.monotonic()
        if now - self._last_reap >= settings.lease_seconds / 2:
            for job_id in self.queue.reap_expired(
                settings.worker_id, grace_seconds=settings.reap_grace_seconds
            ):
                log.warning(
                    "job %s: lease expired, failed by the reaper", job_id, extra={"job_id": job_id}
                )
            self._last_reap = now
        if settings.beats and now - self._last_beat >= settings.heartbeat_seconds:
            self.heartbeats.beat(self.heartbeat())
            if now - self._last_forget >= FORGET_EVERY_SECONDS:
                self.heartbeats.forget_heartbeats(before=datetime.now(UTC) - FORGET_AFTER)
                self._last_forget = now
            self._last_beat = now
        return min(1.0, settings.heartbeat_seconds)

    def _probes_step(self) -> float:
        """Probes run on a thread of their own: one that hangs (a paused S3 server) holds
        back neither heartbeats nor the reaper."""
        for key in self.pacing.due_probes():
            self._probe(key)
        return 0.2

    def _snapshot(self) -> list[Running]:
        with self._lock:
            return list(self._running.values())

    # -- one export --------------------------------------------------------------------------

    def _begin(self, claim: Claim) -> None:
        job = claim.job
        running = Running(lease=claim.lease, cancel=CancelToken(), source=job.source)
        with self._lock:
            self._running[job.id] = running
        # A claim let through by a half-open store or source is its trial: claims of it stay
        # held, and the heartbeat shows the pause, until the attempt ends (see `_execute`).
        self.pacing.started(STORAGE, job.id)
        self.pacing.started(job.source, job.id)
        self._pool.submit(self._execute, claim, running)

    def _execute(self, claim: Claim, running: Running) -> None:
        job = claim.job
        about = {"job_id": job.id}
        try:
            while True:
                try:
                    settled = self._attempt(claim, running)
                finally:
                    # A half-open trial this attempt took is given back however it ended;
                    # one that succeeded or failed against its dependency was settled already.
                    self.pacing.release_trial(STORAGE, job.id)
                    self.pacing.release_trial(job.source, job.id)
                # Not settled: the object store (or the source) failed this export after its
                # budget of failures was spent; the job keeps its lease and runs again once
                # it is back.
                if settled or not self._hold(running):
                    break
                log.warning("job %s: running it again on its lease", job.id, extra=about)
        finally:
            with self._lock:
                self._running.pop(job.id, None)
                self._lock.notify_all()

    def _attempt(self, claim: Claim, running: Running) -> bool:
        """Run the export once and end the job; False if it is held instead (see `_hold`)."""
        job = claim.job
        about = {"job_id": job.id}
        temp: TempObject | None = None
        running.sink = None
        try:
            spec = job_spec(job)
            published = self._published_before(running)
            if published is None:
                self._check_access(job)
                source = self._source(job.source)
                temp = self.objects.create_temp(
                    job.id, claim.lease.token, final_key(job.id, spec.file_name)
                )
                running.temp_key, running.temp_key_recorded = temp.key, False  # a rerun's own
                running.sink = ObjectSink(temp, spec.csv, spec.limits)
                staged = run_export(spec, source, temp, running.sink, running.cancel)
                self.pacing.succeeded(job.source)
                published = running.publishing = PublishedObject(
                    key=final_key(job.id, spec.file_name),
                    sha256=staged.sha256,
                    bytes=staged.bytes,
                    rows=staged.rows,
                    columns=staged.columns,
                    column_types=staged.column_types,
                    dialect_version=DIALECT_VERSION,
                    file_name=staged.file_name,
                    expires_in_seconds=self.settings.retention_seconds,
                )
                try:
                    temp.publish(check=lambda: self._still_ours(running))
                except PublishWithheldError:
                    log.warning(
                        "job %s: lease lost before publishing; nothing published",
                        job.id,
                        extra=about,
                    )
                    return True
            self.pacing.succeeded(STORAGE)
            self._succeed(running, published)
        except Exception as exc:
            return self._failed(running, temp, exc)
        return True

    def _check_access(self, job: ClaimedJob) -> None:
        """AccessWithdrawnError when the owner may no longer run the job: access removed
        between its creation and now (one look-up, only for a query not open to everyone)."""
        query = self.catalog.queries.get(job.saved_query)
        if query is None or query.access.for_everyone:
            return
        member = self.members.member(job.owner) or Member(name=job.owner)
        refusal = query.access.job_refusal(member, job.parameters)
        if refusal is not None:
            raise AccessWithdrawnError(refusal, job.owner)

    def _failed(self, running: Running, temp: TempObject | None, exc: Exception) -> bool:
        """End a job whose export raised, as the failures table says; False if it is held
        for its dependency instead (see `_hold`)."""
        job_id = running.lease.job_id
        about = {"job_id": job_id}
        failure = failure_of(exc, running.source)
        if failure is UNEXPECTED:
            log.error("job %s: export failed unexpectedly", job_id, exc_info=exc, extra=about)
        self._abort(temp)
        if failure is None:
            return True
        if failure.log_level is not None:
            log.log(failure.log_level, "job %s: %s", job_id, failure.log_line, extra=about)
        if failure.paced == STORAGE:
            published = self._published_despite(running)
            if published is not None:
                self._succeed(running, published)
                return True
        if failure.paced is not None and not self.pacing.failed(failure.paced):
            running.held = failure.paced
            return False
        if failure.answered is not None:
            self.pacing.succeeded(failure.answered)
        self._fail(running, failure.code, failure.message)
        return True

    def _succeed(self, running: Running, published: PublishedObject) -> None:
        """End the job as succeeded with its published object, or delete the object if the job
        ended otherwise meanwhile (a cancel, the reaper)."""
        job_id = running.lease.job_id
        outcome = Outcome(lease=running.lease, to_status=SUCCEED.to_status, published=published)
        ended = self._finish(running, outcome)
        if ended is False:
            # No object may outlive a job that did not succeed.
            self._delete(published.key)
            log.info(
                "job %s ended elsewhere; its published object was deleted",
                job_id,
                extra={"job_id": job_id},
            )
        elif ended is None:
            log.error(UNKNOWN_END, job_id, extra={"job_id": job_id})

    def _published_despite(self, running: Running) -> PublishedObject | None:
        """After an outage met while publishing: the object, if the publish went through
        anyway; None when it did not, or when the store cannot say now."""
        try:
            return self._published_before(running)
        except ObjectStoreError:
            return None
        except Exception:
            job_id = running.lease.job_id
            log.exception("job %s: could not learn whether it was published", job_id)
            return None

    def _published_before(self, running: Running) -> PublishedObject | None:
        """What the attempt before this one published, if its publish went through though it
        failed (S3 completed the upload but the answer was lost; a folder took the rename,
        then refused what comes after). A job is claimed once and only its lease publishes
        at its key, so an object there now is that attempt's: ended with, not exported again
        (whose publish would be refused as a second object). The `write_csv_object` effect
        checks its size and SHA-256 against the job as for any export."""
        publishing = running.publishing
        if publishing is None:
            return None
        info = self.objects.stat(publishing.key)
        if info is None:
            return None
        if info.size != publishing.bytes:
            raise ObjectExistsError(
                f"an object of {info.size} bytes already exists at {publishing.key}; "
                f"the export wrote {publishing.bytes}"
            )
        log.warning(
            "job %s: the attempt before published its object after all; ending with it",
            running.lease.job_id,
            extra={"job_id": running.lease.job_id},
        )
        return publishing

    def _hold(self, running: Running) -> bool:
        """Wait, still running under the lease (the lease loop renews it), until the held
        dependency may be tried again: True to run the export again, False if it ended
        meanwhile (a cancel, a lost lease, shutdown: ended here as the reason says).

        The half-open trial this export may have taken as it was let through is given back
        however it ends here: a cancel landing just after `may_resume` said yes would
        otherwise keep the trial taken for good (no claims, and no probe either)."""
        key = running.held or STORAGE
        job_id = running.lease.job_id
        log.warning(
            "job %s: %s failed it past the pause's budget; held on its lease until it is back",
            job_id,
            _named(key),
            extra={"job_id": job_id},
        )
        running.sink = None
        resumes = False
        try:
            while not self.pacing.may_resume(key, job_id):
                if running.cancel.wait(0.5):
                    break
            resumes = not running.cancel.cancelled
        finally:
            if not resumes:
                self.pacing.release_trial(key, job_id)
        if not resumes:
            reason = running.cancel.reason or ""
            if reason in STOP_MESSAGES:
                self._fail(running, reason, STOP_MESSAGES[reason])
            return False
        running.held = None
        return True

    def _deadline(self, running: Running, *, reap_grace: bool = False) -> float:
        """Until when (monotonic) the lease is surely still ours, from its last renewal; with
        `reap_grace`, until the reaper may take it (a fenced write is harmless until then)."""
        grace = self.settings.reap_grace_seconds if reap_grace else 0.0
        return running.lease_renewed_at + self.settings.lease_seconds + grace

    def _finish(self, running: Running, outcome: Outcome) -> bool | None:
        """End the job: True if it now has this outcome, False if it ended otherwise (a cancel,
        the reaper), None if the store could not say before the lease ran out.

        Transient store failures are retried while the lease may still be valid. A failed
        attempt may have committed unacknowledged, so once one failed, a later attempt that
        finds the job no longer running reads it back: ended as this outcome under this
        lease's token means ended by us (True), whatever the retry itself found.
        """
        waits = STORE_BACKOFF.waits()
        uncertain = False
        while True:
            try:
                if self._end(running, outcome, claim_next=not uncertain):
                    return True
                if not uncertain:
                    return False
            except TransientStoreError as exc:
                uncertain = True
                log.warning("job %s: ending it failed (%s); again", outcome.lease.job_id, exc)
            known = self._ended_as(outcome)
            if known is not None:
                return known
            delay = next(waits)
            if time.monotonic() + delay > self._deadline(running, reap_grace=True):
                log.error("job %s: could not end it before its lease ran out", outcome.lease.job_id)
                return None
            time.sleep(delay)

    def _end(self, running: Running, outcome: Outcome, *, claim_next: bool) -> bool:
        """Finish the job (True if it now has this outcome); with `claim_next`, claim the jobs
        that fit in the room it leaves in the same message (one commit for both). Only a first
        attempt claims: after one that failed unanswered, a claim may have gone through."""
        settings = self.settings
        with self._lock:
            free, in_flight = self._room(leaving=running)
            if not claim_next or self._claiming.is_set():
                free = 0
            self._reserved += max(free, 0)
        if free <= 0:
            return self.queue.finish_jobs([outcome])[0]
        try:
            plan = self.pacing.plan(free, in_flight)
            self._last_poll_at = datetime.now(UTC)
            (finished,), claims = self.queue.finish_and_claim(
                [outcome],
                worker=settings.worker_id,
                limit=plan.limit,
                lease_seconds=settings.lease_seconds,
                excluded_sources=plan.excluded_sources,
            )
            self._begin_all(claims)
        finally:
            self._release(free)
        return finished

    def _ended_as(self, outcome: Outcome) -> bool | None:
        """After an unanswered finish: did it commit (True), did the job end otherwise
        (False), or is it still running under our lease or unreadable (None: try again)?"""
        try:
            job = self.jobs.get_job(outcome.lease.job_id).job
        except TransientStoreError:
            return None
        if job.lease_token != outcome.lease.token:
            return False
        if job.status == "running":
            return None
        if job.status != outcome.to_status:
            return False
        published = outcome.published
        if published is not None:
            return (job.object_key, job.object_sha256) == (published.key, published.sha256)
        # The reaper fails a job under the same token, but with its own code.
        return job.error_code == outcome.error_code

    def _delete(self, key: str) -> None:
        """Delete an object that must not outlive its job, retried a little; the sweeper is
        the last resort."""
        waits = DELETE_BACKOFF.waits()
        for attempt in range(DELETE_ATTEMPTS):
            try:
                self.objects.delete(key)
                return
            except Exception as exc:
                if attempt == DELETE_ATTEMPTS - 1:
                    log.error("deleting %s failed (%s); the sweeper will remove it", key, exc)
                    return
                time.sleep(next(waits))

    def _still_ours(self, running: Running) -> bool:
        """The lease check made at the last moment before an object becomes visible: renew
        the lease (a stale worker learns it here, not after publishing); if another
        transaction holds the row, a read that waits on no lock says whether the lease is
        still ours and unexpired. A job store that does not answer is tried until the reaper
        may take the job: a renewal is fenced by the database, so it succeeds until then."""
        waits = STORE_BACKOFF.waits()
        while time.monotonic() < self._deadline(running, reap_grace=True):
            try:
                running.lease = self.lease_queue.extend_lease(
                    running.lease, lease_seconds=self.settings.lease_seconds
                )
                running.lease_renewed_at = time.monotonic()
                return True
            except StaleStatusError:
                return False
            except LeaseBusyError:
                try:
                    if self.lease_queue.lease_held(running.lease):
                        return True
                except TransientStoreError:
                    pass
            except TransientStoreError:
                pass
            time.sleep(next(waits))
        return False

    def _fail(self, running: Running, code: str, message: str) -> None:
        outcome = Outcome(
            lease=running.lease,
            to_status=FAIL.to_status,
            reason=code,
            error_code=code,
            error_message=message,
        )
        try:
            self._finish(running, outcome)
        except Exception:
            job_id = running.lease.job_id
            log.exception("job %s: recording its failure failed", job_id, extra={"job_id": job_id})

    def _abort(self, temp: TempObject | None) -> None:
        if temp is None:
            return
        try:
            temp.abort()
        except Exception:
            log.exception("aborting temp object %s failed; the sweeper will remove it", temp.key)

    def _probe(self, key: str) -> None:
        """Try a paused dependency the way exports use it: for the object store a small object
        written, published and deleted through the same store, folder or bucket (a write
        that only reaches a buffer proves nothing); for a source `SELECT 1`. A good probe
        half-opens it: one job goes through, and a failure pauses again."""
        try:
            if key == STORAGE:
                self._probe_store()
            else:
                self._source(key).describe("SELECT 1 AS probe", {})
        except Exception as exc:
            self.pacing.probe_failed(key)
            log.warning("%s is still unavailable: %s", _named(key), exc)
            return
        self.pacing.probe_succeeded(key)
        log.warning("%s answers again: one job tries it", _named(key))

    def _probe_store(self) -> None:
        self._probes += 1
        name = f"probe-{self.settings.worker_id}-{self._probes}.csv"
        key = final_key(0, name)  # job 0 is nobody's: the sweeper removes a leftover
        # A token of this process's own, so two workers' probe temp objects never meet.
        temp = self.objects.create_temp(0, os.getpid() * 100_000 + self._probes, key)
        try:
            temp.write(b"probe\n")
            temp.publish()
        except BaseException:
            temp.abort()
            raise
        with self.objects.read(key) as handle:
            if handle.read() != b"probe\n":
                raise ObjectStoreUnavailableError(f"the probe object {key} read back wrong")
        self.objects.delete(key)

    def _source(self, name: str) -> Source:
        config = self.catalog.sources.get(name)
        if config is None:
            raise SourceError(f"the source {name!r} is no longer in the catalog")
        with self._lock:
            if name not in self._sources:
                self._sources[name] = open_source(config)
            return self._sources[name]
