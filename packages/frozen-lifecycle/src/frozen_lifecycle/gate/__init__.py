"""The gate: fail CI when anything drifts from the frozen job status graph.

Standard library only, and it never imports the application: every check reads source text,
the AST or committed generated files. Run it as `frozen-lifecycle gate`, or with nothing
installed as `PYTHONPATH=<toolkit>/src python3 -S -m frozen_lifecycle gate`.

Exit status: 0 clean, 1 drift found, 2 the fixture itself is invalid or the call is wrong.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gc
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from frozen_lifecycle import generated
from frozen_lifecycle.gate.commits import GENERATED_DRIFT, GitError, check_commits
from frozen_lifecycle.gate.config import (
    Carriers,
    Config,
    ConfigError,
    compile_patterns,
    load_config,
)
from frozen_lifecycle.gate.findings import FIXTURE_INVALID, Finding, render
from frozen_lifecycle.gate.lexicon import FORBIDDEN_ALIAS, NO_SOURCE_STATE, Facts, Lexicon
from frozen_lifecycle.gate.pragmas import Pragma, StrictRule, Waived, apply_pragmas, find_pragmas
from frozen_lifecycle.gate.python_rules import EFFECT_HANDLERS, HANDLER_DECORATOR, PythonRules
from frozen_lifecycle.gate.sources import PYTHON, display, is_test_file, iter_sources
from frozen_lifecycle.gate.states import STATES_MISSING
from frozen_lifecycle.gate.text_rules import TextRules
from frozen_lifecycle.graph import DEFAULT_FIXTURE, GRAPH_ENV, Graph, InvalidGraphError, load_graph

EXIT_CLEAN, EXIT_DRIFT, EXIT_INVALID = 0, 1, 2
SYNTAX = "syntax"


@dataclass(frozen=True, kw_only=True)
class SourceFile:
    """A file under the checked paths, with the kind of text it holds."""

    path: Path
    name: str
    kind: str
    text: str


@dataclass(frozen=True, kw_only=True)
class Scanned:
    """What the per-file rules found in one file: its facts, its pragmas, a syntax error."""

    facts: Facts
    pragmas: tuple[Pragma | Finding, ...]
    syntax: Finding | None = None


# Per-file results by (fixture fingerprint, file name, text): one process that checks many
# copies of a tree (the drift corpus) reads each unchanged file once.
Memo = dict[tuple[str, str, str], Scanned]


@dataclass(frozen=True, kw_only=True)
class Context:
    root: Path
    graph: Graph
    fixture: Path
    paths: tuple[Path, ...]
    files: tuple[SourceFile, ...]
    scanned: tuple[Scanned, ...]
    config: Config = field(default_factory=Config)


def read_sources(
    root: Path, paths: Sequence[Path], fixture: Path, exclude: Iterable[str] = ()
) -> tuple[SourceFile, ...]:
    files = []
    skip = {display(fixture, root)}
    for path, name, kind in iter_sources(root, paths, compile_patterns(exclude), skip):
        raw = path.read_bytes()
        if b"\0" in raw[:8192]:
            continue  # not text
        text = raw.decode("utf-8", errors="replace")
        files.append(SourceFile(path=path, name=name, kind=kind, text=text))
    return tuple(files)


class Scanner:
    """The per-file rules of one fixture, and what they found in files already seen."""

    def __init__(
        self,
        graph: Graph,
        memo: Memo | None = None,
        generated_paths: Iterable[str] = (),
        carriers: Carriers | None = None,
    ) -> None:
        lexicon = Lexicon.of(graph)
        self.fingerprint = graph.fingerprint
        if carriers is not None and carriers.configured:
            lexicon = lexicon.with_carriers(
                carriers.status_types, dict(carriers.holders), dict(carriers.moves)
            )
        if carriers is not None:
            lexicon = lexicon.with_jobs(
                carriers.job_models, carriers.status_columns, carriers.job_tables
            )
        if carriers is not None and carriers != Carriers():
            self.fingerprint += repr(carriers)
        self.python = PythonRules(lexicon)
        self.text = TextRules(lexicon)
        # Generated files list the states by design; generated-drift keeps them current.
        self.generated = set(generated_paths)
        self.memo = memo

    def scan(self, source: SourceFile) -> Scanned:
        key = (self.fingerprint, source.name, source.text)
        if self.memo is not None and key in self.memo:
            return self.memo[key]
        pragmas = tuple(find_pragmas(source.name, source.text, source.kind))
        if source.kind != PYTHON:
            scanned = Scanned(facts=self.text.check(source.kind, source.text), pragmas=pragmas)
        elif not self.python.may_find(source.text):
            scanned = Scanned(facts=Facts(), pragmas=pragmas)  # nothing a rule reads: not parsed
        else:
            try:
                tree = ast.parse(source.text, filename=source.name)
            except SyntaxError as exc:
                syntax = Finding(
                    path=source.name, line=exc.lineno or 1, code=SYNTAX, message=str(exc.msg)
                )
                scanned = Scanned(facts=Facts(), pragmas=pragmas, syntax=syntax)
            else:
                generated_file = source.name in self.generated
                facts = self.python.check(tree, source.text, generated=generated_file)
                scanned = Scanned(facts=facts, pragmas=pragmas)
        if is_test_file(source.name):
            # Tests write statuses by hand on purpose, as an operator in a shell would; the
            # database's guard, not a compare-and-set, is what they try.
            hits = scanned.facts.hits
            scanned.facts.hits = [hit for hit in hits if hit.code != NO_SOURCE_STATE]
        if self.memo is not None:
            self.memo[key] = scanned
        return scanned


def scan_all(scanner: Scanner, files: Sequence[SourceFile]) -> tuple[Scanned, ...]:
    """Every file's per-file results. With a second core and enough files, a forked child
    scans every other file: what a file gives depends on nothing but the file itself."""
    if scanner.memo is not None or len(files) < PARALLEL_FROM or not _can_fork():
        return tuple(scanner.scan(source) for source in files)
    import pickle  # only here: most runs on a small tree never fork

    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child, which never returns
        os.close(reader)
        status = 1
        try:
            with os.fdopen(writer, "wb") as out:
                pickle.dump([scanner.scan(source) for source in files[1::2]], out)
            status = 0
        finally:
            os._exit(status)
    os.close(writer)
    mine = [scanner.scan(source) for source in files[0::2]]
    with os.fdopen(reader, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(child, 0)
    theirs: list[Scanned]
    try:
        theirs = pickle.loads(data) if status == 0 else []
    except (pickle.UnpicklingError, EOFError):
        theirs = []
    if len(theirs) != len(files[1::2]):  # the child failed: scan its half here
        theirs = [scanner.scan(source) for source in files[1::2]]
    merged: list[Scanned] = []
    for index in range(len(files)):
        merged.append(mine[index // 2] if index % 2 == 0 else theirs[index // 2])
    return tuple(merged)


PARALLEL_FROM = 64  # files; fewer are scanned faster than a process is forked


def _can_fork() -> bool:
    """A second core, and no other thread a fork could leave holding a lock."""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return False
    return hasattr(os, "fork") and (os.cpu_count() or 1) > 1


Check = Callable[[Context], Iterable[Finding]]


def check_sources(ctx: Context) -> Iterator[Finding]:
    """Every per-file rule's findings, then what needs the whole tree: a STATES definition
    somewhere, and side-effect handlers that name exactly the fixture's effects."""
    states_seen = False
    handlers: list[tuple[str, str, int]] = []
    for source, scanned in zip(ctx.files, ctx.scanned, strict=True):
        if scanned.syntax is not None:
            yield scanned.syntax
        for hit in scanned.facts.hits:
            yield Finding(path=source.name, line=hit.line, code=hit.code, message=hit.message)
        states_seen = states_seen or scanned.facts.states_defined
        handlers += [(source.name, name, line) for name, line in scanned.facts.handlers]
    if not states_seen:
        yield Finding(
            path=display(ctx.paths[0], ctx.root),
            line=1,
            code=STATES_MISSING,
            message="no module under the checked paths defines STATES from the fixture",
        )
    yield from _effect_handlers(ctx, handlers)


