"""The effects runner: carries out the side-effect rows written with terminal transitions.

Rows are claimed with a lease and a token, like jobs, so several runners on several machines
never handle one row at once; a runner that dies leaves its claim to expire and the row is
handled again, by idempotent handlers, with the same webhook-id. Attempts, the next attempt
time and the last error are numbers, timestamps and text on the row.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from frozen_lifecycle.graph import Graph
from reportexport.core.lifecycle import Effect
from reportexport.core.loops import Supervisor, record_stop
from reportexport.core.records import ClaimedEffect, Heartbeat
from reportexport.core.settings import default
from reportexport.runners.effects.backoff import RetryPolicy
from reportexport.runners.effects.handlers import (
    HANDLERS,
    Context,
    Handler,
    Outcome,
    StoppingError,
    check_handlers,
)
from reportexport.store import EffectStore, Heartbeats, JobStore, TransientStoreError

log = logging.getLogger("reportexport.effects")


@dataclass(frozen=True, kw_only=True)
class RunnerSettings:
    runner_id: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}-effects")
    batch: int = default("effects_batch")
    heartbeat_seconds: float = 5.0
    claim_seconds: float = default("effects_claim_seconds")
    poll_seconds: float = 1.0
    policy: RetryPolicy = field(default_factory=RetryPolicy)


class RunnerStore(Protocol):
    """The job store's roles an effects runner uses (a `Database` has them all)."""

    @property
    def effects(self) -> EffectStore: ...

    @property
    def jobs(self) -> JobStore: ...

    @property
    def heartbeats(self) -> Heartbeats: ...


class EffectsRunner:
    def __init__(
        self,
        store: RunnerStore,
        context: Context,
        graph: Graph,
        settings: RunnerSettings | None = None,
        *,
        handlers: Mapping[Effect, Handler] = HANDLERS,
        clock: Callable[[], datetime] | None = None,
        rng: random.Random | None = None,
        restart_loops: bool = True,
    ) -> None:
        """`restart_loops`: restart the loop after an unexpected failure (`serve`), or end it
        and let `run_until_signal` return 1 (a supervised `effects` process)."""
        check_handlers(graph, handlers)
        self.effects = store.effects
        self.jobs = store.jobs
        self.heartbeats = store.heartbeats
        self.context = context
        self.settings = settings or RunnerSettings()
        self.handlers = handlers
        self.clock = clock or context.clock
        self.rng = rng or random.Random()
        # Handlers that keep a backoff per destination use the runner's own.
        context.policy = self.settings.policy
        context.rng = self.rng
        self.started_at = datetime.now(UTC)
        self._stop = context.stopping  # handlers see the runner stopping
        self._crashed = threading.Event()
        self._last_beat = 0.0
        self.loops = Supervisor(
            stopping=self._stop,
            transient=(TransientStoreError,),
            restart=restart_loops,
            on_crash=self._on_crash,
        )

    def run_once(self) -> int:
        """Claim the due rows and handle them; how many were handled."""
        now = self.clock()
        claims = self.effects.claim_side_effects(
            self.settings.runner_id,
            limit=self.settings.batch,
            now=now,
            claim_until=now + timedelta(seconds=self.settings.claim_seconds),
        )
        handled = 0
        for claimed in claims:
            if self._stop.is_set():
                break  # the rest are handled again once their claims expire
            try:
                self._handle(claimed)
            except StoppingError:
                break
            handled += 1
        return handled

    def start(self) -> None:
        """Run in a supervised thread until `stop`: database outages are waited out."""
        self.loops.start("effects", self._step)

    def _step(self) -> float:
        handled = self.run_once()
        if time.monotonic() - self._last_beat >= self.settings.heartbeat_seconds:
            self.heartbeats.beat(self.heartbeat())
            self._last_beat = time.monotonic()
        return 0.0 if handled else self.settings.poll_seconds

    def heartbeat(self) -> Heartbeat:
        return Heartbeat(
            process=self.settings.runner_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            kind="effects",
            started_at=self.started_at,
        )

    def run_until_signal(self) -> int:
        """Run until SIGTERM or SIGINT (0), or until the loop cannot go on (1)."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: self._stop.set())
        log.info("effects runner %s started", self.settings.runner_id)
        self.start()
        self._stop.wait()
        self.loops.join()
        record_stop(self.heartbeats, self.settings.runner_id)
        if self._crashed.is_set():
            log.critical(
                "effects runner %s stopped because its loop cannot continue; its supervisor "
                "should start it again",
                self.settings.runner_id,
            )
            return 1
        return 0

    def stop(self) -> None:
        self._stop.set()
        self.loops.join()
        record_stop(self.heartbeats, self.settings.runner_id)

    def _on_crash(self, loop: str, exc: BaseException) -> None:
        self._crashed.set()
        self._stop.set()

    def _handle(self, claimed: ClaimedEffect) -> None:
        effect = claimed.effect
        job = self.jobs.get_job(effect.job_id).job
        try:
            outcome = self.handlers[effect.effect](self.context, job, effect)
        except (TransientStoreError, StoppingError):
            raise  # not an attempt: the claim expires and the row is handled again
        except Exception as exc:
            log.exception("job %s: side effect %s failed", effect.job_id, effect.effect,
                          extra={"job_id": effect.job_id, "effect": effect.effect})  # fmt: skip
            outcome = Outcome(done=False, note=f"{type(exc).__name__}: {exc}"[:1000])
        now = self.clock()
        if outcome.done:
            self.effects.complete_side_effect(claimed, now=now, note=outcome.note)
            return
        attempts = effect.attempts + 1
        if outcome.due_in is not None or outcome.give_up:
            give_up = outcome.give_up
            next_attempt_at = now + timedelta(seconds=outcome.due_in or 0.0)
        else:
            give_up = self.settings.policy.gives_up(attempts, effect.redrives)
            delay = self.settings.policy.delay(attempts, self.rng, outcome.retry_after)
            next_attempt_at = now + timedelta(seconds=delay)
        self.effects.retry_side_effect(
            claimed,
            now=now,
            error=outcome.note or "failed",
            next_attempt_at=next_attempt_at,
            give_up=give_up,
        )
        if give_up:
            log.error("job %s: side effect %s given up after %s attempts",
                      effect.job_id, effect.effect, attempts,
                      extra={"job_id": effect.job_id, "effect": effect.effect})  # fmt: skip
