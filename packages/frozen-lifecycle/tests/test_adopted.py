"""The fixtures and configurations of the two public job queues the README reports on: valid
fixtures, configurations of under ten lines that name what carries each lifecycle."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPOSITORIES
from frozen_lifecycle.gate.config import load_config
from frozen_lifecycle.graph import load_graph

ADOPTED = REPOSITORIES / "adopted"


@pytest.mark.parametrize("name", ["procrastinate", "rq"])
def test_an_adopted_repositorys_fixture_and_configuration(name: str) -> None:
    root: Path = ADOPTED / name
    graph = load_graph(root / "contracts" / "job-status-graph.json")
    config = load_config(root)
    settings = [
        line for line in (root / "gate.toml").read_text().splitlines() if line and line[0] != "#"
    ]
    assert len(settings) < 10
    assert config.carriers.configured
    assert set(config.carriers.status_types)  # its status enum is named
    for _, state in (*config.carriers.holders, *config.carriers.moves):
        assert state in graph.states
