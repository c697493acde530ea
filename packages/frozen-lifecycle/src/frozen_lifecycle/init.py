"""`frozen-lifecycle init`: the case study's starting point, written into a repository.

Three things, each where the case study puts it: the starter fixture (the case study's,
contracts/job-status-graph.json), the six contract tests run first (`node --test` for a
JavaScript repository, pytest for a Python one), and a GitHub Actions workflow that runs the
gate and those tests. The module under contract (`STATES`, `canTransition`/`can_transition`,
`applyTransition`/`apply_transition`) is yours to write: the case study commits the tests
first and watches them fail.

An existing fixture is never overwritten (the tests are written for it); other existing files
are kept unless `force` says otherwise.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath

from frozen_lifecycle import __version__
from frozen_lifecycle.draft import Draft, DraftError, draft_from
from frozen_lifecycle.graph import DEFAULT_FIXTURE, Graph, load_graph

LANGUAGES = ("javascript", "python")
WORKFLOW = ".github/workflows/frozen-lifecycle.yml"
PRE_COMMIT = ".pre-commit-config.yaml"
# Where `--install path` copies this package: the workflow and the hook run the gate from it
# with `python -S`, nothing installed, the very version that wrote them.
VENDORED = ".frozen-lifecycle"
# How CI gets the toolkit: a copy in the repository until the package index has this version.
INSTALLS = ("path", "index")
PUBLISHED = False
DEFAULT_INSTALL = "index" if PUBLISHED else "path"


@dataclass(frozen=True, kw_only=True)
class Layout:
    """Where init writes, by path from the repository's root."""

    language: str
    fixture: str = DEFAULT_FIXTURE
    module: str | None = None  # the module under contract; by default the case study's
    tests: str | None = None  # the contract tests; by default the case study's
    workflow: str = WORKFLOW
    # The repository's own functions the contract tests call (the configuration's names).
    check_transition: str | None = None
    create_job: str | None = None
    draft_from: str | None = None  # PATH:NAME the fixture's states are drafted from
    install: str = DEFAULT_INSTALL

    @property
    def module_path(self) -> str:
        if self.module:
            return self.module
        return "src/job-status.js" if self.language == "javascript" else "src/job_status.py"

    @property
    def tests_path(self) -> str:
        if self.tests:
            return self.tests
        if self.language == "javascript":
            return "test/job-status-graph.test.mjs"
        return "tests/test_job_status_graph.py"


@dataclass(frozen=True, kw_only=True)
class Written:
    path: str
    kept: bool  # it existed and was left as it was
    draft: bool = False  # a fixture drafted for a person to finish


class InitError(ValueError):
    pass


def _starter(name: str) -> str:
    return resources.files(__package__).joinpath("starter", name).read_text(encoding="utf-8")


def starter_fixture() -> str:
    """The case study's fixture, as init writes it."""
    return _starter("job-status-graph.json")


def _relative(from_file: str, to_file: str) -> str:
    """`to_file` as seen from the folder of `from_file` (both from the root), POSIX style."""
    start = PurePosixPath(from_file).parent.as_posix() or "."
    path = os.path.relpath(to_file, start).replace(os.sep, "/")
    return path if path.startswith(".") else "./" + path


def _words(graph: Graph) -> dict[str, str]:
    """The case study's illegal move (`succeeded` -> `running`), in any fixture's words: the
    first terminal state, and where the first edge from the initial state leads."""
    target = next(e.to_status for e in graph.transitions if e.from_status == graph.initial)
    return {"@@TERMINAL@@": graph.terminal[0], "@@TARGET@@": target}


def _fill(template: str, values: dict[str, str]) -> str:
    for marker, value in values.items():
        template = template.replace(marker, value)
    return template


def contract_tests(graph: Graph, layout: Layout) -> str:
    """The six contract tests for `layout`, with the fixture's own words where the case study
    names two."""
    values = _words(graph)
    if layout.language == "javascript":
        values["@@MODULE@@"] = _relative(layout.tests_path, layout.module_path)
        values["@@FIXTURE@@"] = _relative(layout.tests_path, layout.fixture)
        return _fill(_starter("job-status-graph.test.mjs.tmpl"), values)
    values["@@DEPTH@@"] = str(len(PurePosixPath(layout.tests_path).parts) - 1)
    values["@@TESTS@@"] = layout.tests_path
    values["@@CHECK_TRANSITION@@"] = layout.check_transition or ""
    values["@@CREATE_JOB@@"] = layout.create_job or ""
    values["@@MODULE@@"] = layout.module_path
    values["@@MODULE_NAME@@"] = layout.module_path
    values["@@FIXTURE_NAME@@"] = layout.fixture
    return _fill(_starter("test_job_status_graph.py.tmpl"), values)


def gate_command(layout: Layout) -> str:
    """How CI and the hook run the gate: from the repository's copy, or the installed one."""
    if layout.install == "path":
        return f"PYTHONPATH={VENDORED} python3 -S -m frozen_lifecycle gate"
    return "frozen-lifecycle gate"


def python_test_command(layout: Layout) -> str:
    """The contract tests under pytest, with nothing of the repository's pytest setup: no
    conftest.py, no ini file (its plugins and options may need what is not installed)."""
    return f"python -m pytest -q --noconftest -c /dev/null --rootdir . {layout.tests_path}"


