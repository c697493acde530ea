"""Supervised loops: transient failures are waited out, unexpected ones restart or end."""

from __future__ import annotations

import threading

from reportexport.core.loops import Supervisor
from tests.helpers import wait_for


class BlinkError(Exception):
    pass


def test_a_transient_failure_is_retried_and_then_forgotten() -> None:
    stop = threading.Event()
    calls: list[int] = []

    def step() -> float:
        calls.append(1)
        if len(calls) < 3:
            raise BlinkError("the database restarts")
        return 0.01

    loops = Supervisor(stopping=stop, transient=(BlinkError,), first_delay=0.01)
    loops.start("work", step)
    # The loop is troubled for a few hundredths of a second only: look often.
    wait_for(
        lambda: len(calls) >= 2 and loops.troubled == ["work"],
        10,
        'len(calls) >= 2 and loops.troubled == ["work"]',
        every=0.002,
    )
    wait_for(
        lambda: len(calls) >= 4 and loops.troubled == [],
        10,
        "len(calls) >= 4 and loops.troubled == []",
        every=0.002,
    )
    stop.set()
    loops.join()


def test_without_restart_an_unexpected_failure_ends_the_loop_and_tells() -> None:
    stop = threading.Event()
    crashed: list[str] = []

    def step() -> float:
        raise RuntimeError("a bug")

    loops = Supervisor(stopping=stop, transient=(BlinkError,), restart=False,
                       on_crash=lambda name, exc: crashed.append(f"{name}: {exc}"))  # fmt: skip
    thread = loops.start("work", step)
    thread.join(5)
    assert not thread.is_alive()
    assert crashed == ["work: a bug"]


def test_with_restart_an_unexpected_failure_runs_the_loop_again() -> None:
    stop = threading.Event()
    calls: list[int] = []

    def step() -> float:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug")
        return 0.01

    loops = Supervisor(stopping=stop, transient=(BlinkError,), restart=True, first_delay=0.01)
    loops.start("work", step)
    wait_for(lambda: len(calls) >= 3, 10, "len(calls) >= 3", every=0.01)
    assert loops.troubled == []
    stop.set()
    loops.join()


def test_each_loop_can_stop_on_its_own_event() -> None:
    stop, early = threading.Event(), threading.Event()
    loops = Supervisor(stopping=stop, transient=(BlinkError,))
    first = loops.start("first", lambda: 0.01, until=early)
    second = loops.start("second", lambda: 0.01)
    early.set()
    first.join(5)
    assert (first.is_alive(), second.is_alive()) == (False, True)
    stop.set()
    loops.join()
