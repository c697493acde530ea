"""The worker: claims jobs, runs their exports, and ends each one by the graph's rules.

Each running export holds a lease whose token fences every write. A monitor thread records
progress every half second, which is also how a user's cancel is noticed (the guarded write
finds the job no longer running) and how the lease is kept alive; the same thread reaps jobs
whose worker vanished. On SIGTERM the worker stops claiming, lets running exports finish
within a grace period, then ends the rest `failed` with reason `worker_shutdown`.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from reportexport.catalog import Catalog
from reportexport.csvformat import DIALECT_VERSION
from reportexport.exports import LimitExceededError, ObjectSink, job_spec, run_export
from reportexport.objects import ObjectExistsError, ObjectStore, TempObject, final_key
from reportexport.sources import (
    CancelToken,
    ExportCanceledError,
    Source,
    SourceError,
    open_source,
)
from reportexport.store import Claim, Database, Lease, Outcome, PublishedObject, StaleStatusError

log = logging.getLogger("reportexport.worker")

SUCCEEDED, FAILED = "succeeded", "failed"
# Why a running export was stopped, and whether the job still needs ending by this worker.
STOP_MESSAGES = {
    "worker_shutdown": "the worker shut down before the export finished",
    "limit_time": "the export ran past its time limit",
}


@dataclass(frozen=True, kw_only=True)
class WorkerSettings:
    worker_id: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    concurrency: int = 2
    lease_seconds: float = 30.0
    progress_seconds: float = 0.5
    poll_seconds: float = 1.0
    reap_grace_seconds: float = 10.0
    retention_seconds: float = 7 * 24 * 3600.0


@dataclass
class Running:
    lease: Lease
    cancel: CancelToken
    sink: ObjectSink | None = None
    temp_key: str | None = None
    temp_key_recorded: bool = False
    lease_renewed_at: float = field(default_factory=time.monotonic)


class Worker:
    def __init__(
        self,
        db: Database,
        catalog: Catalog,
        objects: ObjectStore,
        settings: WorkerSettings | None = None,
    ) -> None:
        self.db = db
        self.catalog = catalog
        self.objects = objects
        self.settings = settings or WorkerSettings()
        self._running: dict[int, Running] = {}
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._pool = ThreadPoolExecutor(self.settings.concurrency, thread_name_prefix="export")
        self._sources: dict[str, Source] = {}
        self._source_slots = {
            name: threading.BoundedSemaphore(cfg.max_concurrent)
            for name, cfg in catalog.sources.items()
        }

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        self._claimer = threading.Thread(
            target=self._claim_loop, name="worker-claimer", daemon=True
        )
        self._monitor = threading.Thread(
            target=self._monitor_loop, name="worker-monitor", daemon=True
        )
        self._claimer.start()
        self._monitor.start()

    def stop(self, grace_seconds: float = 30.0) -> None:
        """Stop claiming; let running exports finish within the grace period, then end them."""
        self._stopping.set()
        self._claimer.join()
        deadline = time.monotonic() + grace_seconds
        with self._lock:
            while self._running and time.monotonic() < deadline:
                self._lock.wait(timeout=max(0.0, deadline - time.monotonic()))
            for running in self._running.values():
                running.cancel.cancel("worker_shutdown")
        self._pool.shutdown(wait=True)
        self._stopped.set()
        self._monitor.join()

    def run_until_signal(self, grace_seconds: float = 30.0) -> None:
        """Run until SIGTERM or SIGINT, then stop gracefully."""
        received = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: received.set())
        self.start()
        log.info("worker %s started", self.settings.worker_id)
        received.wait()
        log.info("worker %s stopping (grace %ss)", self.settings.worker_id, grace_seconds)
        self.stop(grace_seconds)

    @property
    def active(self) -> int:
        with self._lock:
            return len(self._running)

    # -- claiming ---------------------------------------------------------------------------

    def _claim_loop(self) -> None:
        settings = self.settings
        while not self._stopping.is_set():
            with self._lock:
                free = settings.concurrency - len(self._running)
                if free <= 0:
                    self._lock.wait(timeout=settings.poll_seconds)
                    continue
            try:
                claims = self.db.claim_jobs(
                    settings.worker_id, limit=free, lease_seconds=settings.lease_seconds
                )
            except Exception:
                log.exception("claiming jobs failed")
                self._stopping.wait(settings.poll_seconds)
                continue
            for claim in claims:
                self._begin(claim)
            if not claims:
                self.db.wait_for_change(settings.poll_seconds)

    def _begin(self, claim: Claim) -> None:
        running = Running(lease=claim.lease, cancel=CancelToken())
        with self._lock:
            self._running[claim.job.id] = running
        self._pool.submit(self._execute, claim, running)

    # -- one export --------------------------------------------------------------------------

    def _execute(self, claim: Claim, running: Running) -> None:
        job = claim.job
        temp: TempObject | None = None
        try:
            spec = job_spec(job)
            source = self._source(job.source)
            with self._source_slot(job.source, running.cancel):
                temp = self.objects.create_temp(
                    job.id, claim.lease.token, final_key(job.id, spec.file_name)
                )
                running.temp_key = temp.key
                running.sink = ObjectSink(temp, spec.csv, spec.limits)
                staged = run_export(spec, source, temp, running.sink, running.cancel)
            temp.publish()
            published = PublishedObject(
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
            outcome = Outcome(lease=running.lease, to_status=SUCCEEDED, published=published)
            if not self.db.finish_jobs([outcome])[0]:
                # Canceled or reaped while publishing: no object may outlive a job that did
                # not succeed.
                self.objects.delete(published.key)
                log.info("job %s ended elsewhere; its published object was deleted", job.id,
                         extra={"job_id": job.id})  # fmt: skip
        except ExportCanceledError as stop:
            self._abort(temp)
            if stop.reason in STOP_MESSAGES:
                self._fail(running, stop.reason, STOP_MESSAGES[stop.reason])
        except LimitExceededError as exc:
            self._abort(temp)
            self._fail(running, exc.code, str(exc))
        except SourceError as exc:
            self._abort(temp)
            self._fail(running, exc.code, str(exc))
        except ObjectExistsError as exc:
            self._abort(temp)
            self._fail(running, "publish_conflict", str(exc))
        except Exception:
            log.exception("job %s: export failed unexpectedly", job.id, extra={"job_id": job.id})
            self._abort(temp)
            self._fail(running, "internal_error", "the export failed; operators can see why")
        finally:
            with self._lock:
                self._running.pop(job.id, None)
                self._lock.notify_all()

    def _fail(self, running: Running, code: str, message: str) -> None:
        outcome = Outcome(
            lease=running.lease,
            to_status=FAILED,
            reason=code,
            error_code=code,
            error_message=message,
        )
        try:
            self.db.finish_jobs([outcome])
        except Exception:
            log.exception("job %s: recording the failure failed", running.lease.job_id,
                          extra={"job_id": running.lease.job_id})  # fmt: skip

    def _abort(self, temp: TempObject | None) -> None:
        if temp is None:
            return
        try:
            temp.abort()
        except Exception:
            log.exception("aborting temp object %s failed; the sweeper will remove it", temp.key)

    def _source(self, name: str) -> Source:
        config = self.catalog.sources.get(name)
        if config is None:
            raise SourceError(f"the source {name!r} is no longer in the catalog")
        with self._lock:
            if name not in self._sources:
                self._sources[name] = open_source(config)
            return self._sources[name]

    def _source_slot(self, name: str, cancel: CancelToken) -> _Slot:
        return _Slot(self._source_slots[name], cancel)

    # -- progress, leases, cancels, reaping -------------------------------------------------------

    def _monitor_loop(self) -> None:
        settings = self.settings
        last_reap = 0.0
        while not self._stopped.is_set():
            with self._lock:
                running = list(self._running.values())
            for item in running:
                self._heartbeat(item)
            if time.monotonic() - last_reap >= settings.lease_seconds / 2:
                last_reap = time.monotonic()
                try:
                    for job_id in self.db.reap_expired(
                        settings.worker_id, grace_seconds=settings.reap_grace_seconds
                    ):
                        log.warning("job %s: lease expired, failed by the reaper", job_id,
                                    extra={"job_id": job_id})  # fmt: skip
                except Exception:
                    log.exception("reaping expired leases failed")
            self._stopped.wait(settings.progress_seconds)

    def _heartbeat(self, item: Running) -> None:
        if item.cancel.cancelled:
            return
        try:
            if time.monotonic() - item.lease_renewed_at >= self.settings.lease_seconds / 3:
                item.lease = self.db.extend_lease(
                    item.lease, lease_seconds=self.settings.lease_seconds
                )
                item.lease_renewed_at = time.monotonic()
            sink = item.sink
            temp_key = None if item.temp_key_recorded else item.temp_key
            self.db.record_progress(
                item.lease,
                rows=None,
                bytes_written=sink.object_bytes if sink else 0,
                temp_key=temp_key,
            )
            item.temp_key_recorded = item.temp_key_recorded or temp_key is not None
        except StaleStatusError:
            item.cancel.cancel("stale")  # canceled by a person, or reaped: stop, end nothing
        except Exception:
            log.exception("job %s: recording progress failed", item.lease.job_id,
                          extra={"job_id": item.lease.job_id})  # fmt: skip


class _Slot:
    """A per-source slot, given up on while waiting if the export is canceled."""

    def __init__(self, semaphore: threading.BoundedSemaphore, cancel: CancelToken) -> None:
        self.semaphore = semaphore
        self.cancel = cancel

    def __enter__(self) -> None:
        while not self.semaphore.acquire(timeout=0.2):
            self.cancel.raise_if_cancelled()
        if self.cancel.cancelled:
            self.semaphore.release()
            self.cancel.raise_if_cancelled()

    def __exit__(self, *exc: object) -> None:
        self.semaphore.release()