def workflow(layout: Layout) -> str:
    """The GitHub Actions workflow: get the toolkit, run the gate, run the contract tests."""
    if layout.install == "path":
        install = "pip install pytest" if layout.language == "python" else ""
    else:
        install = f"pip install frozen-lifecycle=={__version__}"
        install += " pytest" if layout.language == "python" else ""
    install_step = f"      - run: python -m {install}\n" if install else ""
    if layout.language == "javascript":
        steps = (
            "      - uses: actions/setup-node@v4\n"
            "        with:\n"
            '          node-version: "20"\n'
            "      - name: contract tests\n"
            f"        run: node --test {layout.tests_path}\n"
        )
    else:
        steps = f"      - name: contract tests\n        run: {python_test_command(layout)}\n"
    values = {
        "@@INSTALL@@\n": install_step,
        "@@GATE@@": gate_command(layout),
        "@@CONTRACT_TESTS@@\n": steps,
    }
    return _fill(_starter("frozen-lifecycle.yml.tmpl"), values)


def pre_commit(layout: Layout) -> str:
    """A pre-commit configuration whose hook runs the gate as CI does."""
    command = gate_command(layout)
    entry = f"env {command}" if layout.install == "path" else command
    return (
        "# Written by `frozen-lifecycle init`: the frozen-lifecycle gate before each commit.\n"
        "repos:\n"
        "  - repo: local\n"
        "    hooks:\n"
        "      - id: frozen-lifecycle-gate\n"
        "        name: frozen-lifecycle gate\n"
        f"        entry: {entry}\n"
        "        language: system\n"
        "        pass_filenames: false\n"
        "        always_run: true\n"
    )


def init(root: Path, layout: Layout, *, force: bool = False) -> list[Written]:
    """Write the fixture (unless one is there), the contract tests and the workflow."""
    if layout.language not in LANGUAGES:
        raise InitError(f"no contract tests for {layout.language!r}: use {' or '.join(LANGUAGES)}")
    if not root.is_dir():
        raise InitError(f"{root}: not a directory")
    if layout.install not in INSTALLS:
        raise InitError(f"--install takes {' or '.join(INSTALLS)}, not {layout.install!r}")
    written: list[Written] = []
    fixture = root / layout.fixture
    if fixture.exists():
        written.append(Written(path=layout.fixture, kept=True))
    elif layout.draft_from:
        try:
            draft = draft_from(root, layout.draft_from)
        except DraftError as exc:
            raise InitError(str(exc)) from None
        _write(fixture, draft.fixture())
        written.append(Written(path=layout.fixture, kept=False, draft=True))
        written += _configure(root, draft)
        return written  # the edges are a person's to write: the tests wait for them
    else:
        _write(fixture, starter_fixture())
        written.append(Written(path=layout.fixture, kept=False))
    graph = load_graph(fixture)
    for path, text in _files(graph, layout):
        target = root / path
        if target.exists() and not force:
            written.append(Written(path=path, kept=True))
            continue
        _write(target, text)
        written.append(Written(path=path, kept=False))
    if layout.install == "path":
        written.append(_vendor(root, force=force))
    return written


def _files(graph: Graph, layout: Layout) -> Iterator[tuple[str, str]]:
    yield layout.tests_path, contract_tests(graph, layout)
    yield layout.workflow, workflow(layout)
    yield PRE_COMMIT, pre_commit(layout)


def _configure(root: Path, draft: Draft) -> list[Written]:
    """Name the drafted source as what carries the states, where nothing is configured yet."""
    if (root / "gate.toml").exists() or (
        (root / "pyproject.toml").exists()
        and "[tool.frozen-lifecycle.gate]" in (root / "pyproject.toml").read_text("utf-8")
    ):
        return [Written(path="gate.toml", kept=True)]
    _write(
        root / "gate.toml",
        "# What carries the job's lifecycle here (frozen-lifecycle's gate reads this).\n"
        f'status-types = ["{draft.carrier}"]\n',
    )
    return [Written(path="gate.toml", kept=False)]


def _vendor(root: Path, *, force: bool) -> Written:
    """This package's own modules, copied where the workflow and the hook run them from."""
    target = root / VENDORED / "frozen_lifecycle"
    if target.exists() and not force:
        return Written(path=VENDORED, kept=True)
    if target.exists():
        shutil.rmtree(target)
    source = Path(__file__).resolve().parent
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / VENDORED / "VERSION").write_text(f"{__version__}\n", encoding="utf-8")
    return Written(path=VENDORED, kept=False)


def _write(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def next_steps(root: Path, layout: Layout, *, fixture_written: bool = False) -> list[str]:
    """What is left to do, in the case study's order."""
    steps = []
    if layout.draft_from and fixture_written:
        return [
            f"finish {layout.fixture}: confirm its initial and terminal states, write its "
            "edges (from, to, actor) and its forbidden aliases",
            f"frozen-lifecycle init --language {layout.language}: the contract tests, the "
            "workflow and the hook for it",
            "frozen-lifecycle gate",
        ]
    if fixture_written:
        steps.append(
            f"commit {layout.fixture} on its own first: the gate's --commits check wants a "
            "lifecycle change alone in its commit"
        )
    if not (root / layout.module_path).exists():
        names = (
            "STATES, canTransition and applyTransition"
            if layout.language == "javascript"
            else "STATES, can_transition and apply_transition"
        )
        steps.append(f"write {layout.module_path}: it exports {names}, a pure lookup")
    if layout.language == "javascript":
        package = root / "package.json"
        if not package.exists() or '"module"' not in package.read_text(encoding="utf-8"):
            steps.append('give package.json "type": "module" (the tests import an ES module)')
        steps.append(f"node --test {layout.tests_path}")
    else:
        steps.append(python_test_command(layout))
    steps.append(gate_command(layout))
    return steps
