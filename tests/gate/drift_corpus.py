"""The drift corpus: small patches to a copy of this tree, drifting or benign, and the checkers.

Each file under `corpus/drift/` and `corpus/benign/` is one patch: its kind, for a drifting one
the checker expected to catch it, and its edits (a file created, a block appended, or a
search/replace that must match exactly once). A patch is applied to a copy of the tree, and
every checker that applies to it runs on that copy:

- `gate`: `python -S -m frozen_lifecycle gate` in the copy, with the copy's own sources (the
  toolkit's under packages/frozen-lifecycle/src, the exporter's under src);
- `mypy`: `mypy --strict` over every patched module of either package, once for the whole corpus
  (each patched module is checked as a module of its own, against the unpatched package, and
  compared with the unpatched module checked the same way);
- `contract`: the eight contract tests (the case study's six, and two of the transition
  check) on a patched `job_status.py`;
- `db`: `reportexport db check --behaviour` on a SQLite database built by the patched tree
  (or, for a migration, on a database built before it), where the command exists.

The corpus lives under `tests/**/corpus/**`, which the gate leaves out by default.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

from frozen_lifecycle import gate
from frozen_lifecycle.gate.config import load_config
from frozen_lifecycle.graph import FIXTURE_NAME, load_graph
from tests.helpers import REPO_ROOT, TOOLKIT_SRC

CORPUS = Path(__file__).with_name("corpus")
CHECKERS = ("gate", "mypy", "contract", "db")
CHECKER_TITLES = {
    "gate": "gate",
    "mypy": "mypy --strict",
    "contract": "contract tests",
    "db": "db check --behaviour",
}
KINDS = {
    "states": "states outside STATES",
    "names": "status words through names",
    "sql": "SQL the rules did not parse",
    "templates": "templates and scripts",
    "edges": "edges and actors",
    "handlers": "side-effect handler registration",
    "outside-src": "files outside src/",
    "readme-table": "hand-written status tables",
    "typed": "values where a typed status is expected",
    "module": "the lifecycle module itself",
    "database": "the database's guard",
}
CONTRACT_MODULE = "src/reportexport/core/job_status.py"
FIGURES_BEGIN = "<!-- BEGIN CORPUS FIGURES -->\n"
FIGURES_END = "<!-- END CORPUS FIGURES -->"


class PatchError(ValueError):
    """A corpus file that is malformed or no longer applies to the tree."""


@dataclass(frozen=True, kw_only=True)
class Edit:
    path: str
    create: str | None = None
    append: str | None = None
    search: str | None = None
    replace: str | None = None

    def apply(self, text: str | None) -> str:
        if self.create is not None:
            if text is not None:
                raise PatchError(f"{self.path} exists already")
            return self.create.lstrip("\n")
        if text is None:
            raise PatchError(f"{self.path} does not exist")
        if self.append is not None:
            return text + self.append
        assert self.search is not None
        assert self.replace is not None
        count = text.count(self.search)
        if count != 1:
            raise PatchError(f"{self.path}: the search text occurs {count} times, not once")
        return text.replace(self.search, self.replace)


@dataclass(frozen=True, kw_only=True)
class Patch:
    name: str
    drifting: bool
    kind: str
    checker: str | None
    why: str
    edits: tuple[Edit, ...]
    regenerate: bool = False
    database: str | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(edit.path for edit in self.edits)

    def python_sources(self) -> tuple[str, ...]:
        """The patched modules mypy checks (its configuration covers both packages' sources)."""
        sources = ("src/", "packages/frozen-lifecycle/src/")
        return tuple(p for p in self.paths if p.startswith(sources) and p.endswith(".py"))


def load(corpus: Path = CORPUS) -> list[Patch]:
    patches = []
    for folder, drifting in (("drift", True), ("benign", False)):
        for path in sorted((corpus / folder).glob("*.toml")):
            patches.append(_parse(path, drifting))
    return patches


def _parse(path: Path, drifting: bool) -> Patch:
    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    why = next((line[1:].strip() for line in text.splitlines() if line.startswith("#")), "")
    edits = []
    for raw in data.get("edit", []):
        modes = [key for key in ("create", "append", "search") if key in raw]
        if len(modes) != 1 or ("search" in raw) != ("replace" in raw):
            raise PatchError(f"{path.name}: an edit needs one of create, append, search+replace")
        edits.append(Edit(**raw))
    if not edits:
        raise PatchError(f"{path.name}: no edit")
    kind, checker = data.get("kind"), data.get("checker")
    if kind not in KINDS:
        raise PatchError(f"{path.name}: unknown kind {kind!r}")
    if drifting != (checker is not None) or (checker is not None and checker not in CHECKERS):
        raise PatchError(f"{path.name}: a drifting patch names its checker, a benign one none")
    return Patch(
        name=path.stem,
        drifting=drifting,
        kind=kind,
        checker=checker,
        why=why,
        edits=tuple(edits),
        regenerate=bool(data.get("regenerate", False)),
        database=data.get("database"),
    )


# -- copies of the tree -------------------------------------------------------------------------


def tree_files(root: Path = REPO_ROOT) -> list[str]:
    """The repository's files (tracked, and new ones not ignored), without the corpus itself."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8")
    corpus = CORPUS.relative_to(root).as_posix() + "/"
    return sorted(
        name
        for name in set(listed.split("\0"))
        if name and not name.startswith(corpus) and (root / name).is_file()
    )


def make_base(dest: Path, root: Path = REPO_ROOT) -> Path:
    for name in tree_files(root):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return dest


def make_copy(base: Path, dest: Path, patch: Patch) -> Path:
    """`base` with the patch applied; unpatched files are hard links unless the patch
    regenerates files (the generator writes in place, which a link would share)."""
    link = not patch.regenerate
    for folder, _, names in os.walk(base):
        here = Path(folder)
        (dest / here.relative_to(base)).mkdir(parents=True, exist_ok=True)
        for name in names:
            source = here / name
            target = dest / source.relative_to(base)
            if link:
                os.link(source, target)
            else:
                shutil.copy2(source, target)
    for edit in patch.edits:
        target = dest / edit.path
        text = target.read_text(encoding="utf-8") if target.exists() else None
        new = edit.apply(text)
        if target.exists():
            target.unlink()  # never write through a link into the base
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(new, encoding="utf-8")
        if new.startswith("#!"):
            target.chmod(0o755)
    if patch.regenerate:
        done = _python(dest, "-m", "reportexport", "generate")
        if done.returncode != 0:
            raise PatchError(f"{patch.name}: reportexport generate failed: {done.stderr}")
    return dest


def _env(tree: Path) -> dict[str, str]:
    toolkit = tree / TOOLKIT_SRC.relative_to(REPO_ROOT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(toolkit), str(tree / "src")))}
    env.pop("REPORTEXPORT_GRAPH", None)
    env.pop("FROZEN_LIFECYCLE_GRAPH", None)
    return env


def _python(tree: Path, *args: str, isolated: bool = False) -> subprocess.CompletedProcess[str]:
    flags = ["-S"] if isolated else []
    return subprocess.run(
        [sys.executable, *flags, *args],
        cwd=tree,
        env=_env(tree),
        capture_output=True,
        text=True,
        check=False,
    )


# -- the checkers -------------------------------------------------------------------------------


def run_gate(tree: Path) -> list[str]:
    """The gate's findings on a copy, run as CI runs it: the standard library alone."""
    done = _python(tree, "-m", "frozen_lifecycle", "gate", isolated=True)
    if done.returncode not in (0, 1) or (done.returncode == 1 and not done.stdout):
        raise RuntimeError(f"the gate failed on {tree}: {done.stdout}{done.stderr}")
    return done.stdout.splitlines()


# What the gate imports: a patch to these must be checked by its own copy of the gate.
GATE_SOURCES = ("packages/frozen-lifecycle/src/", "contracts/", "pyproject.toml")


def run_gate_here(tree: Path, memo: gate.Memo) -> list[str]:
    """The gate's findings on a copy, checked in this process: each file unchanged from a copy
    already checked is read from `memo` instead of being checked again."""
    config = load_config(tree)
    fixture = tree / "contracts" / FIXTURE_NAME
    paths = tuple(tree / p for p in config.paths)
    findings, _ = gate.check_tree(tree, load_graph(fixture), fixture, paths, config, memo=memo)
    return [finding.text() for finding in sorted(set(findings))]


def run_gates(patches: Sequence[Patch], trees: Mapping[str, Path]) -> dict[str, list[str]]:
    """The gate on every copy: in this process with a shared memo, except for patches to the
    gate's own sources, which run their own copy of it as CI does."""
    memo: gate.Memo = {}
    own = [p.name for p in patches if any(path.startswith(GATE_SOURCES) for path in p.paths)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        separate = dict(zip(own, pool.map(run_gate, [trees[n] for n in own]), strict=True))
    return {
        p.name: separate[p.name] if p.name in separate else run_gate_here(trees[p.name], memo)
        for p in patches
    }


_MYPY_LINE = re.compile(r"^(?P<file>[^:]+\.py):\d+: error: (?P<message>.*)$")


def _module_file_name(prefix: str, path: str) -> str:
    return prefix + "__" + re.sub(r"\W", "_", path.removesuffix(".py")) + ".py"


def run_mypy(work: Path, patched: Mapping[str, Mapping[str, str]]) -> dict[str, list[str]]:
    """New mypy errors per patch, from one mypy run over every patched module.

    `patched` maps a patch's name to its patched modules' text by repository path. Each module
    is written as a top-level module of its own beside its unpatched original, so both are
    checked against the real package; a patch is caught where its module has errors the
    original lacks.
    """
    work.mkdir(parents=True, exist_ok=True)
    owners: dict[str, tuple[str | None, str]] = {}
    for name, modules in patched.items():
        for path, text in modules.items():
            file_name = _module_file_name("corpus_" + re.sub(r"\W", "_", name), path)
            (work / file_name).write_text(text, encoding="utf-8")
            owners[file_name] = (name, path)
            original = REPO_ROOT / path
            base_name = _module_file_name("original", path)
            if original.exists() and base_name not in owners:
                shutil.copy(original, work / base_name)
                owners[base_name] = (None, path)
    if not owners:
        return {}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(REPO_ROOT / "pyproject.toml"),
            "--no-error-summary",
            "--no-pretty",
            "--hide-error-context",
            *sorted(str(work / file_name) for file_name in owners),
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "MYPYPATH": str(REPO_ROOT / "src")},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"mypy failed: {done.stdout}{done.stderr}")
    errors: dict[str, Counter[str]] = {file_name: Counter() for file_name in owners}
    for line in done.stdout.splitlines():
        match = _MYPY_LINE.match(line)
        if match and Path(match["file"]).name in errors:
            errors[Path(match["file"]).name][match["message"]] += 1
    found: dict[str, list[str]] = {name: [] for name in patched}
    for file_name, (owner, path) in owners.items():
        if owner is None:
            continue
        baseline = errors.get(_module_file_name("original", path), Counter())
        new = errors[file_name] - baseline
        found[owner] += [f"{path}: {message}" for message in sorted(new)]
    return found


