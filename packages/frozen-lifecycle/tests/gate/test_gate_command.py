"""The gate as a command on the shop, a repository of its own: clean as committed, its output
formats, another fixture, and a wrong call."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conftest import run_gate


def edit(path: Path, change: Callable[[str], str]) -> None:
    path.write_text(change(path.read_text()))


def test_the_shop_passes_with_the_standard_library_alone(tree: Path) -> None:
    done = run_gate(tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""
    assert "gate: clean against contracts/job-status-graph.json" in done.stderr


def test_json_and_github_formats(tree: Path) -> None:
    edit(tree / "src" / "shop" / "worker.py", lambda text: text + '\nX = "partial"\n')
    as_json = json.loads(run_gate(tree, "--format", "json").stdout)
    assert [(f["path"], f["code"]) for f in as_json] == [("src/shop/worker.py", "forbidden-alias")]
    github = run_gate(tree, "--format", "github").stdout
    assert github.startswith("::error file=src/shop/worker.py,line=")
    assert ",title=forbidden-alias::" in github


def test_another_fixture_through_the_graph_option(tree: Path) -> None:
    other = tree / "other.json"
    document = json.loads((tree / "contracts" / "job-status-graph.json").read_text())
    document["states"].append("archived")
    document["terminal"].append("archived")
    document["transitions"].append({"from": "running", "to": "archived", "actor": "worker"})
    other.write_text(json.dumps(document))
    done = run_gate(tree, "--graph", "other.json")
    assert done.returncode == 1
    assert "STATES lacks fixture state(s) archived" not in done.stdout  # STATES is generated
    assert "README.md:" in done.stdout  # the README still shows the old graph...
    assert "src/shop/lifecycle.py:" in done.stdout  # ...and the typed names the old states
    assert "generated-drift" in done.stdout


def test_a_wrong_call_exits_2(tree: Path) -> None:
    assert run_gate(tree, "--format", "xml").returncode == 2
    assert run_gate(tree, "no/such/dir").returncode == 2
