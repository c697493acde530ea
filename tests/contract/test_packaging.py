"""The wheel carries the one fixture as package data; installed and checkout load the same."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

from reportexport.generated import ARTIFACTS, Region, region_body
from tests.conftest import FIXTURE_PATH, REPO_ROOT


def test_the_wheel_carries_the_fixture_byte_for_byte(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(tmp_path), str(REPO_ROOT)],
        check=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("reportexport-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        packaged = archive.read("reportexport/contracts/job-status-graph.json")
        names = archive.namelist()
    assert packaged == FIXTURE_PATH.read_bytes()
    assert "reportexport/contracts/job-status-graph.schema.json" in names
    assert "reportexport/gate/__main__.py" in names


def test_only_one_copy_of_the_fixture_is_committed() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "*job-status-graph.json"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert tracked == ["contracts/job-status-graph.json"]


def test_the_readme_holds_every_generated_region() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    for artifact in ARTIFACTS:
        if isinstance(artifact, Region) and artifact.path == "README.md":
            assert region_body(readme, artifact.name) is not None, artifact.name


def test_the_pre_commit_hook_runs_the_gate_module() -> None:
    hooks = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = hooks
    assert hook["id"] == "reportexport-gate"
    assert hook["entry"] == "python -m reportexport.gate"
    assert hook["pass_filenames"] is False
