"""The job lifecycle as a pure lookup against the frozen fixture.

`STATES`, `can_transition` and `apply_transition` follow the case study's semantics: an
illegal move raises an error whose str() is the graph's code (`terminal:succeeded`,
`illegal:queued->succeeded`, `actor:worker`). Nothing here performs I/O beyond reading the
fixture once at import.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from reportexport.graph import Graph, load_graph

GRAPH: Graph = load_graph()
STATES: tuple[str, ...] = GRAPH.states

JobT = TypeVar("JobT")


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


def can_transition(from_status: str, to_status: str, *, graph: Graph = GRAPH) -> bool:
    """Whether the graph declares an edge from one status to the other."""
    return graph.edge(from_status, to_status) is not None


def check_transition(from_status: str, to_status: str, actor: str, *, graph: Graph = GRAPH) -> None:
    """Raise the TransitionError that moving `from_status` to `to_status` as `actor` earns."""
    if graph.is_terminal(from_status):
        raise TerminalStateError(from_status)
    edge = graph.edge(from_status, to_status)
    if edge is None:
        raise IllegalTransitionError(from_status, to_status)
    if edge.actor != actor:
        raise ActorError(actor)


def apply_transition(
    job: JobT, to_status: str, actor: str = "worker", *, graph: Graph = GRAPH
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
