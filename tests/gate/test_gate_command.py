"""The gate as a command, run on copies of this repository's tree."""

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

from tests.conftest import REPO_ROOT, TOOLKIT_SRC, gate_environ
from tests.contract.test_graph_validation import BROKEN


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
    target = tree / "src" / "reportexport" / "csvformat.py"
    edit(target, lambda text: text + '\nBACKOFF_LABEL = "retrying"\n')
    line = len(target.read_text().splitlines())
    done = run_gate(tree)
    assert done.returncode == 1
    assert done.stdout == (
        f'src/reportexport/csvformat.py:{line}: forbidden-alias: "retrying" is a forbidden '
        "status alias\n"
    )


def test_widening_states_fails(tree: Path) -> None:
    target = tree / "src" / "reportexport" / "job_status.py"
    edit(
        target, lambda text: text.replace("= lifecycle.STATES", '= (*lifecycle.STATES, "archived")')
    )
    done = run_gate(tree)
    assert done.returncode == 1
    assert "src/reportexport/job_status.py:" in done.stdout
    assert "states-drift: STATES names 'archived'" in done.stdout


def test_a_literal_states_list_must_hold_every_state(tree: Path) -> None:
    target = tree / "src" / "reportexport" / "job_status.py"
    edit(target, lambda text: text.replace("= lifecycle.STATES", '= ("queued", "running")'))
    done = run_gate(tree)
    assert done.returncode == 1
    assert "lacks fixture state(s) canceled, failed, succeeded" in done.stdout


def test_comparing_a_status_with_an_unknown_word_fails(tree: Path) -> None:
    target = tree / "src" / "reportexport" / "job_status.py"
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


def test_json_and_github_formats(tree: Path) -> None:
    edit(tree / "src" / "reportexport" / "csvformat.py", lambda text: text + '\nX = "partial"\n')
    as_json = json.loads(run_gate(tree, "--format", "json").stdout)
    assert [(f["path"], f["code"]) for f in as_json] == [
        ("src/reportexport/csvformat.py", "forbidden-alias")
    ]
    github = run_gate(tree, "--format", "github").stdout
    assert github.startswith("::error file=src/reportexport/csvformat.py,line=")
    assert ",title=forbidden-alias::" in github


def test_another_fixture_through_the_graph_option(tree: Path) -> None:
    other = tree / "other.json"
    document = json.loads((tree / "contracts" / "job-status-graph.json").read_text())
    document["states"].append("archived")
    document["terminal"].append("archived")
    document["transitions"].append({"from": "running", "to": "archived", "actor": "worker"})
    other.write_text(json.dumps(document))
    done = run_gate(tree, "--graph", "other.json")
    assert done.returncode == 1
    assert "STATES lacks fixture state(s) archived" not in done.stdout  # STATES is derived
    assert "generated-drift" in done.stdout  # the README still shows the old graph


def test_a_wrong_call_exits_2(tree: Path) -> None:
    assert run_gate(tree, "--format", "xml").returncode == 2
    assert run_gate(tree, "no/such/dir").returncode == 2


def test_the_gate_imports_only_the_standard_library_and_the_pure_core() -> None:
    """A repository that copies the gate needs nothing but Python."""
    code = (
        "import sys, frozen_lifecycle.gate, frozen_lifecycle.cli, reportexport.cli\n"
        "mods = {m.split('.')[0] for m in sys.modules}\n"
        "known = {'reportexport', 'frozen_lifecycle', '__main__'}\n"
        "print(sorted(mods - set(sys.stdlib_module_names) - known))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(TOOLKIT_SRC), str(REPO_ROOT / "src")))}
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_handler_for_an_unknown_effect_or_a_missing_one_fails(tree: Path) -> None:
    handlers = tree / "src" / "reportexport" / "effects" / "handlers.py"
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
    models = tree / "src" / "reportexport" / "api" / "models.py"
    edit(models, lambda text: text + '\n\nclass Status(str, Enum):\n    queued = "queued"\n'
                                      '    running = "running"\n')  # fmt: skip
    done = run_gate(tree)
    assert done.returncode == 1
    assert "api-status-enum: the status enum lists queued, running by hand" in done.stdout