def _effect_handlers(ctx: Context, handlers: list[tuple[str, str, int]]) -> Iterator[Finding]:
    """Handlers registered in any form name exactly the fixture's side effects."""
    if not handlers:
        return  # a repository without handlers has nothing to check
    names = {name for _, name, _ in handlers}
    first_file = handlers[0][0]
    for effect in ctx.graph.effect_names:
        if effect not in names:
            message = (
                f"no handler for the fixture's side effect {effect!r} "
                f"(by @{HANDLER_DECORATOR} or in a handler table)"
            )
            yield Finding(path=first_file, line=1, code=EFFECT_HANDLERS, message=message)
    for where, name, line in handlers:
        if name not in ctx.graph.effect_names:
            message = f"handler {name!r} names no side effect of the fixture"
            yield Finding(path=where, line=line, code=EFFECT_HANDLERS, message=message)


def check_generated(ctx: Context) -> Iterator[Finding]:
    """Generated files and README regions equal what the fixture generates now."""

    def read(path: str) -> str | None:
        target = ctx.root / path
        return target.read_text(encoding="utf-8") if target.is_file() else None

    artifacts = generated.artifacts(ctx.config.targets())
    command = ctx.config.generated_by
    for drift in generated.drift(ctx.graph, read, artifacts, command=command):
        yield Finding(path=drift.path, line=drift.line, code=GENERATED_DRIFT, message=drift.message)
    for artifact in artifacts:
        if isinstance(artifact, generated.GeneratedFile) and read(artifact.path) is None:
            message = f"a file the configuration names as generated is missing; run `{command}`"
            yield Finding(path=artifact.path, line=1, code=GENERATED_DRIFT, message=message)


