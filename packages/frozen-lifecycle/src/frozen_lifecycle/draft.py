"""`frozen-lifecycle init --from PATH:NAME`: a fixture drafted from what a repository has.

The states come from what already holds them: a Python enum or class of string constants
(`jobs.py:Status`), a `Literal` alias (`types.py:JobState`), a SQL enum type
(`schema.sql:job_status`) or a table's `CHECK (status IN (...))` (`schema.sql:jobs`). The draft
names them, takes the first as the initial state and the ones that read as ends as terminal;
its edges are left for a person to write and confirm (each with its actor), so the draft is
not a valid fixture until they are: nothing guesses which moves the lifecycle allows.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

# Words that end a job's life in most systems: the draft's guess at the terminal states.
# One string, not a collection of words: any of them may be a fixture's state or alias.
_END_WORDS = """succeeded success successful finished complete completed done failed failure
error errored cancelled canceled aborted stopped killed expired dead discarded rejected"""
_ENDS = frozenset(_END_WORDS.split())
_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
_QUOTED = re.compile(r"'((?:[^']|'')*)'")


class DraftError(ValueError):
    pass


@dataclass(frozen=True)
class Draft:
    """The states a source holds, and the name that carries them (for `status-types`)."""

    carrier: str
    states: tuple[str, ...]

    def fixture(self, job_type: str | None = None) -> str:
        """The draft fixture's text: states, a guessed initial and terminal states, no edges."""
        document = {
            "job_type": job_type or _snake(self.carrier),
            "states": list(self.states),
            "initial": self.states[0],
            "terminal": [s for s in self.states if s in _ENDS],
            "forbidden_aliases": [],
            "transitions": [],
            "side_effects": {},
        }
        return json.dumps(document, indent=2) + "\n"


def draft_from(root: Path, source: str) -> Draft:
    """The states of `source` (`PATH:NAME`, the path from the repository's root)."""
    path_text, _, name = source.rpartition(":")
    if not path_text or not name:
        raise DraftError(
            f"--from takes PATH:NAME (jobs.py:Status, schema.sql:jobs), not {source!r}"
        )
    path = root / path_text
    if not path.is_file():
        raise DraftError(f"--from: no such file {path_text}")
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".py", ".pyi"):
        words = _python_states(text, name)
    elif path.suffix == ".sql":
        words = _sql_states(text, name)
    else:
        raise DraftError(f"--from reads a Python or SQL file, not {path_text}")
    if not words:
        raise DraftError(f"--from: {path_text} holds no states named {name}")
    bad = [w for w in words if not _NAME.fullmatch(w)]
    if bad:
        raise DraftError(f"--from: {', '.join(map(repr, bad))} cannot be a state's name")
    return Draft(carrier=name, states=tuple(dict.fromkeys(words)))


def _python_states(text: str, name: str) -> list[str]:
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return _members(node)
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value:
                return _literal_words(node.value)
    return []


def _members(node: ast.ClassDef) -> list[str]:
    auto = any(ast.unparse(b).endswith("StrEnum") for b in node.bases)
    words = []
    for statement in node.body:
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            continue
        target, value = statement.targets[0], statement.value
        if not isinstance(target, ast.Name):
            continue
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            words.append(value.value)
        elif auto and isinstance(value, ast.Call) and ast.unparse(value.func).endswith("auto"):
            words.append(target.id.lower())
    return words


def _literal_words(value: ast.expr) -> list[str]:
    if isinstance(value, ast.Subscript) and ast.unparse(value.value).endswith("Literal"):
        items = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
        return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
    return []


def _sql_states(text: str, name: str) -> list[str]:
    """A `CREATE TYPE name AS ENUM (...)`, else the `CHECK (status IN (...))` of table `name`
    (in its CREATE TABLE or an ALTER TABLE that adds it)."""
    quoted_name = r'(?:\w+\.)?"?' + re.escape(name) + r'"?'
    enum = re.search(
        r"\bCREATE\s+TYPE\s+" + quoted_name + r"\s+AS\s+ENUM\s*\(([^)]*)\)", text, re.I | re.S
    )
    if enum is not None:
        return [w.replace("''", "'") for w in _QUOTED.findall(enum.group(1))]
    check = r"CHECK\s*\(\s*\(?\s*\"?status\"?\s+IN\s*\(([^)]*)\)"
    table = re.search(
        r"\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?" + quoted_name + r"\s*\(", text, re.I
    )
    if table is not None:
        body = text[table.end() : _closing(text, table.end())]
        found = re.search(check, body, re.I | re.S)
        if found is not None:
            return _QUOTED.findall(found.group(1))
    altered = re.search(
        r"\bALTER\s+TABLE\s+(?:ONLY\s+)?" + quoted_name + r"\b[^;]*?" + check, text, re.I | re.S
    )
    return _QUOTED.findall(altered.group(1)) if altered is not None else []


def _closing(text: str, start: int) -> int:
    depth = 1
    for index in range(start, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    return len(text)


def _snake(name: str) -> str:
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    return snake if _NAME.fullmatch(snake) else "job"
