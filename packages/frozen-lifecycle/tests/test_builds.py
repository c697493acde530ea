"""The toolkit's wheel and sdist: what they carry, and that the sdist alone builds the wheel."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import STARTER_FIXTURE, TOOLKIT_ROOT, TOOLKIT_SRC
from frozen_lifecycle import __version__


def test_the_wheel_carries_the_package_its_data_and_no_dependency(toolkit_wheel: Path) -> None:
    with zipfile.ZipFile(toolkit_wheel) as wheel:
        names = set(wheel.namelist())
        schema = wheel.read("frozen_lifecycle/job-status-graph.schema.json")
        starter = wheel.read("frozen_lifecycle/starter/job-status-graph.json")
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = wheel.read(info).decode()
        entry_points = wheel.read(info.replace("METADATA", "entry_points.txt")).decode()
    assert toolkit_wheel.name == "frozen_lifecycle-0.1.0-py3-none-any.whl"
    assert (
        schema == (TOOLKIT_SRC / "frozen_lifecycle" / "job-status-graph.schema.json").read_bytes()
    )
    assert starter == STARTER_FIXTURE.read_bytes()
    for name in (
        "frozen_lifecycle/py.typed",
        "frozen_lifecycle/gate/__main__.py",
        "frozen_lifecycle/starter/job-status-graph.test.mjs.tmpl",
        "frozen_lifecycle/starter/test_job_status_graph.py.tmpl",
        "frozen_lifecycle/starter/frozen-lifecycle.yml.tmpl",
    ):
        assert name in names, name
    assert not [n for n in names if not n.startswith(("frozen_lifecycle/", "frozen_lifecycle-"))]
    assert "Requires-Dist" not in metadata
    assert "Name: frozen-lifecycle\n" in metadata
    assert "License-Expression: MIT\n" in metadata
    assert "frozen-lifecycle = frozen_lifecycle.cli:main" in entry_points


def test_the_sdist_builds_the_same_wheel_on_its_own(toolkit_dist: Path, tmp_path: Path) -> None:
    (sdist,) = toolkit_dist.glob("frozen_lifecycle-0.1.0.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
        archive.extractall(tmp_path, filter="data")
    for name in (
        "pyproject.toml",
        "README.md",
        "CHANGELOG.md",
        "tests/conftest.py",
        "tests/gate/snippets.py",
        "tests/gate/test_rules.py",
        "tests/repositories/shop/src/shop/worker.py",
        "tests/repositories/case-study/src/job-status.js",
    ):
        assert name in names, name
    assert "src/frozen_lifecycle/job-status-graph.schema.json" in names
    source = tmp_path / "frozen_lifecycle-0.1.0"
    out = tmp_path / "out"
    command = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)]
    done = subprocess.run(
        [*command, str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (rebuilt,) = out.glob("*.whl")
    (original,) = toolkit_dist.glob("*.whl")
    with zipfile.ZipFile(rebuilt) as one, zipfile.ZipFile(original) as other:
        assert sorted(one.namelist()) == sorted(other.namelist())


def test_the_distributions_pass_twines_check(toolkit_dist: Path) -> None:
    """What the package index checks before it takes an upload: the metadata, and the README
    as the long description (rendered as Markdown)."""
    if importlib.util.find_spec("twine") is None:
        pytest.skip("twine is not installed")
    distributions = sorted(str(p) for p in toolkit_dist.iterdir())
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *distributions],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_the_version_is_one_and_the_changelog_names_it(toolkit_wheel: Path) -> None:
    with zipfile.ZipFile(toolkit_wheel) as wheel:
        info = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = wheel.read(info).decode()
    assert f"Version: {__version__}\n" in metadata
    changelog = (TOOLKIT_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[([^\]]+)\] - (\S+)$", changelog, re.M)
    assert releases[0][0] == __version__, "the changelog's newest section is this version"
    assert releases[0][1] == "unreleased" or re.fullmatch(r"\d{4}-\d{2}-\d{2}", releases[0][1])
