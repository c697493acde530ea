"""The job lifecycle as a pure lookup against the frozen fixture.

`STATES`, `can_transition` and `apply_transition` are the toolkit's (`frozen_lifecycle.
transitions`, the case study's semantics: an illegal move raises an error whose str() is the
graph's code, `terminal:succeeded`, `illegal:queued->succeeded`, `actor:worker`) bound to
`lifecycle`, this program's typed names generated from the fixture, so nothing here reads a
file; a caller holding another `Graph` (a lifecycle change under test) passes it explicitly.

The moves the program itself makes are named here once (`CLAIM`, `SUCCEED`, `FAIL`, `CANCELS`),
taken from the fixture's edges, so no other module retypes a (from, to, actor) triple. A move's
type names where it may lead (`Move[FromRunningByWorker]`), so a worker's outcome built from
any other move, or from a word, is refused by mypy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Generic, TypeVar

from frozen_lifecycle.graph import Graph
from frozen_lifecycle.transitions import (
    ActorError,
    IllegalTransitionError,
    Lifecycle,
    TerminalStateError,
    TransitionError,
)
from reportexport.core import lifecycle
from reportexport.core.lifecycle import Actor, FromQueuedByWorker, FromRunningByWorker, Status

__all__ = [
    "CANCELS",
    "CLAIM",
    "FAIL",
    "STATES",
    "SUCCEED",
    "TERMINAL",
    "ActorError",
    "IllegalTransitionError",
    "Move",
    "TerminalStateError",
    "TransitionError",
    "apply_transition",
    "can_transition",
    "check_transition",
]

STATES: tuple[Status, ...] = lifecycle.STATES
TERMINAL: tuple[Status, ...] = lifecycle.TERMINAL
_LIFECYCLE = Lifecycle.from_edges(STATES, TERMINAL, lifecycle.TRANSITIONS)
_ACTOR_OF: Mapping[tuple[str, str], str] = _LIFECYCLE.actor_of

JobT = TypeVar("JobT")
To = TypeVar("To", bound=Status)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Move(Generic[To]):
    """A declared edge of the fixture, typed: what a store's guarded write names, typed by
    where it leads."""

    from_status: Status
    to_status: To
    actor: Actor


def _move(from_status: Status, to_status: To) -> Move[To]:
    for edge_from, edge_to, actor in lifecycle.TRANSITIONS:
        if (edge_from, edge_to) == (from_status, to_status):
            return Move(from_status=edge_from, to_status=to_status, actor=actor)
    raise ImportError(f"the fixture declares no edge {from_status}->{to_status}")


CLAIM: Move[FromQueuedByWorker] = _move(lifecycle.INITIAL, "running")
SUCCEED: Move[FromRunningByWorker] = _move("running", "succeeded")
FAIL: Move[FromRunningByWorker] = _move("running", "failed")
# A person's cancel: one edge per state it may leave from.
CANCELS: tuple[Move[Status], ...] = tuple(
    Move(from_status=f, to_status=t, actor=a)
    for f, t, a in lifecycle.TRANSITIONS
    if t == "canceled"
)


def _lifecycle(graph: Graph | None) -> Lifecycle:
    return _LIFECYCLE if graph is None else Lifecycle.of(graph)


def can_transition(from_status: str, to_status: str, *, graph: Graph | None = None) -> bool:
    """Whether the graph declares an edge from one status to the other."""
    return _lifecycle(graph).can_transition(from_status, to_status)


def check_transition(
    from_status: str, to_status: str, actor: str, *, graph: Graph | None = None
) -> None:
    """Raise the TransitionError that moving `from_status` to `to_status` as `actor` earns."""
    _lifecycle(graph).check_transition(from_status, to_status, actor)


def apply_transition(
    job: JobT, to_status: str, actor: str = "worker", *, graph: Graph | None = None
) -> JobT:
    """A copy of `job` moved to `to_status`; the argument is never mutated.

    `job` is a mapping with a "status" key or a dataclass with a `status` field.
    """
    return _lifecycle(graph).apply_transition(job, to_status, actor)
