"""Error codes both ways, the program's named moves, and a lifecycle passed as a `Graph`."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from frozen_lifecycle.graph import Graph, build_graph
from reportexport.core import job_status
from reportexport.core.job_status import (
    CANCELS,
    CLAIM,
    FAIL,
    SUCCEED,
    ActorError,
    IllegalTransitionError,
    Move,
    TerminalStateError,
    TransitionError,
    apply_transition,
    can_transition,
    check_transition,
)


@pytest.mark.parametrize(
    ("code", "error_type"),
    [
        ("terminal:succeeded", TerminalStateError),
        ("terminal:canceled", TerminalStateError),
        ("illegal:queued->succeeded", IllegalTransitionError),
        ("illegal:queued->(not a state)", IllegalTransitionError),
        ("actor:worker", ActorError),
        ("actor:", ActorError),
    ],
)
def test_a_database_code_becomes_the_typed_error_with_the_same_code(
    code: str, error_type: type[TransitionError]
) -> None:
    """from_code turns a trigger's code back into the error apply_transition would raise."""
    error = TransitionError.from_code(code)
    assert type(error) is error_type
    assert error.code == code
    assert str(error) == code


def test_an_illegal_code_keeps_both_statuses() -> None:
    error = TransitionError.from_code("illegal:running->queued")
    assert type(error) is IllegalTransitionError
    assert error.code == "illegal:running->queued"


def test_the_kind_is_the_word_before_the_first_colon() -> None:
    """A code round-trips whole: whatever follows the kind is its detail, colons included."""
    error = TransitionError.from_code("terminal:odd:detail")
    assert type(error) is TerminalStateError
    assert error.code == "terminal:odd:detail"


# gate: allow forbidden-alias -- a word or an actor of another graph, under test
@pytest.mark.parametrize("code", ["retrying", "TERMINAL:succeeded", "Illegal:a->b", ""])
def test_a_code_that_is_not_the_graphs_is_refused_by_name(code: str) -> None:
    with pytest.raises(ValueError, match=r"^not a transition error code: ") as raised:
        TransitionError.from_code(code)
    assert str(raised.value) == f"not a transition error code: {code!r}"
    assert not isinstance(raised.value, TransitionError)


def test_the_programs_moves_are_the_fixtures_edges() -> None:
    assert Move(from_status="queued", to_status="running", actor="worker") == CLAIM
    assert Move(from_status="running", to_status="succeeded", actor="worker") == SUCCEED
    assert Move(from_status="running", to_status="failed", actor="worker") == FAIL
    assert (
        Move(from_status="queued", to_status="canceled", actor="user"),
        Move(from_status="running", to_status="canceled", actor="user"),
    ) == CANCELS


def test_a_move_the_fixture_lacks_stops_the_import_naming_the_edge() -> None:
    """The named moves are looked up when the module loads: a missing edge is no silent None."""
    assert job_status._move("running", "failed") == FAIL
    with pytest.raises(ImportError) as raised:
        job_status._move("failed", "running")
    assert str(raised.value) == "the fixture declares no edge failed->running"


def test_an_object_without_a_status_is_refused_by_type() -> None:
    with pytest.raises(TypeError) as raised:
        apply_transition(object(), "running")
    assert str(raised.value) == "job has no string status: None"
    with pytest.raises(TypeError) as raised:
        apply_transition({"status": 3}, "running")
    assert str(raised.value) == "job has no string status: 3"


def test_a_job_of_the_wrong_kind_is_named_in_the_error() -> None:
    class Job:
        status = "queued"

    with pytest.raises(TypeError) as raised:
        apply_transition(Job(), "running")
    assert str(raised.value) == "cannot transition a Job: need a mapping or a dataclass"


# A lifecycle change under test: one more terminal state, reached from `queued` by the worker,
# and `running -> canceled` given to the worker. Passed as a Graph, it replaces the fixture.
def _changed_graph(fixture: dict[str, Any]) -> Graph:
    document = copy.deepcopy(fixture)
    document["states"].append("expired")
    document["terminal"].append("expired")
    document["transitions"].append({"from": "queued", "to": "expired", "actor": "worker"})
    for edge in document["transitions"]:
        if (edge["from"], edge["to"]) == ("running", "canceled"):
            edge["actor"] = "worker"
    return build_graph(document, source="changed")


def test_a_graph_passed_in_replaces_the_fixtures_edges(graph: dict[str, Any]) -> None:
    changed = _changed_graph(graph)
    # gate: allow unknown-status -- a word or an actor of another graph, under test
    assert can_transition("queued", "expired", graph=changed) is True
    # gate: allow unknown-status -- a word or an actor of another graph, under test
    assert can_transition("queued", "expired") is False
    assert can_transition("queued", "running", graph=changed) is True
    assert can_transition("running", "queued", graph=changed) is False
    # gate: allow unknown-status -- a word or an actor of another graph, under test
    assert apply_transition({"status": "queued"}, "expired", graph=changed) == {"status": "expired"}
    with pytest.raises(IllegalTransitionError):
        # gate: allow unknown-status -- a word or an actor of another graph, under test
        apply_transition({"status": "queued"}, "expired")


def test_a_graph_passed_in_replaces_the_fixtures_actors(graph: dict[str, Any]) -> None:
    changed = _changed_graph(graph)
    # gate: allow wrong-actor -- a word or an actor of another graph, under test
    check_transition("running", "canceled", "worker", graph=changed)
    with pytest.raises(ActorError, match=r"^actor:user$"):
        check_transition("running", "canceled", "user", graph=changed)
    with pytest.raises(ActorError, match=r"^actor:worker$"):
        # gate: allow wrong-actor -- a word or an actor of another graph, under test
        apply_transition({"status": "running"}, "canceled", "worker")
    with pytest.raises(ActorError, match=r"^actor:user$"):
        apply_transition({"status": "running"}, "canceled", "user", graph=changed)


def test_a_graph_passed_in_replaces_the_fixtures_terminal_states(graph: dict[str, Any]) -> None:
    changed = _changed_graph(graph)
    with pytest.raises(TerminalStateError, match=r"^terminal:expired$"):
        # gate: allow unknown-status -- a word or an actor of another graph, under test
        check_transition("expired", "queued", "worker", graph=changed)
    with pytest.raises(IllegalTransitionError, match=r"^illegal:expired->queued$"):
        # gate: allow unknown-status -- a word or an actor of another graph, under test
        check_transition("expired", "queued", "worker")


def test_a_dataclass_job_moves_under_a_graph_passed_in(graph: dict[str, Any]) -> None:
    @dataclasses.dataclass(frozen=True)
    class Job:
        status: str

    # gate: allow unknown-status -- a word or an actor of another graph, under test
    assert apply_transition(Job("queued"), "expired", graph=_changed_graph(graph)) == Job("expired")
