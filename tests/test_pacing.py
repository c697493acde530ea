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


def test_the_defaults_pause_after_three_and_probe_from_one_second_to_a_minute() -> None:
    clock = Clock()
    paced = Pacing(clock=clock)
    for _ in range(2):
        paced.failed("demo")
    assert paced.paused() == {}
    paced.failed("demo")
    assert paced.paused() == {"demo": 101.0}
    for _ in range(10):
        paced.probe_failed("demo")
    assert paced.paused() == {"demo": 160.0}


def test_a_success_of_a_dependency_never_seen_failing_is_no_error() -> None:
    paced, _ = pacing()
    paced.succeeded("never_failed")
    assert paced.plan(2, {}) == ClaimPlan(limit=2, excluded_sources=())


def test_failures_past_the_budget_are_not_charged_and_hold_their_job() -> None:
    paced, _ = pacing(limit=2)
    assert paced.failed(STORAGE) is True
    assert paced.failed(STORAGE) is True
    # paused: the exports still in flight that fail now are held, not failed
    assert [paced.failed(STORAGE) for _ in range(5)] == [False] * 5
    assert paced.may_resume(STORAGE) is False


def test_a_good_probe_half_opens_one_job_through_and_a_failure_pauses_again() -> None:
    paced, clock = pacing(limit=3)
    for _ in range(3):
        paced.failed(STORAGE)
    clock.now += 1
    paced.probe_succeeded(STORAGE)
    assert paced.pause_reason is None
    assert paced.plan(4, {}).limit == 1  # one claim may try it
    assert paced.plan(4, {"demo": 1}).limit == 0  # one in flight already tries it
    assert paced.may_resume(STORAGE) is True  # a held export takes the trial
    assert paced.may_resume(STORAGE) is False  # and only one
    assert paced.plan(4, {}).limit == 0
    assert paced.failed(STORAGE) is False  # the trial fails: held, and paused again at once
    assert STORAGE in paced.paused()
    assert paced.failed(STORAGE) is False


def test_a_good_trial_closes_the_pause_for_everyone() -> None:
    paced, _ = pacing(limit=3)
    for _ in range(3):
        paced.failed(STORAGE)
    paced.probe_succeeded(STORAGE)
    assert paced.may_resume(STORAGE) is True
    paced.succeeded(STORAGE)
    assert paced.may_resume(STORAGE) is True
    assert paced.may_resume(STORAGE) is True
    assert paced.plan(4, {}).limit == 4
