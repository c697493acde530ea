from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURE_PATH = REPO_ROOT / "contracts" / "job-status-graph.json"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


def pytest_report_header() -> str:
    from tests.postgres_server import DEFAULT_URL

    explicit = os.environ.get("REPORTEXPORT_TEST_POSTGRES_URL")
    return f"PostgreSQL for tests: {explicit or DEFAULT_URL} (or a throwaway cluster)"
