"""./scripts/mutate reports per module, names each survivor by file and line, and leaves the
documented equivalent mutants out of the score."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO_ROOT

MUTATE = REPO_ROOT / "tools" / "mutation" / "mutate.py"
ONE_TEST = "tests/exports/test_sqlparams.py::test_a_parameter_after_a_cast_is_still_found"


def mutate(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(MUTATE), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


def test_a_narrow_run_reports_its_survivors_and_leaves_equivalents_out(tmp_path: Path) -> None:
    targets = tmp_path / "targets.toml"
    # One test of four: render() is run by none of them, so its mutants survive.
    targets.write_text(
        f'[[target]]\nmodule = "core/sqlparams"\nminimum = 99\ntests = ["{ONE_TEST}"]\n',
        encoding="utf-8",
    )
    equivalents = tmp_path / "equivalents.toml"
    equivalents.write_text(
        "[[equivalent]]\n"
        'module = "core/sqlparams"\n'
        'function = "split_sql"\n'
        'before = "position = 0"\n'
        'after = "position = None"\n'
        'reason = "sql[None:i] is sql[0:i]"\n'
        "\n"
        "[[equivalent]]\n"
        'module = "core/sqlparams"\n'
        'function = "split_sql"\n'
        'before = "no such line"\n'
        'after = "nor this one"\n'
        'reason = "stale on purpose"\n',
        encoding="utf-8",
    )
    run = mutate(
        *("--targets", str(targets), "--equivalents", str(equivalents)),
        *("--work", str(tmp_path / "work"), "core/sqlparams"),
    )
    assert run.returncode == 1, run.stdout + run.stderr  # below its minimum
    lines = run.stdout.splitlines()
    summary = next(line for line in lines if line.startswith("core/sqlparams: "))
    assert " 1 equivalent, " in summary
    survivors = [line.strip() for line in lines if line.startswith("  src/")]
    assert survivors
    assert all(line.startswith("src/reportexport/core/sqlparams.py:") for line in survivors)
    assert any(": render: " in line and line.endswith("(no test ran it)") for line in survivors)
    assert not any(line.endswith(": position = 0  =>  position = None") for line in survivors)
    assert any(line.endswith(": position = 0  =>  position = 1") for line in survivors)
    stale = "  stale equivalent (no such mutant now): split_sql: no such line  =>  nor this one"
    assert stale in lines
    assert "| `core/sqlparams` |" in run.stdout
    assert "below their minimum: core/sqlparams" in lines


def test_an_unknown_module_is_refused(tmp_path: Path) -> None:
    run = mutate("--work", str(tmp_path), "gate")
    assert run.returncode == 2
    assert run.stderr.startswith("scripts/mutate: not a module of targets.toml: gate (known: ")
