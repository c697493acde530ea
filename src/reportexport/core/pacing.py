"""Pacing claims by the health of what exports need: the object store and each source.

An export that fails because its object store refused a write or its source could not be
reached is an infrastructure failure, not a fault of the job. After `limit` such failures in a
row against one dependency, claiming the jobs that need it pauses (the rest of the queue waits
as it is, `queued`) and the dependency is probed with backoff. A good probe half-opens it: one
job goes through (a held one, or one claim) and a failure pauses again at once (that job is
held, not failed); a success closes it. While failures are counting up, claims are held so
that no more than `limit` jobs can fail against one dependency even if every export in flight
fails too; and an export in flight that fails against a dependency whose budget is spent is
not failed (`failed` answers False) but held, to run again on its own lease once the
dependency is back (`may_resume`). The export that takes the trial (a held one that may
resume, or one freshly claimed: `started`) holds it until its attempt ends, however it ends
(`release_trial`): a trial that proved nothing (a cancel, a query error, a conflict) lets the
next one try, so a worker never stops claiming for good. While a trial runs, claiming of what
it needs stays held and shows as paused. Probes are spaced by the project's `Backoff`, from
`first_probe_seconds` doubling to `max_probe_seconds`, by the count of probes failed in a row.

Pure logic with an injected clock; the worker does the I/O.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reportexport.core.records import PauseReason
from reportexport.core.retry import Backoff

STORAGE = ""  # the key of the object store; sources are keyed by name (never empty)


@dataclass
class _Health:
    failures: int = 0
    paused_since: float | None = None
    probe_at: float = 0.0
    probes_failed: int = 0  # in a row since the pause began: the next probe's backoff
    trial: bool = False  # half-open after a good probe: one job may go through
    trial_holder: object = None  # the export running the trial (held, or freshly claimed)


@dataclass(frozen=True, kw_only=True)
class ClaimPlan:
    limit: int
    excluded_sources: tuple[str, ...]


class Pacing:
    def __init__(
        self,
        *,
        limit: int = 3,
        first_probe_seconds: float = 1.0,
        max_probe_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.probe_backoff = Backoff(first=first_probe_seconds, ceiling=max_probe_seconds)
        self.clock = clock
        self._health: dict[str, _Health] = {}
        self._lock = threading.Lock()  # exports end on their own threads

    def failed(self, key: str) -> bool:
        """An export failed against `key`: one more in a row; at `limit`, pause. True if the
        failure is within the budget (the job may be failed), False if `limit` failures were
        counted already or it was the half-open trial (the job is held until `may_resume`):
        however long an outage lasts, at most `limit` jobs fail of it."""
        with self._lock:
            health = self._health.setdefault(key, _Health())
            charged = health.failures < self.limit and not health.trial
            health.failures = min(health.failures + 1, self.limit)
            health.trial, health.trial_holder = False, None
            if health.failures >= self.limit and health.paused_since is None:
                health.paused_since = self.clock()
                health.probes_failed = 0
                health.probe_at = health.paused_since + self.probe_backoff.wait(1)
            return charged

    def probe_succeeded(self, key: str) -> None:
        """A probe went through `key`: half-open, one job may try it (a failure pauses again)."""
        with self._lock:
            if key in self._health:
                self._health[key] = _Health(failures=self.limit - 1, trial=True)

    def may_resume(self, key: str, holder: object) -> bool:
        """May the export `holder`, held over `key`, run again now? Yes once it is healthy;
        when half-open, the first one asking takes the trial until `release_trial`."""
        with self._lock:
            health = self._health.get(key)
            if health is None:
                return True
            if health.trial and health.trial_holder in (None, holder):
                health.trial_holder = holder
                return True
            return False

    def started(self, key: str, holder: object) -> None:
        """The export `holder`, freshly claimed, needs `key`: when `key` is half-open with its
        trial free, this export is its trial (claims of `key` held, and shown as a pause with
        its reason) until its verdict or `release_trial`."""
        with self._lock:
            health = self._health.get(key)
            if health is not None and health.trial and health.trial_holder is None:
                health.trial_holder = holder

    def release_trial(self, key: str, holder: object) -> None:
        """The attempt of `holder` ended: if it still holds the trial of `key` (it neither
        succeeded nor failed against it), the next export may take the trial."""
        with self._lock:
            health = self._health.get(key)
            if health is not None and health.trial_holder == holder:
                health.trial_holder = None

    def succeeded(self, key: str) -> None:
        """An export (or a probe) went through `key`: its count starts again."""
        with self._lock:
            self._health.pop(key, None)

    def probe_failed(self, key: str) -> None:
        with self._lock:
            health = self._health[key]
            health.probes_failed += 1
            health.probe_at = self.clock() + self.probe_backoff.wait(health.probes_failed + 1)

    def due_probes(self) -> list[str]:
        """The paused dependencies whose probe is due (a running trial is their probe)."""
        now = self.clock()
        with self._lock:
            return [
                key
                for key, health in self._health.items()
                if health.paused_since is not None and health.probe_at <= now
            ]

    def paused(self) -> dict[str, float]:
        """Each dependency whose jobs are not claimed now and when it is next probed
        (monotonic seconds): paused, or half-open with its trial running (probed by that
        trial, so due at once)."""
        with self._lock:
            return {
                key: health.probe_at
                for key, health in self._health.items()
                if health.paused_since is not None or health.trial_holder is not None
            }

    def _held(self, health: _Health) -> bool:
        return health.paused_since is not None or health.trial_holder is not None

    @property
    def pause_reason(self) -> PauseReason | None:
        paused = self.paused()
        if STORAGE in paused:
            return "storage_unavailable"
        return "source_unavailable" if paused else None

    def plan(self, free: int, in_flight: Mapping[str, int]) -> ClaimPlan:
        """How many jobs may be claimed now, and of which sources not, given the exports in
        flight per source."""
        with self._lock:
            storage = self._health.get(STORAGE)
            limit = free
            if storage is not None and self._held(storage):
                limit = 0
            elif storage is not None:  # even if every export in flight fails, stay within
                limit = self.limit - storage.failures - sum(in_flight.values())
            excluded = tuple(
                sorted(
                    key
                    for key, health in self._health.items()
                    if key != STORAGE
                    and (
                        self._held(health) or health.failures + in_flight.get(key, 0) >= self.limit
                    )
                )
            )
        return ClaimPlan(limit=max(0, min(free, limit)), excluded_sources=excluded)
