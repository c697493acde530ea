from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURE_PATH = REPO_ROOT / "contracts" / "job-status-graph.json"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT
