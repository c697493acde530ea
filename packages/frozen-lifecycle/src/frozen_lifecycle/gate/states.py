"""STATES in the sources must be the fixture's states: a literal list of them, or derived.

A STATES definition is a module-level `STATES` in Python, `const STATES = [...]` (or
`Object.freeze([...])`) in JavaScript, or a TypeScript union type or enum named for a status.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from frozen_lifecycle.gate.lexicon import Hit

STATES_DRIFT = "states-drift"
STATES_MISSING = "states-missing"


def check_states(value: ast.expr, line: int, states: tuple[str, ...]) -> Iterator[Hit]:
    # A key that reads the states out of the fixture (`GRAPH["states"]`) names no state.
    keys = {id(node.slice) for node in ast.walk(value) if isinstance(node, ast.Subscript)}
    literals = [
        node.value
        for node in ast.walk(value)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in keys
    ]
    for literal in literals:
        if literal not in states:
            yield Hit(line, STATES_DRIFT, f"STATES names {literal!r}, not a state in the fixture")
    items = _literal_items(value)
    missing = sorted(set(states) - set(items)) if items is not None else []
    if missing:
        yield Hit(line, STATES_DRIFT, f"STATES lacks fixture state(s) {', '.join(missing)}")


def _literal_items(value: ast.expr) -> list[str] | None:
    """The strings of a literal collection (optionally wrapped in tuple()/frozenset()...)."""
    wrappers = {"tuple", "list", "set", "frozenset"}
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in wrappers
        and len(value.args) == 1
    ):
        value = value.args[0]
    if not isinstance(value, ast.Tuple | ast.List | ast.Set):
        return None
    items = [
        e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
    ]
    return items if len(items) == len(value.elts) else None


def check_words(
    words: list[str],
    line: int,
    states: tuple[str, ...],
    name: str = "STATES",
    *,
    missing: bool = True,
) -> Iterator[Hit]:
    """A STATES definition listed in another language: every state (unless it is derived and
    only `words` were added), and nothing else."""
    for word in dict.fromkeys(words):
        if word not in states:
            yield Hit(line, STATES_DRIFT, f"{name} names {word!r}, not a state in the fixture")
    lacking = [state for state in states if state not in words] if missing else []
    if lacking:
        yield Hit(line, STATES_DRIFT, f"{name} lacks fixture state(s) {', '.join(sorted(lacking))}")
