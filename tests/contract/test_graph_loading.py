"""Where a fixture is read from, what a `Graph` holds, and the exact text of every refusal."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from frozen_lifecycle.graph import (
    SCHEMA_NAME,
    Edge,
    InvalidGraphError,
    build_graph,
    fingerprint,
    load_graph,
    load_schema,
    parse_graph,
    schema_text,
    structural_defects,
)
from tests.helpers import FIXTURE_PATH, REPO_ROOT, TOOLKIT_SRC


def fixture_document() -> dict[str, Any]:
    return json.loads(FIXTURE_PATH.read_text(encoding="utf-8"))


def test_a_loaded_graph_holds_the_fixture_field_by_field() -> None:
    graph = load_graph(FIXTURE_PATH)
    assert graph.job_type == "report_export"
    assert graph.initial == "queued"
    assert graph.terminal == ("succeeded", "failed", "canceled")
    assert graph.forbidden_aliases == (
        # gate: allow forbidden-alias -- the fixture's own list of forbidden aliases, read back
        "retrying", "partial", "uploading", "cleanup", "pending", "done", "error",
    )  # fmt: skip
    assert graph.transitions[0] == Edge(from_status="queued", to_status="running", actor="worker")
    assert graph.transitions[-1] == Edge(from_status="running", to_status="canceled", actor="user")
    assert graph.side_effects["succeeded"] == ("write_csv_object", "emit_done_webhook")
    assert graph.source == str(FIXTURE_PATH)
    assert graph.document == fixture_document()


def test_an_edge_is_found_by_both_ends_only() -> None:
    graph = load_graph(FIXTURE_PATH)
    assert graph.edge("running", "failed") == Edge(
        from_status="running", to_status="failed", actor="worker"
    )
    assert graph.edge("running", "canceled") == Edge(
        from_status="running", to_status="canceled", actor="user"
    )
    assert graph.edge("queued", "succeeded") is None  # from matches an edge, to another
    assert graph.edge("failed", "running") is None  # the reverse of an edge
    assert graph.edge("queued", "failed") is None


def test_terminal_states_are_terminal_and_others_are_not() -> None:
    graph = load_graph(FIXTURE_PATH)
    assert [s for s in graph.states if graph.is_terminal(s)] == ["succeeded", "failed", "canceled"]
    assert graph.is_terminal("archived") is False


def test_fingerprint_hashes_compact_sorted_utf8_json() -> None:
    document = {"b": ["é", 1], "a": {"y": None, "x": True}}
    canonical = '{"a":{"x":true,"y":null},"b":["é",1]}'
    assert fingerprint(document) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_a_path_given_wins_over_the_default(tmp_path: Path) -> None:
    document = fixture_document()
    document["job_type"] = "invoice_export"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(document), encoding="utf-8")
    graph = load_graph(other)
    assert graph.job_type == "invoice_export"
    assert graph.source == str(other)
    assert load_graph(str(other)).job_type == "invoice_export"


def test_a_refused_file_is_named_in_the_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("[", encoding="utf-8")
    with pytest.raises(InvalidGraphError) as raised:
        load_graph(broken)
    assert raised.value.source == str(broken)
    assert str(raised.value).startswith(f"{broken}: invalid job status graph: not JSON: ")


def test_the_schema_is_the_toolkits_package_data() -> None:
    """The JSON Schema lives beside the toolkit's modules, so a wheel, an editable install and
    a bare `PYTHONPATH` all read the same file."""
    beside = TOOLKIT_SRC / "frozen_lifecycle" / SCHEMA_NAME
    assert schema_text() == beside.read_text(encoding="utf-8")
    assert load_schema() == json.loads(beside.read_text(encoding="utf-8"))
    assert not (REPO_ROOT / "contracts" / SCHEMA_NAME).exists()


def test_every_defect_is_in_the_message_in_order() -> None:
    error = InvalidGraphError("g.json", ["first defect", "second defect"])
    assert str(error) == "g.json: invalid job status graph: first defect; second defect"
    assert error.source == "g.json"
    assert error.defects == ("first defect", "second defect")


def test_a_text_without_a_source_is_called_graph() -> None:
    with pytest.raises(InvalidGraphError) as raised:
        parse_graph("{")
    assert str(raised.value).startswith("<graph>: invalid job status graph: not JSON: ")
    assert raised.value.source == "<graph>"
    with pytest.raises(InvalidGraphError) as raised:
        build_graph({})
    assert raised.value.source == "<graph>"
    document = fixture_document()
    document["initial"] = "waiting"
    for refuse in (
        lambda: parse_graph(json.dumps(document), source="p.json"),
        lambda: build_graph(document, source="p.json"),
    ):
        with pytest.raises(InvalidGraphError) as raised:
            refuse()
        assert raised.value.source == "p.json"
        assert (
            str(raised.value)
            == "p.json: invalid job status graph: initial: 'waiting' is not a state"
        )


def test_a_schema_failure_names_its_source() -> None:
    with pytest.raises(InvalidGraphError) as raised:
        parse_graph("[]", source="list.json")
    assert raised.value.source == "list.json"
    assert str(raised.value).startswith("list.json: invalid job status graph: schema: ")
    assert parse_graph(FIXTURE_PATH.read_text(encoding="utf-8"), source="s.json").source == "s.json"


def test_a_disconnected_cycle_is_unreachable_and_never_ends() -> None:
    """Two states that only lead to each other: reachable from neither end of the graph."""
    document = fixture_document()
    document["states"] += ["paused", "resumed"]
    document["transitions"] += [
        {"from": "paused", "to": "resumed", "actor": "worker"},
        {"from": "resumed", "to": "paused", "actor": "worker"},
    ]
    assert structural_defects(document) == [
        "states: 'paused' is unreachable from initial 'queued'",
        "states: 'resumed' is unreachable from initial 'queued'",
        "states: 'paused' has no path to a terminal state",
        "states: 'resumed' has no path to a terminal state",
    ]


def test_a_chain_is_followed_to_its_end() -> None:
    document = fixture_document()
    document["states"] += ["a", "b"]
    document["transitions"] += [
        {"from": "running", "to": "a", "actor": "worker"},
        {"from": "a", "to": "b", "actor": "worker"},
        {"from": "b", "to": "failed", "actor": "worker"},
    ]
    assert structural_defects(document) == []


@pytest.mark.parametrize(
    ("change", "defect"),
    [
        (
            lambda g: g.update(initial="queued\n"),
            "initial: 'queued\\n' is not a plain lower-case name",
        ),
        (
            lambda g: g["side_effects"].update({"failed\n": []}),
            "side_effects: 'failed\\n' is not a plain lower-case name",
        ),
        (
            lambda g: g["side_effects"]["failed"].append("Notify"),
            "side_effects.failed: 'Notify' is not a plain lower-case name",
        ),
        (
            lambda g: g["transitions"][1].update(actor="User"),
            "transitions[1].actor: 'User' is not a plain lower-case name",
        ),
        (
            lambda g: g["forbidden_aliases"].append("done\n"),
            "forbidden_aliases: 'done\\n' is not a plain lower-case name",
        ),
    ],
)
def test_each_name_is_checked_where_it_stands(change: Any, defect: str) -> None:
    document = copy.deepcopy(fixture_document())
    change(document)
    assert defect in structural_defects(document)
