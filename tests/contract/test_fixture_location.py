"""Where the exporter's own fixture comes from: REPORTEXPORT_GRAPH, the copy its wheel carries,
else the checkout's contracts/ directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from frozen_lifecycle.graph import FIXTURE_NAME, load_graph
from reportexport.core import fixture as fixture_module
from reportexport.core.fixture import default_fixture_path
from tests.helpers import FIXTURE_PATH, REPO_ROOT


def test_without_a_setting_the_checkouts_fixture_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REPORTEXPORT_GRAPH", raising=False)
    assert default_fixture_path() == REPO_ROOT / "contracts" / FIXTURE_NAME
    assert load_graph(default_fixture_path()) == load_graph(FIXTURE_PATH)


def test_an_installed_copy_wins_over_the_checkouts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exporter's wheel carries its fixture as package data under contracts/."""
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / FIXTURE_NAME).write_text("{}", encoding="utf-8")
    packages = {"reportexport": tmp_path}
    monkeypatch.setattr(fixture_module.resources, "files", packages.__getitem__)
    monkeypatch.delenv("REPORTEXPORT_GRAPH", raising=False)
    assert default_fixture_path() == tmp_path / "contracts" / FIXTURE_NAME
