"""The job lifecycle as a pure lookup against the frozen fixture.

`STATES`, `can_transition` and `apply_transition` follow the case study's semantics: an
illegal move raises an error whose str() is the graph's code (`terminal:succeeded`,
`illegal:queued->succeeded`, `actor:worker`). The tables come from `lifecycle`, the module
generated from the fixture, so nothing here reads a file; a caller holding another `Graph`
(a lifecycle change under test) passes it explicitly.

The moves the program itself makes are named here once (`CLAIM`, `SUCCEED`, `FAIL`, `CANCELS`),
taken from the fixture's edges, so no other module retypes a (from, to, actor) triple. A move's
type names where it may lead (`Move[FromRunningByWorker]`), so a worker's outcome built from
any other move, or from a word, is refused by mypy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from reportexport import lifecycle
from reportexport.graph import Edge, Graph
from reportexport.lifecycle import Actor, FromQueuedByWorker, FromRunningByWorker, Status

STATES: tuple[Status, ...] = lifecycle.STATES
TERMINAL: tuple[Status, ...] = lifecycle.TERMINAL
_ACTOR_OF: Mapping[tuple[str, str], str] = {(f, t): a for f, t, a in lifecycle.TRANSITIONS}

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


class TransitionError(ValueError):
    """A status change the graph does not allow; str() is the graph's error code."""

    code: str

    def __init__(self, code: str) -> None:
        self.code = code
        super().__init__(code)

    @staticmethod
    def from_code(code: str) -> TransitionError:
        """The typed error for a graph code such as a database trigger raises."""
        kind, _, detail = code.partition(":")
        if kind == "terminal":
            return TerminalStateError(detail)
        if kind == "illegal":
            from_status, _, to_status = detail.partition("->")
            return IllegalTransitionError(from_status, to_status)
        if kind == "actor":
            return ActorError(detail)
        raise ValueError(f"not a transition error code: {code!r}")


class TerminalStateError(TransitionError):
    def __init__(self, status: str) -> None:
        super().__init__(f"terminal:{status}")


class IllegalTransitionError(TransitionError):
    def __init__(self, from_status: str, to_status: str) -> None:
        super().__init__(f"illegal:{from_status}->{to_status}")


class ActorError(TransitionError):
    def __init__(self, actor: str) -> None:
        super().__init__(f"actor:{actor}")


def _declared_actor(from_status: str, to_status: str, graph: Graph | None) -> str | None:
    if graph is None:
        return _ACTOR_OF.get((from_status, to_status))
    edge: Edge | None = graph.edge(from_status, to_status)
    return edge.actor if edge is not None else None


def can_transition(from_status: str, to_status: str, *, graph: Graph | None = None) -> bool:
    """Whether the graph declares an edge from one status to the other."""
    return _declared_actor(from_status, to_status, graph) is not None


def check_transition(
    from_status: str, to_status: str, actor: str, *, graph: Graph | None = None
) -> None:
    """Raise the TransitionError that moving `from_status` to `to_status` as `actor` earns."""
    terminal = graph.terminal if graph is not None else TERMINAL
    if from_status in terminal:
        raise TerminalStateError(from_status)
    declared = _declared_actor(from_status, to_status, graph)
    if declared is None:
        raise IllegalTransitionError(from_status, to_status)
    if declared != actor:
        raise ActorError(actor)


def apply_transition(
    job: JobT, to_status: str, actor: str = "worker", *, graph: Graph | None = None
) -> JobT:
    """A copy of `job` moved to `to_status`; the argument is never mutated.

    `job` is a mapping with a "status" key or a dataclass with a `status` field.
    """
    check_transition(_status_of(job), to_status, actor, graph=graph)
    if isinstance(job, Mapping):
        return {**job, "status": to_status}  # type: ignore[return-value]
    if dataclasses.is_dataclass(job) and not isinstance(job, type):
        return dataclasses.replace(job, status=to_status)
    raise TypeError(f"cannot transition a {type(job).__name__}: need a mapping or a dataclass")


def _status_of(job: Any) -> str:
    status = job.get("status") if isinstance(job, Mapping) else getattr(job, "status", None)
    if not isinstance(status, str):
        raise TypeError(f"job has no string status: {status!r}")
    return status
