"""The actor of a move that names none comes from the fixture: the one actor of the edges that
take a job from the initial state into work. The case study's is `worker`; a fixture that names
its actors otherwise has its own, and one without a single such actor has none, so every move
there names its actor (the gate then judges the edge alone)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from frozen_lifecycle.gate.lexicon import UNDECLARED_EDGE, WRONG_ACTOR, Lexicon
from frozen_lifecycle.gate.python_rules import PythonRules
from frozen_lifecycle.gate.sources import SCRIPT
from frozen_lifecycle.gate.text_rules import TextRules
from frozen_lifecycle.graph import Graph, build_graph, default_actor_of, load_graph
from frozen_lifecycle.transitions import ActorError, Lifecycle

RENAMED = {"worker": "runner", "user": "client"}


@pytest.fixture
def renamed(starter_document: dict[str, Any]) -> Graph:
    """The case study's graph with its actors named otherwise, the client's edges listed first
    (the default is no matter of order)."""
    edges = [{**e, "actor": RENAMED[e["actor"]]} for e in starter_document["transitions"]]
    starter_document["transitions"] = sorted(edges, key=lambda e: e["actor"])
    return build_graph(starter_document)


@pytest.fixture
def two_claimants(starter_document: dict[str, Any]) -> Graph:
    """Two actors take a job from the initial state into work: the worker, and an auditor who
    holds it for review."""
    starter_document["states"].append("held")
    starter_document["transitions"] += [
        {"from": "queued", "to": "held", "actor": "auditor"},
        {"from": "held", "to": "canceled", "actor": "user"},
    ]
    return build_graph(starter_document)


def test_the_case_studys_default_actor_is_the_worker(starter_fixture: Path) -> None:
    graph = load_graph(starter_fixture)
    assert graph.default_actor == "worker"
    assert Lifecycle.of(graph).default_actor == "worker"
    assert Lexicon.of(graph).default_actor == "worker"


def test_a_fixture_with_other_actors_has_its_own_default(renamed: Graph) -> None:
    assert renamed.transitions[0].actor == "client"
    assert renamed.default_actor == "runner"
    lifecycle = Lifecycle.of(renamed)
    job = {"id": "job_1", "status": "queued"}
    assert lifecycle.apply_transition(job, "running") == {"id": "job_1", "status": "running"}
    with pytest.raises(ActorError) as raised:
        lifecycle.apply_transition(job, "canceled")
    assert str(raised.value) == "actor:runner"
    assert lifecycle.apply_transition(job, "canceled", "client")["status"] == "canceled"


@pytest.mark.parametrize(
    ("edges", "default"),
    [
        ([("queued", "running", "runner"), ("queued", "canceled", "client")], "runner"),
        ([("queued", "canceled", "client"), ("queued", "running", "runner")], "runner"),
        ([("queued", "running", "a"), ("queued", "running", "a")], "a"),
        ([("queued", "running", "a"), ("queued", "held", "b")], None),
        ([("queued", "canceled", "client"), ("queued", "failed", "reaper")], None),
        ([("running", "succeeded", "runner")], None),
        ([], None),
    ],
)
def test_the_default_is_the_one_actor_into_work_from_the_initial_state(
    edges: list[tuple[str, str, str]], default: str | None
) -> None:
    assert default_actor_of("queued", {"succeeded", "failed", "canceled"}, edges) == default


def test_without_a_default_every_move_names_its_actor(two_claimants: Graph) -> None:
    assert two_claimants.default_actor is None
    lifecycle = Lifecycle.of(two_claimants)
    job = {"id": "job_1", "status": "queued"}
    with pytest.raises(TypeError) as raised:
        lifecycle.apply_transition(job, "running")
    assert str(raised.value) == (
        "apply_transition() needs the actor: this lifecycle has no default one (the one actor "
        "of the edges from the initial state into a state that is not terminal)"
    )
    assert lifecycle.apply_transition(job, "held", "auditor")["status"] == "held"


def test_plain_tables_have_a_default_only_with_their_initial_state(renamed: Graph) -> None:
    edges = [(e.from_status, e.to_status, e.actor) for e in renamed.transitions]
    with_initial = Lifecycle.from_edges(renamed.states, renamed.terminal, edges, initial="queued")
    assert with_initial.default_actor == "runner"
    without = Lifecycle.from_edges(renamed.states, renamed.terminal, edges)
    assert without.default_actor is None
    with pytest.raises(TypeError, match=r"needs the actor"):
        without.apply_transition({"status": "queued"}, "running")


def python_hits(graph: Graph, source: str) -> list[tuple[str, str]]:
    facts = PythonRules(Lexicon.of(graph)).check(ast.parse(source), source)
    return [(hit.code, hit.message) for hit in facts.hits]


def script_hits(graph: Graph, source: str) -> list[tuple[str, str]]:
    return [
        (hit.code, hit.message) for hit in TextRules(Lexicon.of(graph)).check(SCRIPT, source).hits
    ]


def test_the_gate_reads_a_move_without_actor_as_the_fixtures_default(renamed: Graph) -> None:
    into_canceled = "every edge into canceled belongs to client, not runner"
    assert python_hits(renamed, 'apply_transition(job, "canceled")\n') == [
        (WRONG_ACTOR, into_canceled)
    ]
    assert script_hits(renamed, 'applyTransition(job, "canceled");\n') == [
        (WRONG_ACTOR, into_canceled)
    ]
    assert python_hits(renamed, 'apply_transition(job, "running")\n') == []
    assert script_hits(renamed, 'applyTransition(job, "succeeded");\n') == []
    # The case study's word is no actor of this fixture, named or by default.
    assert python_hits(renamed, 'apply_transition(job, "running", "worker")\n') == [
        (WRONG_ACTOR, "'worker' is not an actor of the fixture")
    ]


def test_without_a_default_the_gate_judges_the_edge_alone(two_claimants: Graph) -> None:
    for source in ('apply_transition(job, "held")\n', 'apply_transition(job, "running")\n'):
        assert python_hits(two_claimants, source) == []
    assert script_hits(two_claimants, 'applyTransition(job, "held");\n') == []
    assert python_hits(two_claimants, 'apply_transition(job, "queued")\n') == [
        (UNDECLARED_EDGE, "no edge of the fixture leads to queued")
    ]
    assert python_hits(two_claimants, 'apply_transition(job, "held", "worker")\n') == [
        (WRONG_ACTOR, "every edge into held belongs to auditor, not worker")
    ]