# Later layers append their checks here, so one command covers the whole tree.
CHECKS: list[Check] = [
    check_sources,
    check_generated,
]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="frozen-lifecycle gate",
        description="Fail when code, generated files or history drift from the job status graph.",
    )
    add_arguments(p)
    return p


def add_arguments(
    p: argparse.ArgumentParser,
    *,
    graph_envs: Sequence[str] = (GRAPH_ENV,),
    graph_fallback: Path | None = None,
) -> None:
    """The gate's options; `graph_envs` are the variables that may name the fixture (the first
    one set wins), `graph_fallback` the fixture used where the root has none."""
    p.set_defaults(graph_envs=tuple(graph_envs), graph_fallback=graph_fallback, gate_prog=p.prog)
    p.add_argument(
        "--graph",
        metavar="FILE",
        help=f"the fixture (default: the config's graph, ${graph_envs[0]}, "
        f"else {DEFAULT_FIXTURE} in the root)",
    )
    p.add_argument("--format", choices=("text", "json", "github"), default="text")
    p.add_argument(
        "--commits",
        metavar="A..B",
        help="also check that commits changing the fixture carry only regenerated files "
        "(an empty A means every ancestor of B)",
    )
    p.add_argument("--root", default=".", help="repository root (default: the current directory)")
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PATTERN",
        help="also leave out paths matching PATTERN (repeatable; `**` for any depth)",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or directories (default: the config's paths, else the whole repository)",
    )


def resolve_fixture(
    root: Path,
    option: str | None,
    config: Config | None = None,
    graph_envs: Sequence[str] = (GRAPH_ENV,),
    fallback: Path | None = None,
) -> Path:
    """--graph, else the configuration's graph, else the first variable of `graph_envs` that
    is set, else contracts/job-status-graph.json under the root (else `fallback`, if any)."""
    if option:
        return Path(option)
    if config is not None and config.graph:
        return root / config.graph
    for name in graph_envs:
        if os.environ.get(name):
            return Path(os.environ[name])
    local = root / DEFAULT_FIXTURE
    return fallback if fallback is not None and not local.is_file() else local


def fixture_of(args: argparse.Namespace, root: Path, config: Config | None) -> Path:
    """The fixture a command parsed by `add_arguments` (or one like it) names."""
    return resolve_fixture(
        root,
        getattr(args, "graph", None),
        config,
        getattr(args, "graph_envs", (GRAPH_ENV,)),
        getattr(args, "graph_fallback", None),
    )


