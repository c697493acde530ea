"""--commits A..B: a commit that changes the fixture carries only what the fixture generates
(the commit that adds the fixture, adopting the method, may carry anything)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from frozen_lifecycle import generated
from frozen_lifecycle.gate.config import Config
from frozen_lifecycle.gate.findings import Finding
from frozen_lifecycle.graph import InvalidGraphError, parse_graph

FIXTURE_COMMIT_MIXED = "fixture-commit-mixed"
GENERATED_DRIFT = "generated-drift"


class GitError(RuntimeError):
    pass


def _git(root: Path, *args: str) -> str:
    import subprocess  # only here and in sources.git_listing: importing it costs

    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def commits_in(root: Path, spec: str, path: str | None = None) -> list[str]:
    """Commits of `A..B`, oldest first; an empty A means every ancestor of B. With `path`,
    only the commits that change it: git walks the history once, whatever its length."""
    if ".." not in spec:
        raise GitError(f"--commits takes A..B, not {spec!r}")
    start, _, end = spec.partition("..")
    revision = end or "HEAD"
    args = ["rev-list", "--reverse", revision] if not start else ["rev-list", "--reverse", spec]
    if path is not None:
        args += ["--", path]
    return _git(root, *args).split()


def _show(root: Path, commit: str, path: str) -> str | None:
    import subprocess

    done = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=root, capture_output=True, check=False
    )
    return done.stdout.decode("utf-8") if done.returncode == 0 else None


def check_commits(
    root: Path, spec: str, fixture: str, config: Config | None = None
) -> Iterator[Finding]:
    """What each commit of `spec` that changes the fixture carries besides it, judged by the
    artifacts the configuration (of the tree checked now) names."""
    config = config or Config()
    artifacts = generated.artifacts(config.targets())
    allowed = generated.artifact_paths(artifacts)
    for commit in commits_in(root, spec, fixture):
        changed = _git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", commit)
        files = set(changed.split("\n")) - {""}
        if fixture not in files:
            continue  # a merge, whose first parent already had the change
        short = commit[:12]
        # The commit that brings the fixture in adopts the method (with `init`'s other files,
        # the configuration, the first tests); the rule is for the changes after it.
        adopting = _show(root, f"{commit}^", fixture) is None
        for path in sorted(files - {fixture} - allowed) if not adopting else ():
            yield Finding(
                path=path,
                line=1,
                code=FIXTURE_COMMIT_MIXED,
                message=f"commit {short} changes the fixture and also this file; "
                "a lifecycle change carries only files regenerated from the fixture",
            )
        region_files = {a.path for a in artifacts if isinstance(a, generated.Region)}
        yield from _regions_only(root, commit, short, files & region_files)
        yield from _matches_fixture(root, commit, short, fixture, artifacts, config.generated_by)


def _regions_only(root: Path, commit: str, short: str, paths: set[str]) -> Iterator[Finding]:
    """In files with generated regions, nothing outside the regions may change."""
    for path in sorted(paths):
        before, after = _show(root, f"{commit}^", path), _show(root, commit, path)
        if before is None or after is None:
            continue
        if generated.blank_regions(before) != generated.blank_regions(after):
            yield Finding(
                path=path,
                line=1,
                code=FIXTURE_COMMIT_MIXED,
                message=f"commit {short} changes the fixture and text outside this file's "
                "generated regions",
            )


def _matches_fixture(
    root: Path,
    commit: str,
    short: str,
    fixture: str,
    artifacts: list[generated.Artifact],
    command: str,
) -> Iterator[Finding]:
    text = _show(root, commit, fixture)
    if text is None:
        return
    try:
        graph = parse_graph(text, source=f"{short}:{fixture}")
    except InvalidGraphError as exc:
        for defect in exc.defects:
            yield Finding(
                path=fixture, line=1, code="fixture-invalid", message=f"{short}: {defect}"
            )
        return
    at_commit = generated.drift(
        graph, lambda path: _show(root, commit, path), artifacts, command=command
    )
    for drift in at_commit:
        yield Finding(
            path=drift.path,
            line=drift.line,
            code=GENERATED_DRIFT,
            message=f"at commit {short}: {drift.message}",
        )
