"""The toolkit's own tests: they need nothing of the exporter, only the toolkit's starter
fixture (the case study's) and the standard library, plus pytest."""

from __future__ import annotations

import json
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
