"""A Hypothesis state machine drives random operations against a model of the graph.

Store operations and raw SQL updates are both tried; the database must accept exactly what
the fixture allows, and every job's history and side effects must match the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from reportexport.core.job_status import TransitionError, check_transition
from reportexport.store import (
    Database,
    JobNotFoundError,
    Lease,
    Outcome,
    StaleStatusError,
)
from tests.helpers import GRAPH, RawSql, new_job

ACTORS = [*GRAPH.actors, "robot", None]
# gate: allow forbidden-alias, states-invented -- a target the store must refuse
TARGETS = [*GRAPH.states, "retrying"]


@dataclass
class ModelJob:
    status: str
    turn: int  # how many unfinished jobs its owner had when it was made: claims go by turn
    transitions: int = 0
    leases: list[Lease] = field(default_factory=list)


def make_machine(db: Database, raw: RawSql) -> type[RuleBasedStateMachine]:
    class StoreMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.jobs: dict[int, ModelJob] = {}

        def teardown(self) -> None:
            """Leave nothing claimable, so the next example starts from the same state."""
            for job_id, model in self.jobs.items():
                if not GRAPH.is_terminal(model.status):
                    db.jobs.cancel_job(job_id, person="teardown")  # type: ignore[arg-type]

        def ids(self) -> list[int]:
            return sorted(self.jobs)

        def moved(self, job_id: int, to_status: str) -> None:
            self.jobs[job_id].status = to_status
            self.jobs[job_id].transitions += 1

        @rule()
        def create(self) -> None:
            job = db.jobs.create_job(new_job(owner="model"))[0]
            unfinished = sum(not GRAPH.is_terminal(m.status) for m in self.jobs.values())
            self.jobs[job.id] = ModelJob(status=GRAPH.initial, turn=unfinished)

        @rule(limit=st.integers(1, 3), expired=st.booleans())
        def claim(self, limit: int, expired: bool) -> None:
            claims = db.queue.claim_jobs("w", limit=limit, lease_seconds=-1 if expired else 600)
            mine = [c for c in claims if c.job.id in self.jobs]
            assert len(mine) == len(claims), "claimed a job of an earlier example"
            queued = [i for i in self.ids() if self.jobs[i].status == GRAPH.initial]
            queued.sort(key=lambda i: (self.jobs[i].turn, i))  # one owner: turn, then age
            # Which jobs are claimed follows the turns; the order they come back in is the ids'.
            assert sorted(c.job.id for c in claims) == sorted(queued[:limit])
            for c in claims:
                self.moved(c.job.id, "running")
                self.jobs[c.job.id].leases.append(c.lease)

        @rule(data=st.data(), to_status=st.sampled_from(GRAPH.states), stale=st.booleans())
        def finish(self, data: st.DataObject, to_status: str, stale: bool) -> None:
            leased = [i for i in self.ids() if self.jobs[i].leases]
            if not leased:
                return
            job = self.jobs[data.draw(st.sampled_from(leased))]
            lease = job.leases[0] if stale else job.leases[-1]
            try:
                check_transition("running", to_status, "worker", graph=GRAPH)
            except TransitionError:
                try:
                    db.queue.finish_jobs([Outcome(lease=lease, to_status=to_status)])
                except TransitionError:
                    return
                raise AssertionError("finish accepted an edge the graph lacks") from None
            ok = db.queue.finish_jobs([Outcome(lease=lease, to_status=to_status)])
            should = job.status == "running" and lease == job.leases[-1]
            assert ok == [should]
            if should:
                self.moved(lease.job_id, to_status)

        @rule(data=st.data())
        def cancel(self, data: st.DataObject) -> None:
            if not self.jobs:
                return
            job_id = data.draw(st.sampled_from(self.ids()))
            before = self.jobs[job_id].status
            try:
                db.jobs.cancel_job(job_id, person="model")
            except TransitionError:
                assert GRAPH.is_terminal(before)
                return
            assert not GRAPH.is_terminal(before)
            self.moved(job_id, "canceled")

        @rule()
        def reap(self) -> None:
            reaped = set(db.queue.reap_expired("reaper", grace_seconds=0))
            for job_id in reaped:
                assert self.jobs[job_id].status == "running"
                self.moved(job_id, "failed")

        @rule(data=st.data(), to_status=st.sampled_from(TARGETS), actor=st.sampled_from(ACTORS))
        def raw_update(self, data: st.DataObject, to_status: str, actor: str | None) -> None:
            if not self.jobs:
                return
            job_id = data.draw(st.sampled_from(self.ids()))
            current = self.jobs[job_id].status
            actor_sql = "NULL" if actor is None else f"'{actor}'"
            statement = (
                f"UPDATE jobs SET status = '{to_status}', change_actor = {actor_sql} "
                f"WHERE id = {job_id}"
            )
            try:
                check_transition(current, to_status, actor or "", graph=GRAPH)
                allowed = current != to_status
            except TransitionError:
                allowed = current == to_status  # an update that keeps the status is no change
            if allowed:
                raw.execute(statement)
                if current != to_status:
                    self.moved(job_id, to_status)
            else:
                with pytest.raises(raw.errors):
                    raw.execute(statement)

        @invariant()
        def database_matches_the_model(self) -> None:
            for job_id, model in self.jobs.items():
                try:
                    detail = db.jobs.get_job(job_id)  # type: ignore[arg-type]
                except JobNotFoundError:
                    raise AssertionError(f"job {job_id} vanished") from None
                assert detail.job.status == model.status
                assert len(detail.history) == model.transitions
                effects = [e.effect for e in detail.side_effects]
                assert effects == list(GRAPH.side_effects.get(model.status, ()))
                assert (detail.job.finished_at is not None) == GRAPH.is_terminal(model.status)

    return StoreMachine


@pytest.mark.slow
def test_random_operations_follow_the_graph(db: Database, raw: RawSql) -> None:
    machine = make_machine(db, raw)
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=30,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_stale_status_error_names_the_job() -> None:
    assert "job 7 is no longer running" in str(StaleStatusError(7, "running"))
