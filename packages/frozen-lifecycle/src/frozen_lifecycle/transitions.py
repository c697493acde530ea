"""The case study's `STATES`, `can_transition` and `apply_transition`, for any fixture.

A pure lookup against the graph: `Lifecycle.of(graph)` (or `Lifecycle.load(path)`) answers
with the case study's semantics. A move out of a terminal state fails first, then a move along
no declared edge, then a move by another actor than the edge's; each raises a `TransitionError`
whose str() is the graph's code (`terminal:succeeded`, `illegal:queued->succeeded`,
`actor:worker`), the same code the generated database guards raise, which `from_code` turns
back into the typed error. A move that names no actor is the default actor's, the one that
takes a job from the initial state into work (the case study's `worker`; see
`graph.default_actor_of`); a fixture without one needs the actor on every move.

```python
from frozen_lifecycle.transitions import Lifecycle

LIFECYCLE = Lifecycle.load("contracts/job-status-graph.json")
STATES = LIFECYCLE.states
can_transition = LIFECYCLE.can_transition
apply_transition = LIFECYCLE.apply_transition
```
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from frozen_lifecycle.graph import Graph, default_actor_of, load_graph

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


@dataclasses.dataclass(frozen=True)
class Lifecycle:
    """One graph's tables, and the case study's answers from them."""

    states: tuple[str, ...]
    terminal: frozenset[str]
    actor_of: Mapping[tuple[str, str], str]
    # The actor of a move that names none; None: every move names its actor.
    default_actor: str | None = None

    @classmethod
    def from_edges(
        cls,
        states: Iterable[str],
        terminal: Iterable[str],
        edges: Iterable[tuple[str, str, str]],
        *,
        initial: str | None = None,
    ) -> Lifecycle:
        """From plain tables: the states, the terminal ones, and (from, to, actor) edges; with
        the initial state, the default actor too (none without it)."""
        triples = tuple(edges)
        ends = frozenset(terminal)
        actor_of = MappingProxyType({(f, t): actor for f, t, actor in triples})
        default = default_actor_of(initial, ends, triples)
        return cls(states=tuple(states), terminal=ends, actor_of=actor_of, default_actor=default)

    @classmethod
    def of(cls, graph: Graph) -> Lifecycle:
        edges = ((e.from_status, e.to_status, e.actor) for e in graph.transitions)
        return cls.from_edges(graph.states, graph.terminal, edges, initial=graph.initial)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Lifecycle:
        """The lifecycle of the fixture at `path`, validated as `load_graph` validates it."""
        return cls.of(load_graph(path))

    def can_transition(self, from_status: str, to_status: str) -> bool:
        """Whether the graph declares an edge from one status to the other."""
        return (from_status, to_status) in self.actor_of

    def check_transition(self, from_status: str, to_status: str, actor: str) -> None:
        """Raise the TransitionError that moving `from_status` to `to_status` as `actor` earns."""
        if from_status in self.terminal:
            raise TerminalStateError(from_status)
        declared = self.actor_of.get((from_status, to_status))
        if declared is None:
            raise IllegalTransitionError(from_status, to_status)
        if declared != actor:
            raise ActorError(actor)

    def apply_transition(self, job: JobT, to_status: str, actor: str | None = None) -> JobT:
        """A copy of `job` moved to `to_status` by `actor` (the default actor when None); the
        argument is never mutated.

        `job` is a mapping with a "status" key or a dataclass with a `status` field.
        """
        if actor is None:
            if self.default_actor is None:
                raise TypeError(
                    "apply_transition() needs the actor: this lifecycle has no default one "
                    "(the one actor of the edges from the initial state into a state that is "
                    "not terminal)"
                )
            actor = self.default_actor
        self.check_transition(status_of(job), to_status, actor)
        if isinstance(job, Mapping):
            return {**job, "status": to_status}  # type: ignore[return-value]
        if dataclasses.is_dataclass(job) and not isinstance(job, type):
            return dataclasses.replace(job, status=to_status)
        raise TypeError(f"cannot transition a {type(job).__name__}: need a mapping or a dataclass")


def status_of(job: Any) -> str:
    """The status of a job given as a mapping or an object with a `status` attribute."""
    status = job.get("status") if isinstance(job, Mapping) else getattr(job, "status", None)
    if not isinstance(status, str):
        raise TypeError(f"job has no string status: {status!r}")
    return status
