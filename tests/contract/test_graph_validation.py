"""One test per validator rule: a broken fixture is refused with a message naming the defect."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
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
from reportexport.fixture import default_fixture_path
from tests.conftest import FIXTURE_PATH

Mutation = Callable[[dict[str, Any]], None]


def fixture_document() -> dict[str, Any]:
    return json.loads(FIXTURE_PATH.read_text())


def edge(from_status: str, to_status: str, actor: str = "worker") -> dict[str, str]:
    return {"from": from_status, "to": to_status, "actor": actor}


BROKEN: dict[str, tuple[Mutation, str]] = {
    "fails the schema": (
        lambda g: g.update(states="queued"),
        r"schema: \$\.states: expected array",
    ),
    "unexpected key": (lambda g: g.update(transition=[]), r"unexpected property 'transition'"),
    "edge names an unknown state": (
        lambda g: g["transitions"].append(edge("running", "archived")),
        r"transitions\[5\] running->archived: to names unknown state 'archived'",
    ),
    "initial is not a state": (
        lambda g: g.update(initial="waiting"),
        r"initial: 'waiting' is not a state",
    ),
    "terminal is not a subset of states": (
        lambda g: g["terminal"].append("archived"),
        r"terminal: 'archived' is not a state",
    ),
    "an edge leaves a terminal state": (
        lambda g: g["transitions"].append(edge("failed", "running")),
        r"transitions\[5\] failed->running: leaves terminal state 'failed'",
    ),
    "a state is unreachable from initial": (
        lambda g: (g["states"].append("archived"), g["terminal"].append("archived")),
        r"states: 'archived' is unreachable from initial 'queued'",
    ),
    "a non-terminal state has no path to a terminal state": (
        lambda g: (g["states"].append("stuck"), g["transitions"].append(edge("running", "stuck"))),
        r"states: 'stuck' has no path to a terminal state",
    ),
    "duplicate edges": (
        lambda g: g["transitions"].append(edge("queued", "running")),
        r"transitions\[5\] queued->running: duplicate edge",
    ),
    "an edge without an actor": (
        lambda g: g["transitions"][2].pop("actor"),
        r"schema: \$\.transitions\[2\]: missing required property 'actor'",
    ),
    "an edge with an empty actor": (
        lambda g: g["transitions"][2].update(actor=""),
        r"\$\.transitions\[2\]\.actor: '' does not match",
    ),
    "a side effect on a non-terminal state": (
        lambda g: g["side_effects"].update(running=["notify"]),
        r"side_effects\.running: side effects belong on terminal states only",
    ),
    "a side effect on an unknown state": (
        lambda g: g["side_effects"].update(archived=["notify"]),
        r"side_effects\.archived: 'archived' is not a state",
    ),
    "a forbidden alias that is also a state": (
        lambda g: g["forbidden_aliases"].append("queued"),
        r"forbidden_aliases: 'queued' is also a state",
    ),
    "an edge that does not change the status": (
        lambda g: g["transitions"].append(edge("running", "running")),
        r"transitions\[5\] running->running: an edge must change the status",
    ),
    "a name with a trailing newline": (
        lambda g: g.update(job_type="report_export\n"),
        r"job_type: 'report_export\\n' is not a plain lower-case name",
    ),
}


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
