"""Mutation testing of the pure core: each module against its own narrow test subset.

`./scripts/mutate [MODULE ...]` runs mutmut once per module named in `targets.toml` (all of them
by default), each in a work directory of its own under `.mutate/`, and prints per module the
mutants, how many the tests caught, how many survived, how many are documented equivalents
(`equivalents.toml`, left out of the score and not reported again) and the score, then each
survivor as one line: file, line, function, the line before and after the change.

mutmut mutates code inside functions and methods only: module constants, class bodies and the
defaults of dataclass fields are not mutated, and a function that only runs while its module is
imported is never seen running a mutant ("no test ran it"). The tests pin those anyway.

Exit status: 0 when every module reaches its `minimum`, 1 when one does not, 2 on a wrong call.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# mutmut's verdicts, grouped: a timeout or a crash under a mutant is a test noticing it.
CAUGHT = {"killed", "timeout", "segfault", "caught by type check"}
NOT_CAUGHT = {"survived", "no tests", "suspicious"}


@dataclass(frozen=True, kw_only=True)
class Target:
    module: str
    tests: tuple[str, ...]
    minimum: float
    # Where the module's package lives (a src layout) and its name: the exporter's by default,
    # or the toolkit's (`source = "packages/frozen-lifecycle/src"`, `package = "frozen_lifecycle"`).
    source: str = "src"
    package: str = "reportexport"

    @property
    def path(self) -> str:
        """The module's file in the repository."""
        return f"{self.source}/{self.package}/{self.module}.py"

    @property
    def mutmut_path(self) -> str:
        """The same file in the work directory, whose `src` is the module's source directory."""
        return f"src/{self.package}/{self.module}.py"

    @property
    def workdir_name(self) -> str:
        return self.module.replace("/", ".")


@dataclass(frozen=True, kw_only=True)
class Equivalent:
    module: str
    function: str
    before: str
    after: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class Mutant:
    name: str
    verdict: str
    function: str
    line: int
    before: str
    after: str

    def one_line(self, path: str) -> str:
        note = "  (no test ran it)" if self.verdict == "no tests" else ""
        if self.verdict == "suspicious":
            note = "  (suspicious: the tests ended oddly)"
        before, after = self.before or "(nothing)", self.after or "(removed)"
        return f"{path}:{self.line}: {self.function}: {before}  =>  {after}{note}"


@dataclass(kw_only=True)
class Outcome:
    target: Target
    total: int = 0
    caught: int = 0
    survivors: list[Mutant] = field(default_factory=list)
    equivalents: int = 0
    stale: list[Equivalent] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def scored(self) -> int:
        return self.total - self.equivalents

    @property
    def score(self) -> float:
        return 100.0 * self.caught / self.scored if self.scored else 100.0


class UsageError(Exception):
    pass


def load_targets(path: Path) -> dict[str, Target]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    default_minimum = float(data.get("minimum", 90))
    targets: dict[str, Target] = {}
    for entry in data.get("target", []):
        target = Target(
            module=entry["module"],
            tests=tuple(entry["tests"]),
            minimum=float(entry.get("minimum", default_minimum)),
            source=entry.get("source", "src"),
            package=entry.get("package", "reportexport"),
        )
        targets[target.module] = target
    return targets


def load_equivalents(path: Path) -> list[Equivalent]:
    if not path.exists():
        return []
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    found = []
    for entry in data.get("equivalent", []):
        if not entry.get("reason", "").strip():
            raise UsageError(f"{path}: an equivalent mutant without a reason: {entry}")
        found.append(
            Equivalent(
                module=entry["module"],
                function=entry["function"],
                before=_squash(entry["before"]),
                after=_squash(entry["after"]),
                reason=entry["reason"],
            )
        )
    return found


def _squash(text: str) -> str:
    return " ".join(text.split())


def _mutmut_config(target: Target, root: Path) -> str:
    """The project's pyproject.toml (its pytest settings) with this module's [tool.mutmut]."""
    project = (root / "pyproject.toml").read_text(encoding="utf-8")

    def toml_list(items: Iterable[str]) -> str:
        return "[" + ", ".join(f'"{item}"' for item in items) + "]"

    return (
        project
        + "\n[tool.mutmut]\n"
        + 'source_paths = ["src"]\n'
        + f'only_mutate = ["{target.mutmut_path}"]\n'
        + 'also_copy = ["contracts", "packages"]\n'
        + f"pytest_add_cli_args_test_selection = {toml_list(target.tests)}\n"
        + 'pytest_add_cli_args = ["-p", "no:cacheprovider"]\n'
        + "use_git_change_detection = false\n"
    )


