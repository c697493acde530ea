"""Pacing claims by the health of the object store and of each source (an injected clock)."""

from __future__ import annotations

from reportexport.core.pacing import STORAGE, ClaimPlan, Pacing


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
    assert paced.may_resume(STORAGE, 1) is False


def test_a_good_probe_half_opens_one_job_through_and_a_failure_pauses_again() -> None:
    paced, clock = pacing(limit=3)
    for _ in range(3):
        paced.failed(STORAGE)
    clock.now += 1
    paced.probe_succeeded(STORAGE)
    assert paced.pause_reason is None
    assert paced.plan(4, {}).limit == 1  # one claim may try it
    assert paced.plan(4, {"demo": 1}).limit == 0  # one in flight already tries it
    assert paced.may_resume(STORAGE, 1) is True  # a held export takes the trial
    assert paced.may_resume(STORAGE, 2) is False  # and only one
    assert paced.plan(4, {}).limit == 0
    assert paced.failed(STORAGE) is False  # the trial fails: held, and paused again at once
    assert STORAGE in paced.paused()
    assert paced.failed(STORAGE) is False


def test_a_good_trial_closes_the_pause_for_everyone() -> None:
    paced, _ = pacing(limit=3)
    for _ in range(3):
        paced.failed(STORAGE)
    paced.probe_succeeded(STORAGE)
    assert paced.may_resume(STORAGE, 1) is True
    paced.succeeded(STORAGE)
    assert paced.may_resume(STORAGE, 2) is True
    assert paced.may_resume(STORAGE, 3) is True
    assert paced.plan(4, {}).limit == 4


def test_a_trial_that_ends_without_a_verdict_lets_the_next_export_try() -> None:
    """A held export took the trial, then ended otherwise (a cancel, a query error, a leftover
    object): the trial is released, the next held export may take it, and claims resume."""
    paced, _ = pacing(limit=3)
    for _ in range(3):
        paced.failed(STORAGE)
    paced.probe_succeeded(STORAGE)
    assert paced.may_resume(STORAGE, 7) is True
    assert paced.may_resume(STORAGE, 8) is False
    paced.release_trial(STORAGE, 8)  # not its trial: nothing changes
    assert paced.may_resume(STORAGE, 9) is False
    paced.release_trial(STORAGE, 7)
    assert paced.plan(4, {}).limit == 1  # half-open again: one claim may try it
    assert paced.may_resume(STORAGE, 8) is True
    assert paced.may_resume(STORAGE, 8) is True  # the holder asking again keeps it
    assert paced.may_resume(STORAGE, 9) is False


def test_a_released_trial_of_a_source_readmits_its_jobs() -> None:
    paced, _ = pacing(limit=2)
    for _ in range(2):
        paced.failed("demo")
    paced.probe_succeeded("demo")
    assert paced.may_resume("demo", 1) is True
    assert paced.plan(4, {}).excluded_sources == ("demo",)
    paced.release_trial("demo", 1)
    assert paced.plan(4, {}).excluded_sources == ()
    assert paced.plan(4, {"demo": 1}).excluded_sources == ("demo",)


def test_releasing_after_a_verdict_changes_nothing() -> None:
    """A trial that failed pauses again; its release afterwards must not reopen the pause, nor
    take a later trial from the export that holds it."""
    paced, clock = pacing(limit=3)
    for _ in range(3):
        paced.failed(STORAGE)
    paced.probe_succeeded(STORAGE)
    assert paced.may_resume(STORAGE, 1) is True
    assert paced.failed(STORAGE) is False
    paced.release_trial(STORAGE, 1)
    assert STORAGE in paced.paused()
    assert paced.plan(4, {}).limit == 0
    clock.now += 10
    paced.probe_succeeded(STORAGE)
    assert paced.may_resume(STORAGE, 2) is True
    paced.release_trial(STORAGE, 1)
    assert paced.may_resume(STORAGE, 3) is False
    paced.succeeded(STORAGE)
    paced.release_trial(STORAGE, 2)
    assert paced.plan(4, {}).limit == 4


