"""The case study's three functions for any fixture: the lookups `Lifecycle` answers."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from frozen_lifecycle.graph import build_graph, load_graph
from frozen_lifecycle.transitions import (
    ActorError,
    IllegalTransitionError,
    Lifecycle,
    TerminalStateError,
    TransitionError,
    status_of,
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Job:
    id: str
    status: str


def test_a_loaded_lifecycle_holds_the_fixtures_tables(starter_fixture: Path) -> None:
    lifecycle = Lifecycle.load(starter_fixture)
    assert lifecycle.states == ("queued", "running", "succeeded", "failed", "canceled")
    assert lifecycle.terminal == frozenset({"succeeded", "failed", "canceled"})
    assert dict(lifecycle.actor_of) == {
        ("queued", "running"): "worker",
        ("queued", "canceled"): "user",
        ("running", "succeeded"): "worker",
        ("running", "failed"): "worker",
        ("running", "canceled"): "user",
    }
    assert isinstance(lifecycle.actor_of, MappingProxyType)  # a lookup nobody can widen
    assert Lifecycle.of(load_graph(starter_fixture)) == lifecycle


def test_exactly_the_declared_triples_are_applied(starter_document: dict[str, Any]) -> None:
    lifecycle = Lifecycle.of(build_graph(starter_document))
    declared = {(e["from"], e["to"], e["actor"]) for e in starter_document["transitions"]}
    states = starter_document["states"]
    for from_status, to_status, actor in itertools.product(states, states, ("worker", "user")):
        job = {"id": "job_1", "status": from_status}
        assert lifecycle.can_transition(from_status, to_status) == any(
            (from_status, to_status) == (f, t) for f, t, _ in declared
        )
        if (from_status, to_status, actor) in declared:
            assert lifecycle.apply_transition(job, to_status, actor) == {**job, "status": to_status}
            assert job["status"] == from_status  # a copy: the argument is never changed
        else:
            with pytest.raises(TransitionError):
                lifecycle.apply_transition(job, to_status, actor)


def test_terminal_comes_before_illegal_which_comes_before_the_actor(
    starter_fixture: Path,
) -> None:
    """The case study's order of refusals, each with its code."""
    lifecycle = Lifecycle.load(starter_fixture)
    with pytest.raises(TerminalStateError, match=r"^terminal:succeeded$"):
        lifecycle.check_transition("succeeded", "running", "user")
    with pytest.raises(IllegalTransitionError, match=r"^illegal:queued->succeeded$"):
        lifecycle.check_transition("queued", "succeeded", "user")
    with pytest.raises(ActorError, match=r"^actor:worker$"):
        lifecycle.apply_transition({"id": "job_1", "status": "running"}, "canceled", "worker")
    assert lifecycle.apply_transition(Job(id="j", status="queued"), "running") == Job(
        id="j", status="running"
    )  # the actor defaults to worker, as in the case study


def test_words_outside_the_graph_are_never_a_transition(starter_fixture: Path) -> None:
    lifecycle = Lifecycle.load(starter_fixture)
    assert not lifecycle.can_transition("queued", "stalled")
    assert not lifecycle.can_transition("stalled", "running")
    with pytest.raises(IllegalTransitionError, match=r"^illegal:stalled->running$"):
        lifecycle.check_transition("stalled", "running", "worker")


def test_another_fixture_gets_its_own_answers(
    tmp_path: Path, starter_document: dict[str, Any]
) -> None:
    starter_document["states"].append("expired")
    starter_document["terminal"].append("expired")
    starter_document["transitions"].append({"from": "queued", "to": "expired", "actor": "clock"})
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(starter_document), encoding="utf-8")
    lifecycle = Lifecycle.load(path)
    assert lifecycle.states[-1] == "expired"
    assert lifecycle.apply_transition({"status": "queued"}, "expired", "clock") == {
        "status": "expired"
    }
    with pytest.raises(ActorError, match=r"^actor:worker$"):
        lifecycle.apply_transition({"status": "queued"}, "expired")
    with pytest.raises(TerminalStateError, match=r"^terminal:expired$"):
        lifecycle.apply_transition({"status": "expired"}, "running")


def test_plain_tables_make_the_same_lifecycle(starter_fixture: Path) -> None:
    graph = load_graph(starter_fixture)
    edges = [(e.from_status, e.to_status, e.actor) for e in graph.transitions]
    tables = Lifecycle.from_edges(graph.states, graph.terminal, edges, initial=graph.initial)
    assert tables == Lifecycle.of(graph)


@pytest.mark.parametrize(
    ("job", "message"),
    [
        ({"id": "job_1"}, "job has no string status: None"),
        ({"status": 3}, "job has no string status: 3"),
        (object(), "job has no string status: None"),
    ],
)
def test_a_job_without_a_string_status_is_refused(job: Any, message: str) -> None:
    with pytest.raises(TypeError) as raised:
        status_of(job)
    assert str(raised.value) == message


def test_only_mappings_and_dataclasses_can_be_moved(starter_fixture: Path) -> None:
    class Plain:
        status = "queued"

    lifecycle = Lifecycle.load(starter_fixture)
    with pytest.raises(TypeError) as raised:
        lifecycle.apply_transition(Plain(), "running")
    assert str(raised.value) == "cannot transition a Plain: need a mapping or a dataclass"
    with pytest.raises(TypeError):
        lifecycle.apply_transition(Job, "running")  # the class itself is not a job


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("terminal:failed", TerminalStateError),
        ("illegal:running->queued", IllegalTransitionError),
        ("actor:", ActorError),
    ],
)
def test_a_guards_code_becomes_its_typed_error(code: str, kind: type[TransitionError]) -> None:
    error = TransitionError.from_code(code)
    assert type(error) is kind
    assert (error.code, str(error)) == (code, code)


def test_a_code_of_no_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="not a transition error code: 'stalled:x'"):
        TransitionError.from_code("stalled:x")
