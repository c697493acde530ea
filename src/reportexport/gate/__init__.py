"""The gate: fail CI when anything drifts from the frozen job status graph.

Standard library only, and it never imports the application: every check reads source text,
the AST or committed generated files. Run it as `reportexport gate` or
`python -m reportexport.gate`.

Exit status: 0 clean, 1 drift found, 2 the fixture itself is invalid or the call is wrong.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from reportexport import generated
from reportexport.gate.commits import GENERATED_DRIFT, GitError, check_commits
from reportexport.gate.findings import FIXTURE_INVALID, Finding, render
from reportexport.gate.sources import PYTHON_SUFFIXES, display, iter_sources
from reportexport.gate.states import STATES_MISSING, check_states, states_assignments
from reportexport.gate.vocabulary import Vocabulary
from reportexport.graph import (
    FIXTURE_NAME,
    GRAPH_ENV,
    Graph,
    InvalidGraphError,
    default_fixture_path,
    load_graph,
)

EXIT_CLEAN, EXIT_DRIFT, EXIT_INVALID = 0, 1, 2
SYNTAX = "syntax"


@dataclass(frozen=True, kw_only=True)
class SourceFile:
    """A file under the checked paths, read (and, for Python, parsed) once for every check."""

    path: Path
    name: str
    text: str
    tree: ast.Module | None = None
    syntax_error: SyntaxError | None = None


@dataclass(frozen=True, kw_only=True)
class Context:
    root: Path
    graph: Graph
    fixture: Path
    paths: tuple[Path, ...]
    files: tuple[SourceFile, ...]

    def python(self) -> Iterator[tuple[SourceFile, ast.Module]]:
        """The Python files that parsed, with their trees."""
        return ((f, f.tree) for f in self.files if f.tree is not None)


def read_sources(root: Path, paths: tuple[Path, ...], fixture: Path) -> tuple[SourceFile, ...]:
    files = []
    for path in iter_sources(paths, {fixture.resolve()}):
        name = display(path, root)
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix not in PYTHON_SUFFIXES:
            files.append(SourceFile(path=path, name=name, text=text))
            continue
        try:
            tree = ast.parse(text, filename=name)
        except SyntaxError as exc:
            files.append(SourceFile(path=path, name=name, text=text, syntax_error=exc))
        else:
            files.append(SourceFile(path=path, name=name, text=text, tree=tree))
    return tuple(files)


Check = Callable[[Context], Iterable[Finding]]


def check_sources(ctx: Context) -> Iterator[Finding]:
    """Forbidden aliases, status words and STATES in every source file under the paths."""
    vocabulary = Vocabulary(ctx.graph.states, ctx.graph.forbidden_aliases)
    generated_files = generated.artifact_paths()
    states_seen = False
    for source in ctx.files:
        if source.syntax_error is not None:
            exc = source.syntax_error
            yield Finding(path=source.name, line=exc.lineno or 1, code=SYNTAX, message=str(exc.msg))
            continue
        if source.tree is None:
            hits = list(vocabulary.scan_text(source.text))
        else:
            hits = list(vocabulary.scan_python(source.tree))
            for line, value in states_assignments(source.tree):
                states_seen = True
                if source.name not in generated_files:  # generated-drift covers those
                    hits += check_states(value, line, ctx.graph.states)
        for hit in hits:
            yield Finding(path=source.name, line=hit.line, code=hit.code, message=hit.message)
    if not states_seen:
        yield Finding(
            path=display(ctx.paths[0], ctx.root),
            line=1,
            code=STATES_MISSING,
            message="no module under the checked paths defines STATES from the fixture",
        )


def check_generated(ctx: Context) -> Iterator[Finding]:
    """Generated files and README regions equal what the fixture generates now."""

    def read(path: str) -> str | None:
        target = ctx.root / path
        return target.read_text(encoding="utf-8") if target.is_file() else None

    for drift in generated.drift(ctx.graph, read):
        yield Finding(path=drift.path, line=drift.line, code=GENERATED_DRIFT, message=drift.message)


HANDLER_DECORATOR = "side_effect_handler"
EFFECT_HANDLERS = "effect-handlers"


def check_effect_handlers(ctx: Context) -> Iterator[Finding]:
    """Functions decorated @side_effect_handler name exactly the fixture's side effects."""
    found: dict[str, tuple[str, int]] = {}
    first_file: str | None = None
    for source, tree in ctx.python():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                (isinstance(d, ast.Name) and d.id == HANDLER_DECORATOR)
                or (isinstance(d, ast.Attribute) and d.attr == HANDLER_DECORATOR)
                for d in node.decorator_list
            ):
                first_file = first_file or source.name
                found[node.name] = (source.name, node.lineno)
    if not found or first_file is None:
        return  # a repository without handlers has nothing to check
    for effect in ctx.graph.effect_names:
        if effect not in found:
            message = f"no @{HANDLER_DECORATOR} for the fixture's side effect {effect!r}"
            yield Finding(path=first_file, line=1, code=EFFECT_HANDLERS, message=message)
    for name, (where, line) in found.items():
        if name not in ctx.graph.effect_names:
            message = f"handler {name!r} names no side effect of the fixture"
            yield Finding(path=where, line=line, code=EFFECT_HANDLERS, message=message)