def test_a_running_trial_shows_as_a_pause_with_its_reason_and_is_not_probed() -> None:
    """While the trial export runs, nothing else of the store is claimed: the heartbeat says
    so (paused, and why); the trial is the probe, so no other probe is due."""
    paced, clock = pacing(limit=3)
    for _ in range(3):
        paced.failed(STORAGE)
    clock.now += 5
    paced.probe_succeeded(STORAGE)
    assert paced.pause_reason is None
    assert paced.may_resume(STORAGE, 1) is True
    assert paced.pause_reason == "storage_unavailable"
    assert STORAGE in paced.paused()
    clock.now += 100
    assert paced.due_probes() == []
    paced.release_trial(STORAGE, 1)
    assert paced.pause_reason is None


def test_a_freshly_claimed_export_that_takes_the_trial_shows_as_a_pause() -> None:
    """Nothing was held over the pause, so after a good probe the trial goes to a claim: while
    it runs, nothing more of the store is claimed, no held export takes a second trial, and the
    heartbeat's fields say paused and why. The trial is the probe: none other is due."""
    paced, clock = pacing(limit=3)
    for _ in range(3):
        paced.failed(STORAGE)
    clock.now += 5
    paced.probe_succeeded(STORAGE)
    assert paced.plan(4, {}).limit == 1
    paced.started(STORAGE, 7)
    assert paced.pause_reason == "storage_unavailable"
    assert STORAGE in paced.paused()
    assert paced.plan(4, {}).limit == 0
    assert paced.may_resume(STORAGE, 8) is False
    paced.started(STORAGE, 9)  # a second claim (made at the same moment) is no second trial
    paced.release_trial(STORAGE, 9)
    assert paced.pause_reason == "storage_unavailable"
    clock.now += 100
    assert paced.due_probes() == []
    paced.release_trial(STORAGE, 7)  # ended without a verdict: the next may try
    assert paced.pause_reason is None
    assert paced.may_resume(STORAGE, 8) is True


def test_a_claim_of_a_healthy_or_counting_dependency_takes_no_trial() -> None:
    paced, _ = pacing(limit=3)
    paced.started(STORAGE, 1)
    paced.started("demo", 1)
    paced.failed("demo")
    paced.started("demo", 2)
    assert (paced.paused(), paced.pause_reason) == ({}, None)
    assert paced.plan(4, {}) == ClaimPlan(limit=4, excluded_sources=())


def test_a_claimed_trial_of_a_source_shows_that_source_paused() -> None:
    paced, _ = pacing(limit=2)
    for _ in range(2):
        paced.failed("demo")
    paced.probe_succeeded("demo")
    assert paced.plan(4, {}).excluded_sources == ()
    paced.started("demo", 3)
    assert (list(paced.paused()), paced.pause_reason) == (["demo"], "source_unavailable")
    assert paced.plan(4, {}).excluded_sources == ("demo",)
    paced.succeeded("demo")
    assert (paced.paused(), paced.pause_reason) == ({}, None)


def test_each_pause_probes_from_the_first_delay_again() -> None:
    """The probe backoff counts the probes failed since this pause began: a trial that fails
    pauses again, probed after the first delay, not after the last one."""
    paced, clock = pacing(limit=1)
    paced.failed(STORAGE)
    for _ in range(4):
        paced.probe_failed(STORAGE)
    assert paced.paused()[STORAGE] - clock.now == 8
    paced.probe_succeeded(STORAGE)
    assert paced.may_resume(STORAGE, 1) is True
    assert paced.failed(STORAGE) is False
    assert paced.paused()[STORAGE] - clock.now == 1
    paced.probe_failed(STORAGE)
    assert paced.paused()[STORAGE] - clock.now == 2