@contextlib.contextmanager
def _without_cyclic_gc() -> Iterator[None]:
    """Parsing every module allocates a great many nodes and no cycles worth collecting; the
    cyclic collector would rescan them all, again and again, for nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run(args: argparse.Namespace) -> int:
    prog = getattr(args, "gate_prog", "frozen-lifecycle gate")
    with _without_cyclic_gc():
        root = Path(args.root)
        try:
            config = load_config(root)
        except ConfigError as exc:
            print(f"{prog}: {exc}", file=sys.stderr)
            return EXIT_INVALID
        fixture = fixture_of(args, root, config)
        fixture_name = display(fixture, root)
        try:
            graph = load_graph(fixture)
        except FileNotFoundError:
            return _report([_invalid(fixture_name, "fixture not found")], args.format, EXIT_INVALID)
        except InvalidGraphError as exc:
            findings = [_invalid(fixture_name, defect) for defect in exc.defects]
            return _report(findings, args.format, EXIT_INVALID)

        paths = tuple(root / p for p in (args.paths or config.paths))
        missing = [p for p in paths if not p.exists()]
        if missing:
            print(f"{prog}: no such path: {', '.join(map(str, missing))}", file=sys.stderr)
            return EXIT_INVALID
        findings, waived = check_tree(root, graph, fixture, paths, config, exclude=args.exclude)
        if args.commits:
            try:
                findings += check_commits(root, args.commits, fixture_name, config)
            except GitError as exc:
                print(f"{prog}: {exc}", file=sys.stderr)
                return EXIT_INVALID
        invalid = any(f.code == FIXTURE_INVALID for f in findings)
        code = EXIT_INVALID if invalid else EXIT_DRIFT if findings else EXIT_CLEAN
        return _report(findings, args.format, code, graph, waived)


def check_tree(
    root: Path,
    graph: Graph,
    fixture: Path,
    paths: Sequence[Path],
    config: Config,
    *,
    exclude: Iterable[str] = (),
    memo: Memo | None = None,
) -> tuple[list[Finding], list[Waived]]:
    """Every check over the files under `paths`: the findings left after the pragmas, and the
    exceptions the pragmas made."""
    files = read_sources(root, paths, fixture, (*config.exclude, *exclude))
    generated_paths = generated.artifact_paths(generated.artifacts(config.targets()))
    scanner = Scanner(graph, memo, generated_paths, config.carriers)
    scanned = scan_all(scanner, files)
    ctx = Context(
        root=root,
        graph=graph,
        fixture=fixture,
        paths=tuple(paths),
        files=files,
        scanned=scanned,
        config=config,
    )
    findings = [finding for check in CHECKS for finding in check(ctx)]
    pragmas: list[Pragma] = []
    for item in (p for one in scanned for p in one.pragmas):
        if isinstance(item, Pragma):
            pragmas.append(item)
        else:
            findings.append(item)
    strict = StrictRule({FORBIDDEN_ALIAS}, compile_patterns(config.strict))
    return apply_pragmas(findings, pragmas, strict)


def _invalid(path: str, defect: str) -> Finding:
    return Finding(path=path, line=1, code=FIXTURE_INVALID, message=defect)


def _report(
    findings: Sequence[Finding],
    style: str,
    code: int,
    graph: Graph | None = None,
    waived: Sequence[Waived] = (),
) -> int:
    sys.stdout.write(render(sorted(set(findings)), style))
    if waived:
        print(
            f"gate: {len(waived)} deliberate exception(s), each with its reason:", file=sys.stderr
        )
        for exception in sorted(waived, key=lambda w: w.finding):
            print(f"  {exception.text()}", file=sys.stderr)
    if code == EXIT_CLEAN and graph is not None:
        print(f"gate: clean against {graph.source} ({graph.fingerprint[:12]})", file=sys.stderr)
    else:
        print(f"gate: {len(set(findings))} finding(s)", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    return run(parser().parse_args(argv))
