"""The gate as a command on this repository: its tree and copies of it, its history, its speed.

The gate's own tests, on repositories of their own, are the toolkit's
(packages/frozen-lifecycle/tests/gate)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import BROKEN, REPO_ROOT, TOOLKIT_SRC, gate_environ


def run_gate(root: Path, *args: str, isolated: bool = True) -> subprocess.CompletedProcess[str]:
    """`python -S -m frozen_lifecycle gate`: no site-packages, so no third-party package either."""
    env = gate_environ()
    flags = ["-S"] if isolated else []
    return subprocess.run(
        [sys.executable, *flags, "-m", "frozen_lifecycle", "gate", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the parts of the repository the gate reads."""
    root = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO_ROOT / "contracts", root / "contracts")
    shutil.copy(REPO_ROOT / "README.md", root / "README.md")
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def edit(path: Path, change: Callable[[str], str]) -> None:
    path.write_text(change(path.read_text()))


def test_our_own_tree_passes_with_the_standard_library_alone() -> None:
    done = run_gate(REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""
    assert "gate: clean" in done.stderr


def test_quoting_retrying_anywhere_in_src_fails_with_file_and_line(tree: Path) -> None:
    target = tree / "src" / "reportexport" / "core" / "csvformat.py"
    edit(target, lambda text: text + '\nBACKOFF_LABEL = "retrying"\n')
    line = len(target.read_text().splitlines())
    done = run_gate(tree)
    assert done.returncode == 1
    assert done.stdout == (
        f'src/reportexport/core/csvformat.py:{line}: forbidden-alias: "retrying" is a forbidden '
        "status alias\n"
    )


def test_widening_states_fails(tree: Path) -> None:
    target = tree / "src" / "reportexport" / "core" / "job_status.py"
    edit(
        target, lambda text: text.replace("= lifecycle.STATES", '= (*lifecycle.STATES, "archived")')
    )
    done = run_gate(tree)
    assert done.returncode == 1
    assert "src/reportexport/core/job_status.py:" in done.stdout
    assert "states-drift: STATES names 'archived'" in done.stdout


def test_a_literal_states_list_must_hold_every_state(tree: Path) -> None:
    target = tree / "src" / "reportexport" / "core" / "job_status.py"
    edit(target, lambda text: text.replace("= lifecycle.STATES", '= ("queued", "running")'))
    done = run_gate(tree)
    assert done.returncode == 1
    assert "lacks fixture state(s) canceled, failed, succeeded" in done.stdout


def test_comparing_a_status_with_an_unknown_word_fails(tree: Path) -> None:
    target = tree / "src" / "reportexport" / "core" / "job_status.py"
    edit(target, lambda text: text + '\n\ndef stale(job):\n    return job.status == "stale"\n')
    done = run_gate(tree)
    assert done.returncode == 1
    assert "unknown-status: 'stale' compared with a status" in done.stdout


def test_a_template_that_quotes_an_alias_fails(tree: Path) -> None:
    template = tree / "src" / "reportexport" / "templates" / "job.html"
    template.parent.mkdir()
    template.write_text('<span class="label">\n  <b class="error">x</b>\n</span>\n')
    done = run_gate(tree)
    assert done.returncode == 1
    assert done.stdout.startswith("src/reportexport/templates/job.html:2: forbidden-alias")


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_each_broken_fixture_exits_2_naming_the_defect(tree: Path, rule: str) -> None:
    mutate, message = BROKEN[rule]
    fixture = tree / "contracts" / "job-status-graph.json"
    document: dict[str, Any] = json.loads(fixture.read_text())
    mutate(document)
    fixture.write_text(json.dumps(document, indent=2))
    done = run_gate(tree)
    assert done.returncode == 2, done.stdout
    assert "contracts/job-status-graph.json:1: fixture-invalid:" in done.stdout
    assert __import__("re").search(message, done.stdout), done.stdout


def test_a_stale_readme_table_fails(tree: Path) -> None:
    edit(tree / "README.md", lambda text: text.replace("| worker claims the job |", "| claim |"))
    done = run_gate(tree)
    assert done.returncode == 1
    assert "README.md:" in done.stdout
    assert "generated-drift: region 'graph-table'" in done.stdout


def test_the_gate_imports_only_the_standard_library_and_the_pure_core() -> None:
    """A repository that copies the gate needs nothing but Python."""
    code = (
        "import sys, frozen_lifecycle.gate, frozen_lifecycle.cli, reportexport.entrypoints.cli\n"
        "mods = {m.split('.')[0] for m in sys.modules}\n"
        # zoneinfo reads sysconfig, whose data module is named after the platform
        "mods = {m for m in mods if not m.startswith('_sysconfigdata')}\n"
        "known = {'reportexport', 'frozen_lifecycle', '__main__'}\n"
        "print(sorted(mods - set(sys.stdlib_module_names) - known))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(TOOLKIT_SRC), str(REPO_ROOT / "src")))}
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_handler_for_an_unknown_effect_or_a_missing_one_fails(tree: Path) -> None:
    handlers = tree / "src" / "reportexport" / "runners" / "effects" / "handlers.py"
    edit(
        handlers, lambda text: text.replace("def delete_temp_object(", "def delete_scratch_object(")
    )
    done = run_gate(tree)
    assert done.returncode == 1
    assert (
        "effect-handlers: no handler for the fixture's side effect 'delete_temp_object'"
        in done.stdout
    )
    assert "handler 'delete_scratch_object' names no side effect of the fixture" in done.stdout


def test_a_hand_listed_api_status_enum_fails(tree: Path) -> None:
    models = tree / "src" / "reportexport" / "web" / "api" / "models.py"
    edit(models, lambda text: text + '\n\nclass Status(str, Enum):\n    queued = "queued"\n'
                                      '    running = "running"\n')  # fmt: skip
    done = run_gate(tree)
    assert done.returncode == 1
    assert "api-status-enum: the status enum lists queued, running by hand" in done.stdout


def test_our_own_history_keeps_fixture_commits_pure() -> None:
    done = run_gate(REPO_ROOT, "--commits", "..HEAD")
    assert done.returncode == 0, done.stdout + done.stderr


def cpu_seconds_of_one_run(args: list[str], env: dict[str, str]) -> tuple[float, int]:
    """CPU time of one process and the children it waited for (the gate's forked half, git),
    read from its own wait4: nothing else this test session runs or reaps is counted."""
    process = subprocess.Popen(
        args, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)  # already reaped: no second wait
    return usage.ru_utime + usage.ru_stime, process.returncode


def test_the_gate_takes_seconds_of_cpu_not_minutes_on_this_tree() -> None:
    """The CPU the gate spends, the least of three runs (so a page cache filled by the first
    does not count against it). CPU seconds still grow on a shared machine (cache and core
    contention): 0.9 s here when quiet, 2.6 s in a loaded CI run; the bound, 10 s, catches a
    gate that reads the tree once per rule or walks history again, not a slower machine."""
    env = gate_environ()
    runs = [
        cpu_seconds_of_one_run([sys.executable, "-S", "-m", "frozen_lifecycle", "gate"], env)
        for _ in range(3)
    ]
    assert [code for _, code in runs] == [0, 0, 0]
    assert min(spent for spent, _ in runs) < 10.0, runs


def test_a_lifecycle_change_alone_in_its_commit_passes(tmp_path: Path) -> None:
    """A state the schedules' code already uses as a word of its own (`paused`: its counters
    beside `firing` and `ended`) added to the fixture, regenerated and committed alone: the
    tree and the commit pass."""
    from tests.gate.drift_corpus import _python, make_base

    root = make_base(tmp_path / "repo")
    fixture = root / "contracts" / "job-status-graph.json"
    document = json.loads(fixture.read_text())
    document["states"].insert(2, "paused")
    document["transitions"] += [
        {"from": "running", "to": "paused", "actor": "worker"},
        {"from": "paused", "to": "running", "actor": "worker"},
        {"from": "paused", "to": "canceled", "actor": "user"},
    ]

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
            cwd=root,
            check=True,
            capture_output=True,
        )

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "base")
    fixture.write_text(json.dumps(document, indent=2) + "\n")
    generated = _python(root, "-m", "reportexport", "generate")
    assert generated.returncode == 0, generated.stdout + generated.stderr
    git("commit", "-q", "-am", "Lifecycle: a running job may be paused")
    done = run_gate(root, "--commits", "HEAD~1..HEAD")
    assert done.returncode == 0, done.stdout + done.stderr
