"""Browser flows in a real headless Chromium against `reportexport serve`: each test module
starts its own server (its module-scoped `service`); every flow runs at each viewport."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.pages import VIEWPORTS, Watched, browsing
from tests.tiers import Tier

TIER = Tier("browser", budget_seconds=1200, marks=("browser", "processes", "slow"))


@pytest.fixture(params=list(VIEWPORTS))
def viewport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def watched(service: dict[str, Any], viewport: str) -> Iterator[Watched]:
    with browsing(service, viewport) as seen:
        yield seen
