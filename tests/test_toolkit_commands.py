"""`reportexport graph`, `gate` and `generate` are the toolkit's commands, lent to the exporter:
the same output, the exporter's fixture where no other is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frozen_lifecycle import cli as toolkit
from frozen_lifecycle.graph import load_graph
from frozen_lifecycle.render import render_mermaid, render_table
from reportexport.entrypoints import cli
from tests.helpers import FIXTURE_PATH, REPO_ROOT


@pytest.fixture(autouse=True)
def _no_fixture_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REPORTEXPORT_GRAPH", raising=False)
    monkeypatch.delenv("FROZEN_LIFECYCLE_GRAPH", raising=False)


def test_graph_prints_what_the_toolkit_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO_ROOT)
    assert cli.main(["graph", "--format", "mermaid"]) == 0
    ours = capsys.readouterr().out
    assert toolkit.main(["graph", "--format", "mermaid"]) == 0
    assert ours == capsys.readouterr().out == render_mermaid(load_graph(FIXTURE_PATH))


def test_outside_a_checkout_the_programs_own_fixture_is_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["graph"]) == 0
    assert capsys.readouterr().out == render_table(load_graph(FIXTURE_PATH))
    assert toolkit.main(["graph"]) == 2  # the toolkit has no fixture of its own to fall back on
    assert "no such file" in capsys.readouterr().err


def test_reportexport_graph_names_another_fixture_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    document = json.loads(FIXTURE_PATH.read_text())
    document["job_type"] = "invoice_export"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(document))
    monkeypatch.setenv("REPORTEXPORT_GRAPH", str(other))
    assert cli.main(["graph", "--format", "dot"]) == 0
    assert capsys.readouterr().out.startswith('digraph "invoice_export" {')


def test_gate_and_generate_find_this_tree_clean(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO_ROOT)
    assert cli.main(["gate", "src"]) == 0
    assert "gate: clean against" in capsys.readouterr().err
    assert cli.main(["generate", "--root", str(REPO_ROOT)]) == 0
    assert capsys.readouterr().out == ""  # nothing to rewrite: every artifact is current


def test_a_refused_fixture_is_named_with_the_exporters_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("[")
    assert cli.main(["graph", "--graph", str(broken)]) == 2
    assert capsys.readouterr().err.startswith(
        f"reportexport graph: {broken}: invalid job status graph:\n  - not JSON: "
    )