def contract_tests() -> list[Callable[..., None]]:
    from tests.contract import test_job_status_graph as contract

    return [
        getattr(contract, name)
        for name in sorted(dir(contract))
        if name.startswith("test_") and callable(getattr(contract, name))
    ]


def run_contract(tree: Path, name: str) -> list[str]:
    """The eight contract tests (the case study's six, two of the transition check) against
    the copy's job_status module."""
    graph = json.loads((tree / "contracts" / "job-status-graph.json").read_text())
    try:
        module, source = _load_module(tree / CONTRACT_MODULE, "corpus_" + re.sub(r"\W", "_", name))
    except Exception as exc:  # a module that does not load fails every test
        return [f"load: {type(exc).__name__}: {exc}"]
    arguments = {"job_status": module, "graph": graph, "src": source}
    failures = []
    for test in contract_tests():
        wanted = inspect.signature(test).parameters
        try:
            test(**{key: arguments[key] for key in wanted})
        except (Exception, pytest.fail.Exception) as exc:
            failures.append(f"{test.__name__}: {type(exc).__name__}: {exc}".splitlines()[0])
    return failures


def _load_module(path: Path, module_name: str) -> tuple[ModuleType, str]:
    """A module loaded from a file under a name of its own, and its source."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while building
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[module_name]
    return module, path.read_text(encoding="utf-8")


def db_check_available(root: Path = REPO_ROOT) -> bool:
    """Whether `reportexport db check --behaviour` exists in this tree yet."""
    cli = root / "src" / "reportexport" / "entrypoints" / "cli.py"
    return "--behaviour" in cli.read_text(encoding="utf-8")


def needs_database(patch: Patch) -> bool:
    """Drifting patches marked for the database; benign ones that touch the store's SQL."""
    if patch.database is not None:
        return True
    return not patch.drifting and any(
        p.startswith(("src/reportexport/store/", "packages/frozen-lifecycle/src/"))
        for p in patch.paths
    )


