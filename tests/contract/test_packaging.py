"""The wheel carries the one fixture as package data; installed and checkout load the same."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

from frozen_lifecycle.generated import REGION_NAMES, region_body
from tests.conftest import FIXTURE_PATH, REPO_ROOT


def test_the_wheel_carries_the_fixture_byte_for_byte(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path),
         str(REPO_ROOT)],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("reportexport-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        packaged = archive.read("reportexport/contracts/job-status-graph.json")
        names = archive.namelist()
    assert packaged == FIXTURE_PATH.read_bytes()
    assert not any(name.startswith("reportexport/gate/") for name in names)  # the toolkit's
    assert not any(name.endswith(".schema.json") for name in names)


def test_only_one_copy_of_the_fixture_is_committed() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "*job-status-graph.json"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    starter = "packages/frozen-lifecycle/src/frozen_lifecycle/starter/job-status-graph.json"
    assert sorted(tracked) == ["contracts/job-status-graph.json", starter]
    # The toolkit's starter is the case study's fixture, as ours is, byte for byte.
    assert (REPO_ROOT / starter).read_bytes() == FIXTURE_PATH.read_bytes()


def test_the_readme_holds_every_generated_region() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    for name in REGION_NAMES:
        assert region_body(readme, name) is not None, name


def test_the_pre_commit_hooks_run_the_standard_library_gate_without_installing() -> None:
    """`language: script` installs nothing: the entry is a script of this repository that runs
    the toolkit's gate from its source (tests/toolkit/test_pre_commit_hook.py runs it)."""
    hooks = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [hook["id"] for hook in hooks] == ["frozen-lifecycle-gate", "reportexport-gate"]
    for hook in hooks:
        assert hook["language"] == "script"
        assert hook["entry"] == "packages/frozen-lifecycle/pre-commit-gate"
        assert hook["pass_filenames"] is False
        assert hook["always_run"] is True
    script = REPO_ROOT / "packages" / "frozen-lifecycle" / "pre-commit-gate"
    assert script.stat().st_mode & 0o111
    assert 'exec "$python" -S -m frozen_lifecycle gate "$@"' in script.read_text()


def _shared(text: str) -> str:
    begin, end = "<!-- BEGIN SHARED: gate-checks -->\n", "<!-- END SHARED: gate-checks -->"
    assert text.count(begin) == 1
    return text[text.index(begin) : text.index(end)]


def test_both_readmes_document_the_gate_in_the_same_words() -> None:
    """The gate's rules, configuration, pragma and JavaScript support are written once and
    shown twice: in this README, and in the toolkit's for those who only install it."""
    ours = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    toolkit = (REPO_ROOT / "packages" / "frozen-lifecycle" / "README.md").read_text()
    assert _shared(ours) == _shared(toolkit)
    assert "### What it checks" in _shared(ours)
