"""The frozen fixture and the module under contract (a mutated copy under ./scripts/mutate)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from reportexport.core import job_status as _module_under_contract
from tests.helpers import REPO_ROOT
from tests.tiers import Tier

TIER = Tier("contract", budget_seconds=300)

# The file the module was imported from: under ./scripts/mutate, the mutated copy when
# job_status is the target, the real one when a module it imports (the toolkit's) is.
MODULE_PATH = Path(str(_module_under_contract.__file__))


@pytest.fixture(scope="session")
def graph() -> dict[str, Any]:
    """The frozen fixture, read as plain JSON the way the case study reads it."""
    return json.loads((REPO_ROOT / "contracts" / "job-status-graph.json").read_text())


@pytest.fixture
def job_status() -> ModuleType:
    """The module under contract; the labeled-failure tests pass mutated copies instead."""
    from reportexport.core import job_status

    return job_status


@pytest.fixture
def src() -> str:
    return MODULE_PATH.read_text(encoding="utf-8")
