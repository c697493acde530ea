"""One test per validator rule: a broken fixture is refused with a message naming the defect."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from frozen_lifecycle.graph import (
    InvalidGraphError,
    build_graph,
    fingerprint,
    load_graph,
    parse_graph,
)
from reportexport.core.fixture import default_fixture_path
from tests.helpers import BROKEN, FIXTURE_PATH


def fixture_document() -> dict[str, Any]:
    return json.loads(FIXTURE_PATH.read_text())


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_each_broken_fixture_is_refused_naming_the_defect(rule: str) -> None:
    mutate, message = BROKEN[rule]
    document = fixture_document()
    mutate(document)
    with pytest.raises(InvalidGraphError, match=message):
        build_graph(document, source="broken.json")


def test_every_defect_is_reported_not_only_the_first() -> None:
    document = fixture_document()
    document["initial"] = "waiting"
    document["forbidden_aliases"].append("failed")
    with pytest.raises(InvalidGraphError) as raised:
        build_graph(document)
    assert any("initial" in d for d in raised.value.defects)
    assert any("'failed' is also a state" in d for d in raised.value.defects)


def test_text_that_is_not_json_is_refused() -> None:
    with pytest.raises(InvalidGraphError, match="not JSON"):
        parse_graph("{ states: [", source="x.json")


def test_the_frozen_fixture_is_valid() -> None:
    graph = load_graph(FIXTURE_PATH)
    assert graph.states == ("queued", "running", "succeeded", "failed", "canceled")
    assert graph.actors == ("worker", "user")
    assert graph.effect_names == (
        "write_csv_object",
        "emit_done_webhook",
        "emit_failed_webhook",
        "delete_temp_object",
    )


def test_fingerprint_is_the_sha256_of_canonical_json() -> None:
    document = fixture_document()
    reordered = dict(reversed(list(copy.deepcopy(document).items())))
    assert fingerprint(document) == fingerprint(reordered)
    assert load_graph(FIXTURE_PATH).fingerprint == fingerprint(document)
    document["states"].append("archived")
    assert fingerprint(document) != load_graph(FIXTURE_PATH).fingerprint


def test_reportexport_graph_env_points_at_another_fixture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = fixture_document()
    document["job_type"] = "invoice_export"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(document))
    monkeypatch.setenv("REPORTEXPORT_GRAPH", str(other))
    assert load_graph(default_fixture_path()).job_type == "invoice_export"