def run_db(base: Path, tree: Path, patch: Patch, work: Path) -> list[str]:
    """`db check --behaviour` on SQLite: a fresh database built by the patched tree, or, for a
    migration on an existing database, one built by the unpatched tree to which the new
    migration is then applied as an earlier `db upgrade` applied it (the fixture's fingerprint
    unchanged, so the graph's SQL was not re-applied)."""
    work.mkdir(parents=True, exist_ok=True)
    database = work / f"{patch.name}.sqlite"
    url = f"sqlite:///{database}"
    if patch.database == "existing":
        _must(_python(base, "-m", "reportexport", "db", "upgrade", "--database", url))
        with sqlite3.connect(database) as connection:
            for edit in patch.edits:
                if "/migrations/sqlite/" in edit.path:
                    connection.executescript((tree / edit.path).read_text(encoding="utf-8"))
                    version = int(Path(edit.path).name.split("_", 1)[0])
                    connection.execute(
                        "UPDATE reportexport_meta SET value = ? WHERE key = 'schema_version'",
                        (str(version),),
                    )
    else:
        _must(_python(tree, "-m", "reportexport", "db", "upgrade", "--database", url))
    done = _python(tree, "-m", "reportexport", "db", "check", "--database", url, "--behaviour")
    return [] if done.returncode == 0 else (done.stdout + done.stderr).splitlines() or ["exit"]


