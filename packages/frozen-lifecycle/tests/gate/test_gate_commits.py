"""--commits: a commit that changes the fixture carries nothing but regenerated files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import generate, run_gate


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def add_archived_state(root: Path) -> None:
    fixture = root / "contracts" / "job-status-graph.json"
    document = json.loads(fixture.read_text())
    document["states"].append("archived")
    document["terminal"].append("archived")
    document["transitions"].append({"from": "running", "to": "archived", "actor": "worker"})
    fixture.write_text(json.dumps(document, indent=2) + "\n")


@pytest.fixture
def repo(tree: Path) -> Path:
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "base")
    return tree


def test_a_fixture_commit_with_only_regenerated_files_passes(repo: Path) -> None:
    add_archived_state(repo)
    generate(repo)
    git(repo, "commit", "-q", "-am", "Add archived")
    done = run_gate(repo, "--commits", "HEAD~1..HEAD")
    assert done.returncode == 0, done.stdout


def test_a_fixture_commit_that_also_changes_code_fails(repo: Path) -> None:
    add_archived_state(repo)
    generate(repo)
    (repo / "src" / "shop" / "worker.py").write_text("# sneaked in\n", encoding="utf-8")
    git(repo, "commit", "-q", "-am", "Add archived and more")
    done = run_gate(repo, "--commits", "HEAD~1..HEAD")
    assert done.returncode == 1
    assert "src/shop/worker.py:1: fixture-commit-mixed:" in done.stdout


def test_the_commit_that_adopts_the_fixture_may_carry_other_files(tree: Path) -> None:
    """The first commit with the fixture (`init`'s files, the configuration, the code) is an
    adoption, not a lifecycle change; the commits after it are judged as ever."""
    git(tree, "init", "-q", "-b", "main")
    (tree / "gate.toml").write_text('status-types = ["Status"]\n', encoding="utf-8")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "Adopt the frozen lifecycle")
    assert run_gate(tree, "--commits", "..HEAD").returncode == 0
    add_archived_state(tree)
    generate(tree)
    (tree / "src" / "shop" / "worker.py").write_text("# sneaked in\n", encoding="utf-8")
    git(tree, "commit", "-q", "-am", "Add archived and more")
    done = run_gate(tree, "--commits", "..HEAD")
    assert done.returncode == 1
    assert "src/shop/worker.py:1: fixture-commit-mixed:" in done.stdout
    assert "gate.toml" not in done.stdout


def test_a_fixture_commit_without_regenerated_files_fails(repo: Path) -> None:
    add_archived_state(repo)
    git(repo, "commit", "-q", "-am", "Add archived, forget the README")
    done = run_gate(repo, "--commits", "HEAD~1..HEAD")
    assert done.returncode == 1
    assert "generated-drift: at commit" in done.stdout


def test_a_fixture_commit_that_edits_readme_prose_fails(repo: Path) -> None:
    add_archived_state(repo)
    generate(repo)
    readme = repo / "README.md"
    readme.write_text(readme.read_text().replace("# shop", "# shop!"))
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


def test_a_long_history_is_read_only_where_it_changes_the_fixture(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git walks the history once (`rev-list -- <fixture>`); only the commits it names are
    opened, so the check costs what the fixture's own history costs, not the repository's."""
    from frozen_lifecycle.gate import commits
    from frozen_lifecycle.gate.config import load_config

    stream = "".join(
        f"commit refs/heads/main\ncommitter t <t@example.invalid> {1700000000 + n} +0000\n"
        f"data 6\nnote {n % 10}\nM 644 inline notes.txt\ndata {len(str(n)) + 1}\n{n}\n\n"
        for n in range(400)
    )
    head = git(repo, "rev-parse", "HEAD").strip()
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=repo,
        input=f"reset refs/heads/main\nfrom {head}\n\n" + stream,
        text=True,
        check=True,
    )
    git(repo, "reset", "-q", "--hard")
    add_archived_state(repo)
    generate(repo)
    git(repo, "commit", "-q", "-am", "Add archived")
    opened: list[str] = []
    real_git = commits._git

    def counting_git(root: Path, *args: str) -> str:
        if args[0] == "diff-tree":
            opened.append(args[-1])
        return real_git(root, *args)

    monkeypatch.setattr(commits, "_git", counting_git)
    fixture = "contracts/job-status-graph.json"
    assert len(commits.commits_in(repo, f"{head}..HEAD")) == 401
    config = load_config(repo)
    assert list(commits.check_commits(repo, f"{head}..HEAD", fixture, config)) == []
    assert len(opened) == 1  # the lifecycle change alone
