"""Both distributions build, wheel and sdist: the exporter's wheel carries its fixture and
depends on the toolkit, which it no longer carries (the toolkit's own build is tested in
packages/frozen-lifecycle/tests/test_builds.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from tests.conftest import FIXTURE_PATH, REPO_ROOT
from tests.gate.drift_corpus import tree_files


def clean_copy(dest: Path) -> Path:
    """This tree as a fresh clone has it (tracked files and new ones not ignored): what CI
    builds, without a developer's work directories (./scripts/mutate links back into the
    tree, which the build backend would follow)."""
    for name in tree_files(REPO_ROOT):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, target)
    return dest


def test_the_exporters_wheel_and_sdist(tmp_path: Path) -> None:
    source = clean_copy(tmp_path / "tree")
    out = tmp_path / "dist"
    command = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out)]
    done = subprocess.run(
        [*command, str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("reportexport-0.1.0-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        packaged = archive.read("reportexport/contracts/job-status-graph.json")
        metadata = archive.read("reportexport-0.1.0.dist-info/METADATA").decode()
    assert packaged == FIXTURE_PATH.read_bytes()
    assert "Requires-Dist: frozen-lifecycle==0.1.0\n" in metadata
    assert not [n for n in names if n.startswith("frozen_lifecycle")]  # the toolkit's own wheel
    assert "reportexport/lifecycle.py" in names
    assert "reportexport/store/sql/postgres/graph.sql" in names
    (sdist,) = out.glob("reportexport-0.1.0.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert "contracts/job-status-graph.json" in members
    assert "src/reportexport/job_status.py" in members
    assert "tests/conftest.py" in members
    assert not [m for m in members if m.startswith("packages/")]  # the toolkit's own sdist
