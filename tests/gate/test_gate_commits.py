"""--commits: a commit that changes the fixture carries nothing but regenerated files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, gate_environ
from tests.gate.test_gate_command import run_gate, tree  # noqa: F401 - the fixture is reused


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def regenerate(root: Path) -> None:
    """`reportexport generate` in the copy: the toolkit's command, lent to the exporter."""
    env = gate_environ(REPO_ROOT / "src")
    subprocess.run(
        [sys.executable, "-m", "reportexport", "generate"], cwd=root, env=env, check=True
    )


def add_archived_state(root: Path) -> None:
    fixture = root / "contracts" / "job-status-graph.json"
    document = json.loads(fixture.read_text())
    document["states"].append("archived")
    document["terminal"].append("archived")
    document["transitions"].append({"from": "running", "to": "archived", "actor": "worker"})
    fixture.write_text(json.dumps(document, indent=2) + "\n")


@pytest.fixture
def repo(tree: Path) -> Path:  # noqa: F811
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "base")
    return tree


def test_a_fixture_commit_with_only_regenerated_files_passes(repo: Path) -> None:
    add_archived_state(repo)
    regenerate(repo)
    git(repo, "commit", "-q", "-am", "Add archived")
    done = run_gate(repo, "--commits", "HEAD~1..HEAD")
    assert done.returncode == 0, done.stdout


def test_a_fixture_commit_that_also_changes_code_fails(repo: Path) -> None:
    add_archived_state(repo)
    regenerate(repo)
    (repo / "src" / "reportexport" / "csvformat.py").write_text("# sneaked in\n", encoding="utf-8")
    git(repo, "commit", "-q", "-am", "Add archived and more")
    done = run_gate(repo, "--commits", "HEAD~1..HEAD")
    assert done.returncode == 1
    assert "src/reportexport/csvformat.py:1: fixture-commit-mixed:" in done.stdout


def test_a_fixture_commit_without_regenerated_files_fails(repo: Path) -> None:
    add_archived_state(repo)
    git(repo, "commit", "-q", "-am", "Add archived, forget the README")
    done = run_gate(repo, "--commits", "HEAD~1..HEAD")
    assert done.returncode == 1
    assert "generated-drift: at commit" in done.stdout


def test_a_fixture_commit_that_edits_readme_prose_fails(repo: Path) -> None:
    add_archived_state(repo)
    regenerate(repo)
    readme = repo / "README.md"
    readme.write_text(readme.read_text().replace("# reportexport", "# reportexport!"))
    git(repo, "commit", "-q", "-am", "Add archived and retitle")
    done = run_gate(repo, "--commits", "HEAD~1..HEAD")
    assert "README.md:1: fixture-commit-mixed:" in done.stdout
    assert "outside this file's generated regions" in done.stdout


def test_commits_that_leave_the_fixture_alone_are_not_judged(repo: Path) -> None:
    (repo / "notes.txt").write_text("hello\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-q", "-m", "notes")
    assert run_gate(repo, "--commits", "HEAD~1..HEAD").returncode == 0


def test_a_bad_range_exits_2(repo: Path) -> None:
    done = run_gate(repo, "--commits", "nope..HEAD")
    assert done.returncode == 2
    assert "git rev-list" in done.stderr


def test_our_own_history_keeps_fixture_commits_pure() -> None:
    done = run_gate(REPO_ROOT, "--commits", "..HEAD")
    assert done.returncode == 0, done.stdout + done.stderr
