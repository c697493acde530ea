"""The toolkit's own tests: they need nothing of the exporter, only the toolkit's starter
fixture (the case study's) and the standard library, plus pytest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TOOLKIT_ROOT = Path(__file__).resolve().parents[1]
TOOLKIT_SRC = TOOLKIT_ROOT / "src"
STARTER_FIXTURE = TOOLKIT_SRC / "frozen_lifecycle" / "starter" / "job-status-graph.json"


@pytest.fixture(scope="session")
def starter_fixture() -> Path:
    return STARTER_FIXTURE


@pytest.fixture
def starter_document() -> dict[str, Any]:
    """The case study's fixture as plain JSON, a fresh copy for each test to change."""
    return json.loads(STARTER_FIXTURE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def toolkit_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toolkit's wheel and sdist, built once for the session from this source tree with the
    build backend already installed (no isolation, so no network)."""
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
_FOREIGN = {"PYTHONPATH", "VIRTUAL_ENV", "REPORTEXPORT_GRAPH", "FROZEN_LIFECYCLE_GRAPH"}


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