def prepare_workdir(target: Target, root: Path, work: Path) -> Path:
    """A fresh directory that looks like the project to mutmut: `src` links to the module's
    source directory (mutmut copies and mutates what is under `src`), and links to tests,
    contracts and packages (the toolkit's tests live there)."""
    workdir = work / target.workdir_name
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    (workdir / "src").symlink_to(root / target.source, target_is_directory=True)
    for name in ("tests", "contracts", "packages"):
        (workdir / name).symlink_to(root / name, target_is_directory=True)
    (workdir / "pyproject.toml").write_text(_mutmut_config(target, root), encoding="utf-8")
    return workdir


def _mutmut(workdir: Path, *args: str, log: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, REPORTEXPORT_MUTATION="1")
    command = [sys.executable, "-m", "mutmut", *args]
    if log is None:
        return subprocess.run(
            command, cwd=workdir, env=env, capture_output=True, text=True, check=False
        )
    with log.open("w", encoding="utf-8") as out:
        return subprocess.run(
            command,
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )


_RESULT = re.compile(r"^\s*(?P<name>\S+): (?P<verdict>.+?)\s*$")


def _function_of(name: str) -> str:
    """`x_render` -> `render`; `xǁCsvOptionsǁ__post_init__` -> `CsvOptions.__post_init__`."""
    mangled = name.rpartition(".")[2].rpartition("__mutmut_")[0]
    if mangled.startswith("xǁ"):
        _, cls, method = mangled.split("ǁ")
        return f"{cls}.{method}"
    return mangled.removeprefix("x_")


def _function_lines(source: str) -> dict[str, tuple[int, int]]:
    spans: dict[str, tuple[int, int]] = {}
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            spans[node.name] = (node.lineno, node.end_lineno or node.lineno)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    spans[f"{node.name}.{item.name}"] = (
                        item.lineno,
                        item.end_lineno or item.lineno,
                    )
    return spans


def _mutated_functions(mutated_file: Path) -> dict[str, str]:
    """Every function of mutmut's rewritten module (originals and mutants) by its name."""
    source = mutated_file.read_text(encoding="utf-8")
    lines = source.splitlines()
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name:
            found[node.name] = "\n".join(lines[node.lineno - 1 : node.end_lineno])
    return found


_HUNK = re.compile(r"^@@ -(?P<start>\d+)")


def _change(functions: dict[str, str], name: str) -> tuple[int, str, str]:
    """Where in its function a mutant changes the code (1 is the `def` line), and the lines
    before and after the change."""
    local = name.rpartition(".")[2]
    original_name = local.rpartition("__mutmut_")[0] + "__mutmut_orig"
    original = functions[original_name].replace(original_name, "f", 1).splitlines()
    mutant = functions[local].replace(local, "f", 1).splitlines()
    offset = 1
    removed: list[str] = []
    added: list[str] = []
    for line in difflib.unified_diff(original, mutant, n=0, lineterm=""):
        hunk = _HUNK.match(line)
        if hunk and not removed and not added:
            offset = max(1, int(hunk["start"]))
        if line.startswith(("---", "+++", "@@")):
            continue
        if line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
    return offset, _squash(" ".join(removed)), _squash(" ".join(added))


