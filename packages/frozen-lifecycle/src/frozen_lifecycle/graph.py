"""Load and validate a job status graph fixture (standard library only).

The fixture (by convention contracts/job-status-graph.json) is the single source of truth for
a job lifecycle. This module turns it into a frozen `Graph` after checking the JSON Schema
(job-status-graph.schema.json, carried beside this module) and every structural rule, and
reporting each defect with the item that causes it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections import deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from frozen_lifecycle.schema_check import schema_errors

FIXTURE_NAME = "job-status-graph.json"
SCHEMA_NAME = "job-status-graph.schema.json"
GRAPH_ENV = "FROZEN_LIFECYCLE_GRAPH"
# Where a repository keeps its fixture, as the case study lays it out.
DEFAULT_FIXTURE = "contracts/" + FIXTURE_NAME
_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


class InvalidGraphError(ValueError):
    """A fixture that is not a valid job status graph; `defects` lists every problem found."""

    def __init__(self, source: str, defects: Iterable[str]) -> None:
        self.source = source
        self.defects = tuple(defects)
        super().__init__(f"{source}: invalid job status graph: " + "; ".join(self.defects))


@dataclass(frozen=True, kw_only=True)
class Edge:
    from_status: str
    to_status: str
    actor: str


@dataclass(frozen=True, kw_only=True)
class Graph:
    """A validated job status graph."""

    job_type: str
    states: tuple[str, ...]
    initial: str
    terminal: tuple[str, ...]
    forbidden_aliases: tuple[str, ...]
    transitions: tuple[Edge, ...]
    side_effects: Mapping[str, tuple[str, ...]]
    fingerprint: str
    source: str = field(compare=False)
    document: Mapping[str, Any] = field(compare=False, repr=False)

    def edge(self, from_status: str, to_status: str) -> Edge | None:
        """The declared edge between two statuses, or None."""
        for edge in self.transitions:
            if edge.from_status == from_status and edge.to_status == to_status:
                return edge
        return None

    def is_terminal(self, status: str) -> bool:
        return status in self.terminal

    @property
    def actors(self) -> tuple[str, ...]:
        """Every actor named on an edge, in order of first appearance."""
        return tuple(dict.fromkeys(edge.actor for edge in self.transitions))

    @property
    def default_actor(self) -> str | None:
        """The actor of a move that names none (`apply_transition(job, to)`): see
        `default_actor_of`; the case study's `worker`."""
        edges = ((e.from_status, e.to_status, e.actor) for e in self.transitions)
        return default_actor_of(self.initial, self.terminal, edges)

    @property
    def effect_names(self) -> tuple[str, ...]:
        """Every side-effect name, in order of first appearance."""
        return tuple(dict.fromkeys(name for names in self.side_effects.values() for name in names))


def default_actor_of(
    initial: str | None, terminal: Collection[str], edges: Iterable[tuple[str, str, str]]
) -> str | None:
    """The one actor of the edges that take a job from the initial state into work (to a state
    that is not terminal): the worker that claims it, whatever the fixture calls it. None when
    no edge does, or edges of several actors do, or the initial state is not known; then no
    move goes without its actor."""
    into_work = {a for source, target, a in edges if source == initial and target not in terminal}
    return next(iter(into_work)) if len(into_work) == 1 else None


def fingerprint(document: Mapping[str, Any]) -> str:
    """SHA-256 of the fixture's canonical JSON: sorted keys, no whitespace, UTF-8."""
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def schema_text() -> str:
    """The JSON Schema every fixture must satisfy, as this package carries it."""
    return resources.files(__package__).joinpath(SCHEMA_NAME).read_text(encoding="utf-8")


@functools.cache
def load_schema() -> dict[str, Any]:
    return json.loads(schema_text())  # type: ignore[no-any-return]


def load_graph(path: str | os.PathLike[str]) -> Graph:
    """Read, validate and freeze a fixture; raises InvalidGraphError naming every defect."""
    fixture = Path(path)
    text = fixture.read_text(encoding="utf-8")
    return parse_graph(text, source=str(fixture))


