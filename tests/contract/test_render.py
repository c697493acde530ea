"""`reportexport graph` renders the case study's decision table and diagrams from the fixture."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from frozen_lifecycle.graph import load_graph
from frozen_lifecycle.render import decision_rows
from tests.helpers import FIXTURE_PATH

GRAPH = load_graph(FIXTURE_PATH)

# The case study's table, with its prose events left out and side effects by fixture name.
CASE_STUDY_TABLE = {
    ("queued", "running", "worker", "none"),
    ("queued", "canceled", "user", "delete_temp_object"),
    ("running", "succeeded", "worker", "write_csv_object, emit_done_webhook"),
    ("running", "failed", "worker", "emit_failed_webhook"),
    ("running", "canceled", "user", "delete_temp_object"),
    ("succeeded", "reject", "—", "none"),
    ("failed", "reject", "—", "none"),
    ("canceled", "reject", "—", "none"),
}


def reportexport(*args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "reportexport", *args], capture_output=True, text=True, check=True
    ).stdout


def test_decision_table_reproduces_the_case_study_in_meaning() -> None:
    rows = {(cur, nxt, actor, effect) for cur, _, nxt, actor, effect in decision_rows(GRAPH)}
    assert rows == CASE_STUDY_TABLE


def test_terminal_rows_reject_any_retry() -> None:
    rejects = [row for row in decision_rows(GRAPH) if row[2] == "reject"]
    assert [row[0] for row in rejects] == list(GRAPH.terminal)
    assert all(row[1] == "any retry" for row in rejects)


def test_table_command_prints_a_markdown_table() -> None:
    lines = reportexport("graph", "--format", "table").splitlines()
    assert lines[0] == "| Current status | Event | Next status | Actor | Side effect |"
    assert len(lines) == 2 + len(CASE_STUDY_TABLE)
    assert "| running | worker moves the job to failed | failed | worker |" in lines[5]


def test_mermaid_has_every_edge_with_its_actor() -> None:
    text = reportexport("graph", "--format", "mermaid")
    assert text.startswith("stateDiagram-v2\n    [*] --> queued\n")
    for edge in GRAPH.transitions:
        assert f"    {edge.from_status} --> {edge.to_status}: {edge.actor}\n" in text


def test_dot_marks_terminal_states() -> None:
    text = reportexport("graph", "--format", "dot")
    assert '"succeeded" [shape=doublecircle' in text
    assert '"queued" [shape=box' in text
    assert '"running" -> "canceled" [label="user"];' in text


def test_json_carries_the_fixture_and_its_fingerprint() -> None:
    body = json.loads(reportexport("graph", "--format", "json"))
    assert body["graph"] == json.loads(FIXTURE_PATH.read_text())
    assert body["fingerprint"] == GRAPH.fingerprint


def test_svg_draws_every_state_and_edge() -> None:
    text = reportexport("graph", "--format", "svg")
    assert text.startswith("<svg ")
    for state in GRAPH.states:
        assert f'data-state="{state}"' in text
    assert text.count("<line ") == len(GRAPH.transitions)


@pytest.mark.parametrize("fmt", ["table", "mermaid", "dot", "json", "svg"])
def test_an_invalid_fixture_exits_2_with_its_defects(tmp_path: Path, fmt: str) -> None:
    broken = tmp_path / "broken.json"
    document = json.loads(FIXTURE_PATH.read_text())
    document["initial"] = "waiting"
    broken.write_text(json.dumps(document))
    done = subprocess.run(
        [sys.executable, "-m", "reportexport", "graph", "--format", fmt, "--graph", str(broken)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "initial: 'waiting' is not a state" in done.stderr
