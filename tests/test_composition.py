"""One composition root: the graph and the settings are built there, once per process."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from reportexport import composition
from reportexport.graph import load_graph
from tests.conftest import REPO_ROOT

SRC = REPO_ROOT / "src" / "reportexport"
# The toolkit's commands take any fixture on purpose (`--graph`); the gate reads files only.
TOOLKIT = {"cli.py", "gate/__init__.py", "gate/commits.py", "graph.py"}
GRAPH_BUILDERS = {"load_graph", "parse_graph", "build_graph"}


def calls(path: Path) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            found.append((name, node.lineno))
    return found


def test_only_the_composition_root_builds_the_graph_and_the_settings() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative in ("composition.py", "settings.py"):
            continue
        for name, line in calls(path):
            graph = name.split(".")[-1] in GRAPH_BUILDERS and relative not in TOOLKIT
            if graph or name in ("Settings", "Settings.load"):
                offenders.append(f"{relative}:{line}: {name}")
    assert offenders == []


def test_a_process_loads_the_graph_once_for_every_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads = []

    def counted(*args: object) -> object:
        loads.append(args)
        return load_graph(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(composition, "load_graph", counted)
    settings = composition.load_settings(environ={"REPORTEXPORT_HOME": str(tmp_path)})
    from reportexport.demo import build_demo_database, write_demo_catalog

    build_demo_database(tmp_path / "demo.duckdb", rows=100)
    write_demo_catalog(tmp_path / "catalog.toml")
    with composition.running(settings) as runtime:
        app = runtime.app()
        runtime.worker()
        runtime.effects_runner()
        assert runtime.exports.saved_queries()
        assert app.openapi()["components"]["schemas"]["JobOut"]["properties"]["status"]["enum"]
        assert runtime.database.schema_status().current
    assert len(loads) == 1


def test_a_fixture_other_than_the_generated_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.store.conftest import graph_with_archived

    other, _ = graph_with_archived(tmp_path)
    monkeypatch.setenv("REPORTEXPORT_GRAPH", str(other))
    with pytest.raises(composition.SetupError, match="reportexport generate"):
        composition.packaged_graph()
