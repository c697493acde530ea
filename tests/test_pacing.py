"""Pacing claims by the health of the object store and of each source (an injected clock)."""

from __future__ import annotations

from reportexport.pacing import STORAGE, ClaimPlan, Pacing


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def pacing(limit: int = 3) -> tuple[Pacing, Clock]:
    clock = Clock()
    return Pacing(limit=limit, first_probe_seconds=1, max_probe_seconds=8, clock=clock), clock


def test_healthy_dependencies_hold_nothing_back() -> None:
    paced, _ = pacing()
    assert paced.plan(4, {"demo": 2}) == ClaimPlan(limit=4, excluded_sources=())
    assert paced.pause_reason is None


def test_storage_failures_hold_claims_so_at_most_the_limit_can_fail() -> None:
    paced, _ = pacing(limit=3)
    paced.failed(STORAGE)
    # one failed, two in flight that may fail too: nothing more may start
    assert paced.plan(4, {"demo": 2}).limit == 0
    assert paced.plan(4, {"demo": 1}).limit == 1
    paced.failed(STORAGE)
    paced.failed(STORAGE)
    assert paced.plan(4, {}).limit == 0
    assert paced.pause_reason == "storage_unavailable"


def test_a_success_starts_the_count_again() -> None:
    paced, _ = pacing(limit=3)
    paced.failed(STORAGE)
    paced.failed(STORAGE)
    paced.succeeded(STORAGE)
    assert paced.plan(4, {}).limit == 4


def test_a_paused_source_keeps_its_jobs_queued_and_only_its_own() -> None:
    paced, _ = pacing(limit=2)
    paced.failed("demo")
    assert paced.plan(4, {"demo": 1}) == ClaimPlan(limit=4, excluded_sources=("demo",))
    assert paced.plan(4, {}).excluded_sources == ()
    paced.failed("demo")
    assert paced.plan(4, {}) == ClaimPlan(limit=4, excluded_sources=("demo",))
    assert paced.pause_reason == "source_unavailable"


def test_probes_back_off_and_a_good_probe_resumes() -> None:
    paced, clock = pacing(limit=1)
    paced.failed(STORAGE)
    assert paced.due_probes() == []
    clock.now += 1
    assert paced.due_probes() == [STORAGE]
    delays = []
    for _ in range(5):
        before = clock.now
        paced.probe_failed(STORAGE)
        delays.append(paced.paused()[STORAGE] - before)
        clock.now = paced.paused()[STORAGE]
    assert delays == [2, 4, 8, 8, 8]  # doubling, capped
    paced.succeeded(STORAGE)
    assert (paced.paused(), paced.pause_reason) == ({}, None)
