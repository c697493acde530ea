"""The pre-commit hook, run by pre-commit itself from a fresh repository that holds only the
fixture and a few source files: `language: script` installs nothing (no network, no virtual
environment), and the gate it runs passes the clean tree and fails a drift with file and line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gate.drift_corpus import tree_files
from tests.helpers import FIXTURE_PATH, REPO_ROOT, TOOLKIT_SRC

# The case study's worker module, as the toolkit's own tests keep it.
CASE_STUDY = TOOLKIT_SRC.parent / "tests" / "repositories" / "case-study"


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def hook_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository of this tree as it is now (tracked files and new ones not ignored)."""
    root = tmp_path_factory.mktemp("hooks") / "reportexport"
    for name in tree_files(REPO_ROOT):
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, target)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "this tree")
    return root


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """Another repository: the fixture and the case study's worker module, nothing else."""
    root = tmp_path / "shop"
    (root / "contracts").mkdir(parents=True)
    shutil.copy(FIXTURE_PATH, root / "contracts" / "job-status-graph.json")
    (root / "src").mkdir()
    shutil.copy(CASE_STUDY / "src" / "job-status.js", root / "src" / "job-status.js")
    (root / "src" / "worker.js").write_text('import { applyTransition } from "./job-status.js";\n')
    (root / "package.json").write_text('{"type": "module"}\n')
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "fixture first")
    return root


def try_repo(shop: Path, hook_repository: Path, hook: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(shop.parent / "pre-commit-home")}
    for name in ("PYTHONPATH", "REPORTEXPORT_GRAPH", "FROZEN_LIFECYCLE_GRAPH", "VIRTUAL_ENV"):
        env.pop(name, None)
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repository), hook]
    return subprocess.run(
        [*command, "--all-files", "--verbose"],
        cwd=shop,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("hook", ["frozen-lifecycle-gate", "reportexport-gate"])
def test_the_hook_passes_a_clean_repository_without_installing_anything(
    shop: Path, hook_repository: Path, hook: str
) -> None:
    done = try_repo(shop, hook_repository, hook)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "frozen job status graph" in done.stdout
    assert "Passed" in done.stdout
    assert "gate: clean against contracts/job-status-graph.json" in done.stdout
    home = shop.parent / "pre-commit-home"
    assert not list(home.rglob("pyvenv.cfg"))  # no virtual environment was made for the hook


def test_the_hook_fails_a_worker_that_cancels_with_file_and_line(
    shop: Path, hook_repository: Path
) -> None:
    """The case study's polite error path: applyTransition(job, "canceled", "worker")."""
    worker = shop / "src" / "worker.js"
    worker.write_text(
        worker.read_text()
        + "\nexport function giveUp(job) {\n"
        + '  return applyTransition(job, "canceled", "worker");\n}\n'
    )
    git(shop, "add", "-A")
    done = try_repo(shop, hook_repository, "frozen-lifecycle-gate")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Failed" in done.stdout
    assert "src/worker.js:4: wrong-actor: " in done.stdout
