"""Long-running loops that outlive the infrastructure, and say so when they cannot.

A loop is a step run again and again, each step saying how long to wait before the next. A
step that meets a transient failure (the job store restarting, a lock timeout) is retried with
backoff, for as long as it takes. A step that fails in a way nobody foresaw (a bug) either
restarts the loop with backoff (`restart=True`: `serve`, which has no supervisor of its own)
or ends it and calls `on_crash` (a standalone `worker` or `effects`, whose supervisor restarts
the process). Either way no thread dies silently inside a live process, and `troubled` names
the loops that are failing right now.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from reportexport.core.retry import Backoff

log = logging.getLogger("reportexport.loops")

Step = Callable[[], float]


class StopLog(Protocol):
    def stopped(self, process: str) -> None: ...


def record_stop(heartbeats: StopLog, process: str) -> None:
    """Mark a process's heartbeat stopped as it ends cleanly. A store that does not answer
    then leaves the heartbeat to go stale, as a process that died does, with a warning: the
    process ends either way."""
    try:
        heartbeats.stopped(process)
    except Exception as exc:
        log.warning("could not record that %s stopped: %s", process, exc)


@dataclass
class _State:
    failing_since: int = 0  # consecutive failed steps
    crashes: int = 0


@dataclass
class Supervisor:
    """Runs named loops in threads until `stopping` is set."""

    stopping: threading.Event
    transient: tuple[type[BaseException], ...]
    restart: bool = True
    on_crash: Callable[[str, BaseException], None] | None = None
    first_delay: float = 0.5
    max_delay: float = 30.0
    threads: dict[str, threading.Thread] = field(default_factory=dict)
    _states: dict[str, _State] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(
        self,
        name: str,
        step: Step,
        *,
        until: threading.Event | None = None,
        max_delay: float | None = None,
    ) -> threading.Thread:
        """Run `step` in a thread until `until` (default: `stopping`) is set; a failing step
        is retried after a delay that doubles up to `max_delay`."""
        thread = threading.Thread(
            target=self._run,
            args=(name, step, until or self.stopping, max_delay or self.max_delay),
            name=name,
            daemon=True,
        )
        with self._lock:
            self._states[name] = _State()
            self.threads[name] = thread
        thread.start()
        return thread

    def join_loop(self, name: str, timeout: float | None = None) -> None:
        thread = self.threads.get(name)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def join(self, timeout: float | None = None) -> None:
        for name in list(self.threads):
            self.join_loop(name, timeout)

    @property
    def troubled(self) -> list[str]:
        """Loops whose last step failed, or that crashed and were restarted lately."""
        with self._lock:
            return sorted(name for name, state in self._states.items() if state.failing_since)

    def _run(self, name: str, step: Step, until: threading.Event, max_delay: float) -> None:
        backoff = Backoff(first=self.first_delay, ceiling=max_delay)
        failures = 0
        while not until.is_set():
            try:
                wait = step()
            except self.transient as exc:
                self._failed(name)
                failures += 1
                wait = backoff.wait(failures)
                log.warning("%s: %s; trying again in %.1f s", name, exc, wait)
            except Exception as exc:
                self._failed(name, crashed=True)
                if not self.restart:
                    log.critical("%s stopped on an unexpected error", name, exc_info=exc)
                    if self.on_crash is not None:
                        self.on_crash(name, exc)
                    return
                failures += 1
                wait = backoff.wait(failures)
                log.error("%s failed unexpectedly; restarting it in %.1f s", name, wait)
                log.error("%s: the failure", name, exc_info=exc)
            else:
                self._succeeded(name)
                failures = 0
            until.wait(max(0.0, wait))

    def _failed(self, name: str, *, crashed: bool = False) -> None:
        with self._lock:
            state = self._states[name]
            state.failing_since += 1
            state.crashes += int(crashed)

    def _succeeded(self, name: str) -> None:
        with self._lock:
            self._states[name].failing_since = 0
