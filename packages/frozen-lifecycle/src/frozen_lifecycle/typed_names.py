"""Typed names generated from a job status graph: a Python module the type checker reads.

`render_typed_names(graph)` writes `Literal` aliases for the states, the terminal states, the
actors and the side effects, and for the targets of each actor's edges from each state
(`FromRunningByWorker`), with the graph's tables typed by them, its fingerprint, and type
guards (`is_status`, `is_actor`, `is_effect`) through which validated input narrows. Code that
passes those types around cannot name a word the fixture lacks, nor a move it does not declare,
without `mypy --strict` refusing it; the gate keeps the generated file equal to what the fixture
generates now.
"""

from __future__ import annotations

from collections.abc import Iterable

from frozen_lifecycle.graph import Graph
from frozen_lifecycle.provenance import DEFAULT_PROVENANCE, Provenance

_TEMPLATE = '''\
"""The job lifecycle's names, typed: generated from {fixture} by
`{command}`. Do not edit; the gate fails when this file drifts from the fixture.

`Status`, `Actor` and `Effect` are the only words a status, an actor or a side effect can be:
mypy refuses any other literal wherever these types flow. `From<State>By<Actor>` holds the
states that actor may move a job to from that state; `is_status`, `is_actor` and `is_effect`
narrow a checked input to its type.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal, TypeGuard

FINGERPRINT: Final = {fingerprint}

Status = Literal[
{states}
]
TerminalStatus = Literal[
{terminal}
]
Actor = Literal[
{actors}
]
Effect = Literal[
{effects}
]

# The targets of each actor's edges from each state.
{targets}

STATES: Final[tuple[Status, ...]] = (
{states}
)
INITIAL: Final[Status] = {initial}
TERMINAL: Final[tuple[TerminalStatus, ...]] = (
{terminal}
)
ACTORS: Final[tuple[Actor, ...]] = (
{actors}
)
EFFECTS: Final[tuple[Effect, ...]] = (
{effects}
)
TRANSITIONS: Final[tuple[tuple[Status, Status, Actor], ...]] = (
{transitions}
)
SIDE_EFFECTS: Final[Mapping[TerminalStatus, tuple[Effect, ...]]] = MappingProxyType(
    {{
{side_effects}
    }}
)


def is_status(value: object) -> TypeGuard[Status]:
    """Whether `value` is a state of the fixture: a checked input narrows to `Status`."""
    return value in STATES


def is_actor(value: object) -> TypeGuard[Actor]:
    """Whether `value` is an actor of the fixture."""
    return value in ACTORS


def is_effect(value: object) -> TypeGuard[Effect]:
    """Whether `value` is a side effect of the fixture."""
    return value in EFFECTS
'''


def _quoted(value: str) -> str:
    return '"' + value + '"'


def _lines(values: Iterable[str]) -> str:
    """One quoted item per line with a trailing comma: the formatter keeps it as it is."""
    return "\n".join(f"    {_quoted(v)}," for v in values)


def _tuple(values: Iterable[str]) -> str:
    items = [_quoted(v) for v in values]
    return ", ".join(items) + ("," if len(items) == 1 else "")


def _title(word: str) -> str:
    return "".join(part.capitalize() for part in word.split("_"))


def _targets(graph: Graph) -> str:
    """`From<State>By<Actor> = Literal[...]` for every (state, actor) with an edge, in the
    fixture's order."""
    targets: dict[tuple[str, str], list[str]] = {}
    for edge in graph.transitions:
        targets.setdefault((edge.from_status, edge.actor), []).append(edge.to_status)
    return "\n".join(
        f"From{_title(source)}By{_title(actor)} = {_literal(tos)}"
        for (source, actor), tos in targets.items()
    )


def _literal(values: list[str]) -> str:
    """One word on its line (a trailing comma there would make a tuple), more one per line."""
    if len(values) == 1:
        return f"Literal[{_quoted(values[0])}]"
    return f"Literal[\n{_lines(values)}\n]"


def render_typed_names(graph: Graph, *, provenance: Provenance = DEFAULT_PROVENANCE) -> str:
    """The generated module's text (fixture names are plain lower-case words already)."""
    transitions = "\n".join(
        f"    ({_quoted(e.from_status)}, {_quoted(e.to_status)}, {_quoted(e.actor)}),"
        for e in graph.transitions
    )
    side_effects = "\n".join(
        f"        {_quoted(state)}: ({_tuple(effects)}),"
        for state, effects in graph.side_effects.items()
    )
    return _TEMPLATE.format(
        fixture=provenance.fixture,
        command=provenance.command,
        fingerprint=_quoted(graph.fingerprint),
        states=_lines(graph.states),
        terminal=_lines(graph.terminal),
        actors=_lines(graph.actors),
        effects=_lines(graph.effect_names),
        targets=_targets(graph),
        initial=_quoted(graph.initial),
        transitions=transitions,
        side_effects=side_effects,
    )
