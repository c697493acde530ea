"""The case study's six contract tests, ported one to one, and the transition check the
configuration names (`check-transition`) tried with actors the fixture does not have.

Each test takes the module and its source as arguments so that
test_labeled_failures.py can run the very same assertions against mutated copies.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from frozen_lifecycle.gate.config import load_config
from tests.helpers import REPO_ROOT

# The function of the module under contract that checks a move: (from, to, actor) -> None.
CHECK_TRANSITION = (load_config(REPO_ROOT).check_transition or "check_transition").rpartition(":")[
    2
]
# Actors no fixture of ours has: the names a generated guard or a hurried fix might admit.
OUTSIDE_ACTORS = ("operator", "admin", "system", "", "probe_not_an_actor")


def test_worker_states_equal_the_frozen_graph(
    job_status: ModuleType, graph: dict[str, Any]
) -> None:
    assert sorted(job_status.STATES) == sorted(graph["states"])


def test_every_declared_edge_is_accepted(job_status: ModuleType, graph: dict[str, Any]) -> None:
    for edge in graph["transitions"]:
        assert job_status.can_transition(edge["from"], edge["to"]) is True, (
            f"{edge['from']}->{edge['to']}"
        )


def test_undeclared_edges_are_rejected(job_status: ModuleType, graph: dict[str, Any]) -> None:
    allowed = {f"{e['from']}->{e['to']}" for e in graph["transitions"]}
    for from_status in graph["states"]:
        for to_status in graph["states"]:
            if from_status == to_status:
                continue
            key = f"{from_status}->{to_status}"
            if key not in allowed:
                assert job_status.can_transition(from_status, to_status) is False, key


def test_terminal_states_do_not_leave_the_graph(
    job_status: ModuleType, graph: dict[str, Any]
) -> None:
    for term in graph["terminal"]:
        for to_status in graph["states"]:
            if to_status == term:
                continue
            assert job_status.can_transition(term, to_status) is False, f"{term}->{to_status}"


def test_apply_transition_throws_on_illegal_moves(job_status: ModuleType) -> None:
    with pytest.raises(Exception):  # noqa: B017, PT011 - the case study asserts only that it throws
        job_status.apply_transition({"id": "job_1", "status": "succeeded"}, "running")


def test_source_does_not_mention_forbidden_status_aliases(src: str, graph: dict[str, Any]) -> None:
    for alias in graph["forbidden_aliases"]:
        assert (f'"{alias}"' in src or f"'{alias}'" in src) is False, alias


def test_each_edge_passes_the_transition_check_with_its_own_actor(
    job_status: ModuleType, graph: dict[str, Any]
) -> None:
    check = getattr(job_status, CHECK_TRANSITION)
    for edge in graph["transitions"]:
        check(edge["from"], edge["to"], edge["actor"])


def test_an_actor_outside_the_fixture_makes_no_move(
    job_status: ModuleType, graph: dict[str, Any]
) -> None:
    check = getattr(job_status, CHECK_TRANSITION)
    actors = {edge["actor"] for edge in graph["transitions"]}
    for actor in (a for a in OUTSIDE_ACTORS if a not in actors):
        for from_status in graph["states"]:
            for to_status in graph["states"]:
                if from_status == to_status:
                    continue
                move = f"{from_status}->{to_status} by {actor!r}"
                refused = _refuses(check, from_status, to_status, actor)
                assert refused, f"{CHECK_TRANSITION} let {move} through"
                job = {"id": "job_1", "status": from_status}
                refused = _refuses(job_status.apply_transition, job, to_status, actor)
                assert refused, f"apply_transition let {move} through"


def _refuses(call: Callable[..., object], *args: object) -> bool:
    try:
        call(*args)
    except Exception:
        return True
    return False
