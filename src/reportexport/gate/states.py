"""STATES in the sources must be the fixture's states: a literal list of them, or derived."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from reportexport.gate.vocabulary import Hit

STATES_DRIFT = "states-drift"
STATES_MISSING = "states-missing"


def states_assignments(tree: ast.Module) -> Iterator[tuple[int, ast.expr]]:
    """Module-level assignments to STATES, including augmented ones."""
    for node in tree.body:
        if isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == "STATES" for t in node.targets):
                yield node.lineno, node.value
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            target = node.target
            if isinstance(target, ast.Name) and target.id == "STATES" and node.value is not None:
                yield node.lineno, node.value


def check_states(value: ast.expr, line: int, states: tuple[str, ...]) -> Iterator[Hit]:
    literals = [
        node.value
        for node in ast.walk(value)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
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
