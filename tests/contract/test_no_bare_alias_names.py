"""No name in the access modules is a bare forbidden alias of the lifecycle: a variable, an
argument or a function named like one of the fixture's forbidden aliases reads as a status the
graph does not have (the gate refuses the quoted literals; this is the same rule for names,
which it does not see).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.helpers import GRAPH, REPO_ROOT

SOURCE = REPO_ROOT / "src" / "reportexport"
# The modules of who may export what (issue 22), clean so far. Older modules still bind a few
# such names (`error` arguments, `done` in the effects handlers); each joins once renamed.
CLEAN = (
    "services/access.py",
    "services/company_sign_in.py",
    "services/exports.py",
    "entrypoints/commands.py",
    "web/api/routes/groups.py",
    "web/dashboard/groups.py",
)


def bound_names(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every name the code binds: assignment targets, loop and `with` targets, arguments,
    functions and classes."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.lineno, node.id
        elif isinstance(node, ast.arg):
            yield node.lineno, node.arg
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.lineno, node.name


def bare_alias_names(path: Path) -> list[str]:
    aliases = set(GRAPH.forbidden_aliases)
    tree = ast.parse(path.read_text("utf-8"), str(path))
    return [
        f"{path.relative_to(REPO_ROOT)}:{line}: {name}"
        for line, name in bound_names(tree)
        if name.lower() in aliases
    ]


def test_no_name_in_the_access_modules_is_a_bare_forbidden_alias() -> None:
    found = [hit for module in CLEAN for hit in bare_alias_names(SOURCE / module)]
    assert found == []


def test_the_check_sees_a_local_and_an_argument_named_for_an_alias() -> None:
    alias = GRAPH.forbidden_aliases[0]
    tree = ast.parse(f"def f({alias}):\n    for {alias} in {alias}:\n        pass\n")
    assert {(1, alias), (2, alias)} <= set(bound_names(tree))
