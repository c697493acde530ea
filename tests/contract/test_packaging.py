"""The wheel carries the one fixture as package data; installed and checkout load the same."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

from frozen_lifecycle.generated import REGION_NAMES, region_body
from tests.helpers import FIXTURE_PATH, REPO_ROOT


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
    # Other repositories' lifecycles, the toolkit is measured on: not copies of ours.
    adopted = "packages/frozen-lifecycle/tests/repositories/adopted/"
    shapes = "packages/frozen-lifecycle/tests/shapes/"
    others = (adopted, shapes)
    assert sorted(p for p in tracked if p.startswith(others)) == [
        f"{adopted}procrastinate/contracts/job-status-graph.json",
        f"{adopted}rq/contracts/job-status-graph.json",
        f"{shapes}job-status-graph.json",
    ]
    starter = "packages/frozen-lifecycle/src/frozen_lifecycle/starter/job-status-graph.json"
    ours = sorted(p for p in tracked if not p.startswith(others))
    assert ours == ["contracts/job-status-graph.json", starter]
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


def test_the_docs_show_the_toolkits_readme_without_copying_it() -> None:
    """The gate's rules, configuration, pragma and JavaScript support are written once, in the
    toolkit's README for those who only install it; the docs site includes that file."""
    page = (REPO_ROOT / "docs" / "how-to" / "toolkit.md").read_text(encoding="utf-8")
    assert '--8<-- "packages/frozen-lifecycle/README.md"' in page
    ours = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
    copies = [p.name for p in ours if "### What it checks" in p.read_text(encoding="utf-8")]
    assert copies == []
