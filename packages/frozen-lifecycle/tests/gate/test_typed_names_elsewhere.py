"""A Python repository holds the fixture's words with typed names the toolkit generates.

`frozen-lifecycle generate --typed-names PATH` writes the module; `typed-names` in the gate's
configuration keeps it equal to the fixture; `mypy --strict` refuses a word that is not a state
wherever a `Status` is expected.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import STARTER_FIXTURE, gate_environ, run_gate

LIFECYCLE = "src/shop/lifecycle.py"
# The type checker is the repository's tool, not the toolkit's: without it, what only it
# proves is skipped, and what the gate proves still runs.
MYPY_MISSING = importlib.util.find_spec("mypy") is None
needs_mypy = pytest.mark.skipif(MYPY_MISSING, reason="mypy is not installed")


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A repository with the fixture, a package of its own, and the gate configured."""
    root = tmp_path / "shop"
    (root / "contracts").mkdir(parents=True)
    shutil.copy(STARTER_FIXTURE, root / "contracts" / "job-status-graph.json")
    (root / "src" / "shop").mkdir(parents=True)
    (root / "src" / "shop" / "__init__.py").write_text("")
    (root / "src" / "shop" / "jobs.py").write_text(
        'from shop.lifecycle import STATES, Status\n\nFIRST: Status = "queued"\nALL = STATES\n'
    )
    config = f'[tool.frozen-lifecycle.gate]\ntyped-names = "{LIFECYCLE}"\n'
    (root / "pyproject.toml").write_text(config)
    done = subprocess.run(
        [sys.executable, "-S", "-m", "frozen_lifecycle", "generate", "--typed-names", LIFECYCLE],
        cwd=root,
        env=gate_environ(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == f"wrote {LIFECYCLE}\n"
    return root


def mypy(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            os.devnull,
            "--cache-dir",
            str(root / ".mypy_cache"),
            "-p",
            "shop",
        ],
        cwd=root,
        env={**os.environ, "MYPYPATH": str(root / "src")},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_generated_typed_names_pass_the_gate_and_the_type_checker(shop: Path) -> None:
    done = run_gate(shop)
    assert done.returncode == 0, done.stdout + done.stderr
    if MYPY_MISSING:
        pytest.skip("mypy is not installed")
    checked = mypy(shop)
    assert checked.returncode == 0, checked.stdout


@needs_mypy
def test_mypy_refuses_a_word_that_is_not_a_state(shop: Path) -> None:
    jobs = shop / "src" / "shop" / "jobs.py"
    jobs.write_text(jobs.read_text() + 'LATER: Status = "stalled"\n')
    checked = mypy(shop)
    assert checked.returncode == 1
    assert 'jobs.py:5: error: Incompatible types in assignment (expression has type "Literal' in (
        checked.stdout
    )


@needs_mypy
def test_a_checked_input_narrows_and_a_move_the_fixture_lacks_is_refused(shop: Path) -> None:
    """`is_status` narrows a string that was checked; `From<State>By<Actor>` holds exactly the
    targets of that actor's edges from that state."""
    (shop / "src" / "shop" / "moves.py").write_text(
        "from shop.lifecycle import FromRunningByWorker, Status, is_status\n"
        "\n\n"
        "def status_of(text: str) -> Status:\n"
        "    if not is_status(text):\n"
        "        raise ValueError(text)\n"
        "    return text\n"
        "\n\n"
        'ENDS: tuple[FromRunningByWorker, ...] = ("succeeded", "failed")\n'
    )
    assert mypy(shop).returncode == 0, mypy(shop).stdout
    moves = shop / "src" / "shop" / "moves.py"
    moves.write_text(
        moves.read_text()
        + "\n\ndef unchecked(text: str) -> Status:\n    return text\n"
        + '\n\nWORKER_CANCELS: FromRunningByWorker = "canceled"\n'
    )
    checked = mypy(shop)
    assert checked.returncode == 1
    assert "moves.py:14: error: Incompatible return value type" in checked.stdout
    assert "moves.py:17: error: Incompatible types in assignment" in checked.stdout


def test_the_gate_keeps_the_typed_names_equal_to_the_fixture(shop: Path) -> None:
    lifecycle = shop / LIFECYCLE
    lifecycle.write_text(lifecycle.read_text().replace('    "canceled",\n', "", 1))
    done = run_gate(shop)
    assert done.returncode == 1
    assert f"{LIFECYCLE}:" in done.stdout
    assert "generated-drift: differs from what the fixture generates" in done.stdout
    lifecycle.unlink()
    done = run_gate(shop)
    missing = "generated-drift: a file the configuration names as generated is missing"
    assert f"{LIFECYCLE}:1: {missing}" in done.stdout
