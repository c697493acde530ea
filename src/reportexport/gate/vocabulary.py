"""The two vocabulary rules: no forbidden alias quoted, and `status` names fixture states only.

Python files are read through the AST (string constants, f-string parts and quoted words inside
SQL held in strings); other text files through a quoted-token scan. Nothing is imported.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

FORBIDDEN_ALIAS = "forbidden-alias"
UNKNOWN_STATUS = "unknown-status"

# A name that holds a job status: status, to_status, job.status, row["from_status"] ...
_STATUS_NAME = re.compile(r"(?:[a-z0-9]+_)*status")
# `status = 'x'`, `new.status <> 'x'`, `to_status = 'x'` inside SQL.
_SQL_STATUS_EQ = re.compile(
    r"(?<![\w.])(?:\w+\.)?(?:[a-z0-9]+_)*status\s*(?:=|<>|!=)\s*'([^']*)'", re.I
)
_SQL_STATUS_IN = re.compile(
    r"(?<![\w.])(?:\w+\.)?(?:[a-z0-9]+_)*status\s+(?:not\s+)?in\s*\(([^)]*)\)", re.I
)
_SQL_QUOTED = re.compile(r"'([^']*)'")
# Call name -> positions of arguments that are statuses.
TRANSITION_CALLS = {"apply_transition": (1,), "can_transition": (0, 1), "check_transition": (0, 1)}


@dataclass(frozen=True)
class Hit:
    line: int
    code: str
    message: str


class Vocabulary:
    def __init__(self, states: Iterable[str], aliases: Iterable[str]) -> None:
        self.states = frozenset(states)
        self.aliases = tuple(aliases)
        alternatives = "|".join(re.escape(a) for a in self.aliases) or r"(?!)"
        self._quoted_alias = re.compile(rf"(?<![\w])([\"'`])({alternatives})\1(?![\w])")

    # -- text files -------------------------------------------------------------------------

    def scan_text(self, text: str) -> Iterator[Hit]:
        for number, line in enumerate(text.splitlines(), 1):
            for match in self._quoted_alias.finditer(line):
                yield self._alias_hit(number, match.group(2))
            for value in self._sql_status_values(line):
                yield self._status_hit(number, value, "in SQL")

    # -- Python files -----------------------------------------------------------------------

    def scan_python(self, tree: ast.AST) -> Iterator[Hit]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield from self._scan_string(node)
            elif isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(_is_status_name(o) for o in operands):
                    for operand in operands:
                        yield from self._status_literals(operand, "compared with a status")
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if node.value is not None and any(_is_status_name(t) for t in targets):
                    yield from self._status_literals(node.value, "assigned to a status")
            elif isinstance(node, ast.keyword):
                if node.arg is not None and _STATUS_NAME.fullmatch(node.arg):
                    yield from self._status_literals(node.value, f"passed as {node.arg}=")
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if key is not None and _is_status_name(key, literal_key=True):
                        yield from self._status_literals(value, "keyed as a status")
            elif isinstance(node, ast.Call):
                positions = TRANSITION_CALLS.get(_call_name(node.func), ())
                for index in positions:
                    if index < len(node.args):
                        yield from self._status_literals(node.args[index], "a transition target")
            elif isinstance(node, ast.Match) and _is_status_name(node.subject):
                for case in node.cases:
                    for pattern in ast.walk(case.pattern):
                        if isinstance(pattern, ast.MatchValue):
                            yield from self._status_literals(pattern.value, "matched as a status")

    def _scan_string(self, node: ast.Constant) -> Iterator[Hit]:
        value = str(node.value)
        if value in self.aliases:
            yield self._alias_hit(node.lineno, value)
        for match in self._quoted_alias.finditer(value):
            yield self._alias_hit(node.lineno + value.count("\n", 0, match.start()), match.group(2))
        for number, line in enumerate(value.split("\n")):
            for status in self._sql_status_values(line):
                yield self._status_hit(node.lineno + number, status, "in SQL")

    def _status_literals(self, node: ast.AST, how: str) -> Iterator[Hit]:
        for value, line in _string_literals(node):
            if value not in self.states:
                yield self._status_hit(line, value, how)

    def _sql_status_values(self, line: str) -> Iterator[str]:
        """Quoted words compared with a status column in SQL that are not fixture states."""
        values = [m.group(1) for m in _SQL_STATUS_EQ.finditer(line)]
        for match in _SQL_STATUS_IN.finditer(line):
            values += _SQL_QUOTED.findall(match.group(1))
        return (value for value in values if value not in self.states)

    def _alias_hit(self, line: int, alias: str) -> Hit:
        return Hit(line, FORBIDDEN_ALIAS, f'"{alias}" is a forbidden status alias')

    def _status_hit(self, line: int, value: str, how: str) -> Hit:
        return Hit(line, UNKNOWN_STATUS, f"{value!r} {how} is not a state in the fixture")


def _is_status_name(node: ast.AST, *, literal_key: bool = False) -> bool:
    """A variable, attribute or item that holds a status; a bare string only as a key."""
    if isinstance(node, ast.Name):
        return bool(_STATUS_NAME.fullmatch(node.id))
    if isinstance(node, ast.Attribute):
        return bool(_STATUS_NAME.fullmatch(node.attr))
    if isinstance(node, ast.Subscript):
        return _is_status_name(node.slice, literal_key=True)
    if literal_key and isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(_STATUS_NAME.fullmatch(node.value))
    return False


def _string_literals(node: ast.AST) -> Iterator[tuple[str, int]]:
    """String constants that *are* the value: a literal, or the items of a literal collection."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value, node.lineno
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for item in node.elts:
            yield from _string_literals(item)
    elif isinstance(node, ast.IfExp):
        yield from _string_literals(node.body)
        yield from _string_literals(node.orelse)


def _call_name(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""