API_ENUM = "api-status-enum"
STATUS_ENUM_NAMES = frozenset({"JobStatus", "Status", "StatusEnum"})


def check_api_status_enum(ctx: Context) -> Iterator[Finding]:
    """An API's status enum is built from the fixture, never listed by hand (a file generated
    from the fixture lists them, and `generated-drift` keeps it equal to the fixture)."""
    states = set(ctx.graph.states)
    generated_files = generated.artifact_paths()
    for source, tree in ctx.python():
        if source.name in generated_files:
            continue
        for node in ast.walk(tree):
            targets: list[ast.expr] = []
            body: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets, body = list(node.targets), [node.value]
            elif isinstance(node, ast.ClassDef) and any(
                isinstance(b, ast.Name | ast.Attribute) and "Enum" in ast.unparse(b)
                for b in node.bases
            ):
                targets, body = [ast.Name(id=node.name)], list(node.body)
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if not names & STATUS_ENUM_NAMES:
                continue
            listed = sorted(
                {
                    c.value
                    for part in body
                    for c in ast.walk(part)
                    if isinstance(c, ast.Constant)
                    and isinstance(c.value, str)
                    and c.value in states
                }
            )
            if listed:
                yield Finding(
                    path=source.name,
                    line=getattr(node, "lineno", 1),
                    code=API_ENUM,
                    message=f"the status enum lists {', '.join(listed)} by hand; "
                    "build it from the fixture's states",
                )


# Later layers append their checks here, so one command covers the whole tree.
CHECKS: list[Check] = [
    check_sources,
    check_generated,
    check_effect_handlers,
    check_api_status_enum,
]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="reportexport gate",
        description="Fail when code, generated files or history drift from the job status graph.",
    )
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--graph",
        metavar="FILE",
        help=f"the fixture (default: ${GRAPH_ENV}, else contracts/{FIXTURE_NAME} in the root)",
    )
    p.add_argument("--format", choices=("text", "json", "github"), default="text")
    p.add_argument(
        "--commits",
        metavar="A..B",
        help="also check that commits changing the fixture carry only regenerated files "
        "(an empty A means every ancestor of B)",
    )
    p.add_argument("--root", default=".", help="repository root (default: the current directory)")
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: src)")


def resolve_fixture(root: Path, option: str | None) -> Path:
    if option:
        return Path(option)
    if os.environ.get(GRAPH_ENV):
        return Path(os.environ[GRAPH_ENV])
    local = root / "contracts" / FIXTURE_NAME
    return local if local.is_file() else default_fixture_path()


def run(args: argparse.Namespace) -> int:
    root = Path(args.root)
    fixture = resolve_fixture(root, args.graph)
    fixture_name = display(fixture, root)
    try:
        graph = load_graph(fixture)
    except FileNotFoundError:
        return _report([_invalid(fixture_name, "fixture not found")], args.format, EXIT_INVALID)
    except InvalidGraphError as exc:
        findings = [_invalid(fixture_name, defect) for defect in exc.defects]
        return _report(findings, args.format, EXIT_INVALID)

    paths = tuple(root / p for p in (args.paths or ["src"]))
    missing = [p for p in paths if not p.exists()]
    if missing:
        print(f"reportexport gate: no such path: {', '.join(map(str, missing))}", file=sys.stderr)
        return EXIT_INVALID
    files = read_sources(root, paths, fixture)
    ctx = Context(root=root, graph=graph, fixture=fixture, paths=paths, files=files)
    findings = [finding for check in CHECKS for finding in check(ctx)]
    if args.commits:
        try:
            findings += check_commits(root, args.commits, fixture_name)
        except GitError as exc:
            print(f"reportexport gate: {exc}", file=sys.stderr)
            return EXIT_INVALID
    invalid = any(f.code == FIXTURE_INVALID for f in findings)
    code = EXIT_INVALID if invalid else EXIT_DRIFT if findings else EXIT_CLEAN
    return _report(findings, args.format, code, graph)


def _invalid(path: str, defect: str) -> Finding:
    return Finding(path=path, line=1, code=FIXTURE_INVALID, message=defect)


def _report(findings: Sequence[Finding], style: str, code: int, graph: Graph | None = None) -> int:
    sys.stdout.write(render(sorted(findings), style))
    if code == EXIT_CLEAN and graph is not None:
        print(f"gate: clean against {graph.source} ({graph.fingerprint[:12]})", file=sys.stderr)
    else:
        print(f"gate: {len(findings)} finding(s)", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    return run(parser().parse_args(argv))
