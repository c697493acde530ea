"""The toolkit's own tests: they need nothing of the exporter, only the toolkit's starter
fixture (the case study's), the small repositories under `repositories/` and the standard
library, plus pytest. Run them from the toolkit's directory, or from its unpacked sdist:
`python -m pytest` (with `PYTHONPATH=src` where another copy of the package is installed)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TOOLKIT_ROOT = Path(__file__).resolve().parents[1]
TOOLKIT_SRC = TOOLKIT_ROOT / "src"
STARTER_FIXTURE = TOOLKIT_SRC / "frozen_lifecycle" / "starter" / "job-status-graph.json"
# Not installed (an unpacked sdist, a Python with only pytest): the tests take it from here.
if importlib.util.find_spec("frozen_lifecycle") is None:
    sys.path.insert(0, str(TOOLKIT_SRC))
# Repositories the gate is tried on, as they are committed (the fixture and what it generates
# are added by the fixtures below).
REPOSITORIES = Path(__file__).resolve().parent / "repositories"
# Variables that name another fixture: a run of the gate in a test must not see them.
GRAPH_ENVS = ("FROZEN_LIFECYCLE_GRAPH", "REPORTEXPORT_GRAPH")


def pytest_report_header() -> str:
    import frozen_lifecycle

    return f"frozen_lifecycle from {Path(frozen_lifecycle.__file__).parent}"


def gate_environ() -> dict[str, str]:
    """The environment of a command run from this source tree: the toolkit on PYTHONPATH, and
    no variable naming another fixture."""
    env = {k: v for k, v in os.environ.items() if k not in GRAPH_ENVS}
    env["PYTHONPATH"] = str(TOOLKIT_SRC)
    return env


def run_gate(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -S -m frozen_lifecycle gate` in `root`: no site-packages, so nothing but the
    standard library."""
    return subprocess.run(
        [sys.executable, "-S", "-m", "frozen_lifecycle", "gate", *args],
        cwd=root,
        env=gate_environ(),
        capture_output=True,
        text=True,
        check=False,
    )


def generate(root: Path) -> None:
    """`frozen-lifecycle generate` in `root`: the README's regions and the configured files."""
    done = subprocess.run(
        [sys.executable, "-S", "-m", "frozen_lifecycle", "generate"],
        cwd=root,
        env=gate_environ(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="session")
def starter_fixture() -> Path:
    return STARTER_FIXTURE


@pytest.fixture
def starter_document() -> dict[str, Any]:
    """The case study's fixture as plain JSON, a fresh copy for each test to change."""
    return json.loads(STARTER_FIXTURE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def shop_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("template") / "shop"
    shutil.copytree(REPOSITORIES / "shop", root)
    (root / "contracts").mkdir()
    shutil.copy(STARTER_FIXTURE, root / "contracts" / "job-status-graph.json")
    generate(root)
    return root


@pytest.fixture
def tree(tmp_path: Path, shop_template: Path) -> Path:
    """The shop, a small Python repository on the case study's fixture, with its README table
    and typed names generated (`repositories/shop`): clean under the gate, each test's own copy."""
    root = tmp_path / "repo"
    shutil.copytree(shop_template, root)
    return root


@pytest.fixture
def case_study(tmp_path: Path) -> Path:
    """The case study's repository (`repositories/case-study`): the fixture, the worker module
    `src/job-status.js` and the contract tests `test/job-status-graph.test.mjs`."""
    root = tmp_path / "case-study"
    shutil.copytree(REPOSITORIES / "case-study", root)
    (root / "contracts").mkdir()
    shutil.copy(STARTER_FIXTURE, root / "contracts" / "job-status-graph.json")
    return root


@pytest.fixture(scope="session")
def toolkit_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toolkit's wheel and sdist, built once for the session from this source tree with the
    build backend already installed (no isolation, so no network). Where the build tools are
    not installed (a Python with only pytest), the tests that need a distribution are skipped."""
    missing = [name for name in ("build", "hatchling") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"building the distributions needs {' and '.join(missing)}: not installed")
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(TOOLKIT_ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="session")
def toolkit_wheel(toolkit_dist: Path) -> Path:
    (wheel,) = toolkit_dist.glob("frozen_lifecycle-*-py3-none-any.whl")
    return wheel


@dataclass(frozen=True)
class Environment:
    """A fresh virtual environment with the toolkit installed from its wheel, and nothing else."""

    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def environ(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _FOREIGN}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.root)
        return env

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), cwd=cwd, env=self.environ(), capture_output=True, text=True, check=False
        )


# What names another fixture or another Python: the fresh environment must not see them.
_FOREIGN = {"PYTHONPATH", "VIRTUAL_ENV", *GRAPH_ENVS}


@pytest.fixture(scope="session")
def toolkit_environment(
    tmp_path_factory: pytest.TempPathFactory, toolkit_wheel: Path
) -> Environment:
    root = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
    environment = Environment(root)
    done = environment.run(
        str(environment.bin / "python"),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-index",
        "--disable-pip-version-check",
        str(toolkit_wheel),
        cwd=root,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return environment