def run_target(target: Target, root: Path, work: Path, equivalents: list[Equivalent]) -> Outcome:
    outcome = Outcome(target=target)
    started = time.monotonic()
    workdir = prepare_workdir(target, root, work)
    log = workdir / "mutmut.log"
    run = _mutmut(workdir, "run", "--max-children", str(max_children()), log=log)
    output = log.read_text(encoding="utf-8", errors="replace")
    # mutmut stops before running any mutant when no selected test reaches a mutated function:
    # then every mutant is one that no test ran.
    untested = "could not find any test case for any mutant" in output
    if run.returncode != 0 and not untested:
        # the progress spinner draws with Braille characters (U+2800 and up)
        lines = [line for line in output.splitlines() if line.strip() and line[:1] < "\u2800"]
        tail = "\n".join(lines[-25:])
        raise RuntimeError(f"mutmut failed on {target.module} (see {log}):\n{tail}")
    results = _mutmut(workdir, "results", "--all", "true")
    source = (root / target.path).read_text(encoding="utf-8")
    spans = _function_lines(source)
    functions = _mutated_functions(workdir / "mutants" / target.mutmut_path)
    mine = [e for e in equivalents if e.module == target.module]
    used: set[int] = set()
    for line in results.stdout.splitlines():
        match = _RESULT.match(line)
        if not match:
            continue
        name, verdict = match["name"], match["verdict"]
        if untested and verdict == "not checked":
            verdict = "no tests"
        outcome.total += 1
        if verdict in CAUGHT:
            outcome.caught += 1
            continue
        if verdict not in NOT_CAUGHT:
            raise RuntimeError(f"{target.module}: mutant {name} was not checked ({verdict})")
        function = _function_of(name)
        offset, before, after = _change(functions, name)
        mutant = Mutant(
            name=name,
            verdict=verdict,
            function=function,
            line=spans.get(function, (1, 1))[0] + offset - 1,
            before=before,
            after=after,
        )
        index = next(
            (
                i
                for i, e in enumerate(mine)
                if (e.function, e.before, e.after) == (function, before, after)
            ),
            None,
        )
        if index is not None:
            outcome.equivalents += 1
            used.add(index)
            continue
        outcome.survivors.append(mutant)
    outcome.stale = [e for i, e in enumerate(mine) if i not in used]
    outcome.survivors.sort(key=lambda m: m.line)
    outcome.seconds = time.monotonic() - started
    return outcome


def max_children() -> int:
    configured = os.environ.get("REPORTEXPORT_MUTATE_CHILDREN")
    if configured:
        return max(1, int(configured))
    return max(1, min(2, os.cpu_count() or 1))


def report(outcome: Outcome) -> str:
    t = outcome.target
    lines = [
        f"{t.module}: {outcome.total} mutants, {outcome.caught} caught, "
        f"{len(outcome.survivors)} survived, {outcome.equivalents} equivalent, "
        f"score {outcome.score:.1f}% (minimum {t.minimum:g}%) in {outcome.seconds:.0f}s"
    ]
    lines += ["  " + m.one_line(t.path) for m in outcome.survivors]
    lines += [
        f"  stale equivalent (no such mutant now): {e.function}: {e.before}  =>  {e.after}"
        for e in outcome.stale
    ]
    return "\n".join(lines)


def table(outcomes: Sequence[Outcome]) -> str:
    rows = [
        "| module | mutants | caught | survived | equivalent | score |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for o in outcomes:
        rows.append(
            f"| `{o.target.module}` | {o.total} | {o.caught} | {len(o.survivors)} "
            f"| {o.equivalents} | {o.score:.1f}% |"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/mutate", description=__doc__.splitlines()[0])
    parser.add_argument(
        "modules", nargs="*", help="modules as named in targets.toml (default: all)"
    )
    parser.add_argument("--targets", type=Path, default=HERE / "targets.toml")
    parser.add_argument("--equivalents", type=Path, default=HERE / "equivalents.toml")
    parser.add_argument("--work", type=Path, default=ROOT / ".mutate", help="work directory")
    parser.add_argument("--list", action="store_true", help="list the modules and their tests")
    args = parser.parse_args(argv)
    try:
        targets = load_targets(args.targets)
        equivalents = load_equivalents(args.equivalents)
        unknown = [m for m in args.modules if m not in targets]
        if unknown:
            raise UsageError(
                f"not a module of {args.targets.name}: {', '.join(unknown)} "
                f"(known: {', '.join(targets)})"
            )
    except UsageError as exc:
        print(f"scripts/mutate: {exc}", file=sys.stderr)
        return 2
    chosen = [targets[m] for m in args.modules] if args.modules else list(targets.values())
    if args.list:
        for t in chosen:
            print(f"{t.module}: {' '.join(t.tests)}")
        return 0
    started = time.monotonic()
    outcomes, broken = [], []
    for target in chosen:
        try:
            outcome = run_target(target, ROOT, args.work.resolve(), equivalents)
        except RuntimeError as exc:
            print(exc, flush=True)
            broken.append(target.module)
            continue
        outcomes.append(outcome)
        print(report(outcome), flush=True)
    print()
    print(table(outcomes))
    print(f"\n{len(outcomes)} modules in {time.monotonic() - started:.0f}s")
    failing = [o.target.module for o in outcomes if o.score < o.target.minimum]
    if broken:
        print(f"not run (mutmut failed): {', '.join(broken)}")
        return 1
    if failing:
        print(f"below their minimum: {', '.join(failing)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
