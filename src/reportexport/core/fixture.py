"""Where the exporter's fixture comes from: `REPORTEXPORT_GRAPH`, else the copy its wheel
carries, else the checkout's contracts/ directory (an editable install or a bare tree)."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from frozen_lifecycle.graph import FIXTURE_NAME

GRAPH_ENV = "REPORTEXPORT_GRAPH"


def default_fixture_path() -> Path:
    """Where the fixture comes from when no --graph is given: REPORTEXPORT_GRAPH wins."""
    override = os.environ.get(GRAPH_ENV)
    if override:
        return Path(override)
    return packaged_fixture_path()


def packaged_fixture_path() -> Path:
    """The fixture this program was built with: inside an installed wheel, or the checkout's
    contracts/ directory (an editable install or a bare source tree)."""
    packaged = resources.files("reportexport").joinpath("contracts", FIXTURE_NAME)
    if packaged.is_file():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[3] / "contracts" / FIXTURE_NAME
