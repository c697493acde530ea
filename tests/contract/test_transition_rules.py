"""Beyond the case study: every (from, to, actor) triple, error codes and job shapes."""

from __future__ import annotations

import dataclasses
import itertools
from types import MappingProxyType
from typing import Any

import pytest

from reportexport.core.job_status import (
    STATES,
    ActorError,
    IllegalTransitionError,
    TerminalStateError,
    TransitionError,
    apply_transition,
    can_transition,
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FrozenJob:
    id: str
    status: str


def test_every_triple_agrees_with_the_fixture(graph: dict[str, Any]) -> None:
    """apply_transition accepts exactly the fixture's (from, to, actor) triples."""
    declared = {(e["from"], e["to"], e["actor"]) for e in graph["transitions"]}
    actors = {e["actor"] for e in graph["transitions"]} | {"operator"}
    for from_status, to_status, actor in itertools.product(graph["states"], STATES, actors):
        job = {"id": "job_1", "status": from_status}
        if (from_status, to_status, actor) in declared:
            assert apply_transition(job, to_status, actor)["status"] == to_status
        else:
            with pytest.raises(TransitionError):
                apply_transition(job, to_status, actor)


@pytest.mark.parametrize(
    ("status", "to_status", "actor", "code", "error_type"),
    [
        ("succeeded", "running", "worker", "terminal:succeeded", TerminalStateError),
        ("canceled", "queued", "user", "terminal:canceled", TerminalStateError),
        ("queued", "succeeded", "worker", "illegal:queued->succeeded", IllegalTransitionError),
        ("running", "queued", "worker", "illegal:running->queued", IllegalTransitionError),
        ("running", "canceled", "worker", "actor:worker", ActorError),
        ("queued", "running", "user", "actor:user", ActorError),
    ],
)
def test_errors_carry_the_case_study_codes(
    status: str, to_status: str, actor: str, code: str, error_type: type[TransitionError]
) -> None:
    with pytest.raises(error_type) as raised:
        apply_transition({"id": "job_1", "status": status}, to_status, actor)
    assert str(raised.value) == code
    assert raised.value.code == code


@pytest.mark.parametrize(
    ("status", "to_status"),
    # gate: allow forbidden-alias, states-invented -- words the rules must refuse
    [("retrying", "running"), ("queued", "retrying"), ("", "running"), ("QUEUED", "running")],
)
def test_unknown_statuses_are_rejected_not_crashed_on(status: str, to_status: str) -> None:
    assert can_transition(status, to_status) is False
    with pytest.raises(IllegalTransitionError):
        apply_transition({"status": status}, to_status)


def test_apply_transition_returns_a_new_mapping_and_leaves_the_argument_alone() -> None:
    job = {"id": "job_1", "status": "queued", "rows": 0}
    moved = apply_transition(job, "running")
    assert moved == {"id": "job_1", "status": "running", "rows": 0}
    assert job["status"] == "queued"
    assert moved is not job


def test_apply_transition_accepts_a_read_only_mapping() -> None:
    job = MappingProxyType({"id": "job_1", "status": "queued"})
    assert apply_transition(job, "canceled", "user")["status"] == "canceled"
    assert job["status"] == "queued"


def test_apply_transition_replaces_a_frozen_dataclass() -> None:
    job = FrozenJob(id="job_1", status="running")
    moved = apply_transition(job, "succeeded")
    assert moved == FrozenJob(id="job_1", status="succeeded")
    assert job.status == "running"


def test_apply_transition_refuses_a_job_without_a_status() -> None:
    with pytest.raises(TypeError, match="no string status"):
        apply_transition({"id": "job_1"}, "running")
    with pytest.raises(TypeError, match="need a mapping or a dataclass"):
        apply_transition(type("Job", (), {"status": "queued"})(), "running")


def test_terminal_check_comes_before_the_edge_check() -> None:
    """A finished job reports terminal:X even for a target no edge could reach."""
    with pytest.raises(TerminalStateError, match=r"^terminal:failed$"):
        # gate: allow forbidden-alias, unknown-status -- a target the rules must refuse
        apply_transition({"status": "failed"}, "retrying")