def _must(done: subprocess.CompletedProcess[str]) -> None:
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(done.args)}: {done.stdout}{done.stderr}")


# -- measuring the whole corpus -----------------------------------------------------------------


@dataclass(kw_only=True)
class Measured:
    """What each checker found on each patch; a checker that did not run is absent."""

    patches: list[Patch]
    found: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    base_findings: dict[str, list[str]] = field(default_factory=dict)
    db_available: bool = False

    def caught_by(self, name: str) -> set[str]:
        return {checker for checker, lines in self.found[name].items() if lines}


def measure(work: Path, patches: Sequence[Patch]) -> Measured:
    """Apply every patch to its own copy of the tree and run every checker that applies."""
    base = make_base(work / "base")
    result = Measured(patches=list(patches), db_available=db_check_available())
    result.base_findings["gate"] = run_gate(base)  # also compiles the gate for the copies
    trees = {patch.name: make_copy(base, work / "copies" / patch.name, patch) for patch in patches}
    gates = run_gates(patches, trees)
    mypy = run_mypy(
        work / "mypy",
        {
            patch.name: {
                path: (trees[patch.name] / path).read_text(encoding="utf-8")
                for path in patch.python_sources()
            }
            for patch in patches
            if patch.python_sources()
        },
    )
    for patch in patches:
        found = result.found.setdefault(patch.name, {})
        found["gate"] = gates[patch.name]
        if patch.python_sources():
            found["mypy"] = mypy.get(patch.name, [])
        if CONTRACT_MODULE in patch.paths:
            found["contract"] = run_contract(trees[patch.name], patch.name)
        if needs_database(patch) and result.db_available:
            found["db"] = run_db(base, trees[patch.name], patch, work / "databases")
    return result


def figures(measured: Measured) -> str:
    """The corpus figures as the README shows them: per kind, how many patches each checker
    catches; then the benign patches and how many each checker flags. A checker that does not
    apply to any patch of a row shows n/a; patches that only `db check --behaviour` is meant to
    catch, while it is not in this tree, are counted as pending."""
    header = ["kind", "patches", *(CHECKER_TITLES[c] for c in CHECKERS), "caught"]
    rows = [header, ["---"] * len(header)]
    drifting = [p for p in measured.patches if p.drifting]
    benign = [p for p in measured.patches if not p.drifting]
    for kind, title in KINDS.items():
        of_kind = [p for p in drifting if p.kind == kind]
        if of_kind:
            rows.append(
                [title, str(len(of_kind)), *_cells(measured, of_kind), _caught(measured, of_kind)]
            )
    rows.append(
        [
            "**all drifting**",
            str(len(drifting)),
            *_cells(measured, drifting),
            f"**{_caught(measured, drifting)}**",
        ]
    )
    flagged = sum(1 for p in benign if measured.caught_by(p.name))
    rows.append(
        ["**benign**", str(len(benign)), *_cells(measured, benign), f"**{flagged} flagged**"]
    )
    table = "".join("| " + " | ".join(row) + " |\n" for row in rows)
    if not measured.db_available:
        table += (
            "\n`db check --behaviour` is not in this tree yet: the patches only it is meant to "
            "catch are counted as pending.\n"
        )
    return table


def _cells(measured: Measured, patches: Sequence[Patch]) -> list[str]:
    return [_cell(measured, patches, checker) for checker in CHECKERS]


def _caught(measured: Measured, patches: Sequence[Patch]) -> str:
    caught = sum(1 for p in patches if measured.caught_by(p.name))
    pending = sum(
        1
        for p in patches
        if p.checker == "db" and not measured.db_available and not measured.caught_by(p.name)
    )
    return f"{caught}" + (f" (+{pending} pending)" if pending else "")


def _cell(measured: Measured, patches: Iterable[Patch], checker: str) -> str:
    ran = [p for p in patches if checker in measured.found[p.name]]
    if not ran:
        return "n/a"
    return str(sum(1 for p in ran if measured.found[p.name][checker]))


def readme_figures(readme: str) -> str | None:
    start = readme.find(FIGURES_BEGIN)
    end = readme.find(FIGURES_END)
    if start < 0 or end < start:
        return None
    return readme[start + len(FIGURES_BEGIN) : end]


def with_figures(readme: str, table: str) -> str:
    start = readme.index(FIGURES_BEGIN) + len(FIGURES_BEGIN)
    end = readme.index(FIGURES_END)
    return readme[:start] + table + readme[end:]
