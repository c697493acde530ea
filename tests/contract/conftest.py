from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import REPO_ROOT

MODULE_PATH = REPO_ROOT / "src" / "reportexport" / "job_status.py"


@pytest.fixture(scope="session")
def graph() -> dict[str, Any]:
    """The frozen fixture, read as plain JSON the way the case study reads it."""
    return json.loads((REPO_ROOT / "contracts" / "job-status-graph.json").read_text())


@pytest.fixture
def job_status() -> ModuleType:
    """The module under contract; the labeled-failure tests pass mutated copies instead."""
    from reportexport import job_status

    return job_status


@pytest.fixture
def src() -> str:
    return MODULE_PATH.read_text(encoding="utf-8")