def parse_graph(text: str, *, source: str = "<graph>") -> Graph:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidGraphError(source, [f"not JSON: {exc}"]) from None
    return build_graph(document, source=source)


def build_graph(document: Any, *, source: str = "<graph>") -> Graph:
    problems = schema_errors(document, load_schema())
    if problems:
        raise InvalidGraphError(source, [f"schema: {problem}" for problem in problems])
    defects = structural_defects(document)
    if defects:
        raise InvalidGraphError(source, defects)
    return Graph(
        job_type=document["job_type"],
        states=tuple(document["states"]),
        initial=document["initial"],
        terminal=tuple(document["terminal"]),
        forbidden_aliases=tuple(document["forbidden_aliases"]),
        transitions=tuple(
            Edge(from_status=e["from"], to_status=e["to"], actor=e["actor"])
            for e in document["transitions"]
        ),
        side_effects={state: tuple(names) for state, names in document["side_effects"].items()},
        fingerprint=fingerprint(document),
        source=source,
        document=document,
    )


def structural_defects(document: Mapping[str, Any]) -> list[str]:
    """The rules a schema cannot express, each defect naming its item.

    Expects a document that already satisfies the JSON Schema.
    """
    states: list[str] = document["states"]
    known = set(states)
    terminal: list[str] = document["terminal"]
    edges: list[Mapping[str, str]] = document["transitions"]
    defects: list[str] = []

    for where, name in _all_names(document):
        if not _NAME.fullmatch(name):
            defects.append(f"{where}: {name!r} is not a plain lower-case name")
    if document["initial"] not in known:
        defects.append(f"initial: {document['initial']!r} is not a state")
    defects += [f"terminal: {t!r} is not a state" for t in terminal if t not in known]
    defects += [
        f"forbidden_aliases: {alias!r} is also a state"
        for alias in document["forbidden_aliases"]
        if alias in known
    ]

    seen_pairs: set[tuple[str, str]] = set()
    for index, edge in enumerate(edges):
        label = f"transitions[{index}] {edge['from']}->{edge['to']}"
        for end in ("from", "to"):
            if edge[end] not in known:
                defects.append(f"{label}: {end} names unknown state {edge[end]!r}")
        if edge["from"] == edge["to"]:
            defects.append(f"{label}: an edge must change the status")
        if edge["from"] in terminal:
            defects.append(f"{label}: leaves terminal state {edge['from']!r}")
        pair = (edge["from"], edge["to"])
        if pair in seen_pairs:
            defects.append(f"{label}: duplicate edge")
        seen_pairs.add(pair)

    for state in document["side_effects"]:
        if state not in known:
            defects.append(f"side_effects.{state}: {state!r} is not a state")
        elif state not in terminal:
            defects.append(f"side_effects.{state}: side effects belong on terminal states only")

    if document["initial"] in known:
        forward = _reachable({document["initial"]}, edges, "from", "to")
        defects += [
            f"states: {state!r} is unreachable from initial {document['initial']!r}"
            for state in states
            if state not in forward
        ]
    backward = _reachable({t for t in terminal if t in known}, edges, "to", "from")
    defects += [
        f"states: {state!r} has no path to a terminal state"
        for state in states
        if state not in terminal and state not in backward
    ]
    return defects


def _reachable(start: set[str], edges: list[Mapping[str, str]], tail: str, head: str) -> set[str]:
    seen = set(start)
    queue = deque(start)
    while queue:
        current = queue.popleft()
        for edge in edges:
            if edge[tail] == current and edge[head] not in seen:
                seen.add(edge[head])
                queue.append(edge[head])
    return seen


def _all_names(document: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    yield "job_type", document["job_type"]
    yield "initial", document["initial"]
    for key in ("states", "terminal", "forbidden_aliases"):
        for name in document[key]:
            yield key, name
    for index, edge in enumerate(document["transitions"]):
        for end in ("from", "to", "actor"):
            yield f"transitions[{index}].{end}", edge[end]
    for state, names in document["side_effects"].items():
        yield "side_effects", state
        for name in names:
            yield f"side_effects.{state}", name
