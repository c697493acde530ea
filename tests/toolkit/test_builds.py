"""Both distributions build, wheel and sdist: the exporter's wheel carries its fixture and
depends on the toolkit, which it no longer carries (the toolkit's own build is tested in
packages/frozen-lifecycle/tests/test_builds.py); the toolkit's sdist alone runs its own tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from tests.gate.drift_corpus import tree_files
from tests.helpers import FIXTURE_PATH, REPO_ROOT

TOOLKIT = "packages/frozen-lifecycle/"


def clean_copy(dest: Path, under: str = "") -> Path:
    """This tree as a fresh clone has it (tracked files and new ones not ignored): what CI
    builds, without a developer's work directories (./scripts/mutate links back into the
    tree, which the build backend would follow). `under` keeps only the files below a folder."""
    for name in tree_files(REPO_ROOT):
        if not name.startswith(under):
            continue
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
    assert "reportexport/core/lifecycle.py" in names
    assert "reportexport/store/sql/postgres/graph.sql" in names
    (sdist,) = out.glob("reportexport-0.1.0.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert "contracts/job-status-graph.json" in members
    assert "src/reportexport/core/job_status.py" in members
    assert "tests/conftest.py" in members
    assert not [m for m in members if m.startswith("packages/")]  # the toolkit's own sdist


def pytest_in(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m pytest` in `root` with its own source first on the path (PYTHONPATH=src), no
    cache written, and nothing from this session's environment that names another tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    for name in ("VIRTUAL_ENV", "REPORTEXPORT_GRAPH", "FROZEN_LIFECYCLE_GRAPH"):
        env.pop(name, None)
    env["PYTHONPATH"] = "src"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )


def collected(root: Path) -> int:
    listed = pytest_in(root, "-q", "--collect-only")
    found = re.search(r"^(\d+) tests collected", listed.stdout, re.M)
    assert found is not None, listed.stdout[-2000:] + listed.stderr
    return int(found[1])


def test_the_toolkits_sdist_alone_runs_its_own_tests(tmp_path: Path) -> None:
    """Unpacked away from this repository, the toolkit's sdist runs `python -m pytest` from its
    own folder with its own source: every test its source tree holds, and all pass."""
    source = clean_copy(tmp_path / "tree", under=TOOLKIT) / TOOLKIT
    out = tmp_path / "dist"
    command = [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out)]
    done = subprocess.run(
        [*command, str(source)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (sdist,) = out.glob("frozen_lifecycle-0.1.0.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    root = tmp_path / "unpacked" / "frozen_lifecycle-0.1.0"

    expected = collected(source)
    assert collected(root) == expected  # the sdist carries every test and what they read

    run = pytest_in(root, "-rs")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr
    assert f"rootdir: {root}\n" in run.stdout  # its own configuration, not this repository's
    # the package under test is the unpacked source (conftest.py's report header)
    assert f"frozen_lifecycle from {root / 'src' / 'frozen_lifecycle'}\n" in run.stdout
    summary = re.search(r"=+ (\d+) passed(?:, (\d+) skipped)? in ", run.stdout)
    assert summary is not None, run.stdout[-2000:]
    assert int(summary[1]) + int(summary[2] or 0) == expected
