"""The `frozen-lifecycle` commands in a repository of their own: graph, sql, init, generate,
gate, and the refusals, each exit status and message."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from frozen_lifecycle import __version__
from frozen_lifecycle.cli import main
from frozen_lifecycle.graph import load_graph
from frozen_lifecycle.render import render_mermaid, render_table
from frozen_lifecycle.sql import guards_sql, tables_sql


@pytest.fixture
def repo(tmp_path: Path, starter_fixture: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with nothing but the fixture where the case study keeps it."""
    root = tmp_path / "repo"
    (root / "contracts").mkdir(parents=True)
    shutil.copy(starter_fixture, root / "contracts" / "job-status-graph.json")
    monkeypatch.chdir(root)
    monkeypatch.delenv("FROZEN_LIFECYCLE_GRAPH", raising=False)
    return root


def test_graph_renders_the_fixture_of_the_current_repository(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = load_graph(repo / "contracts" / "job-status-graph.json")
    assert main(["graph"]) == 0
    assert capsys.readouterr().out == render_table(graph)
    assert main(["graph", "--format", "mermaid"]) == 0
    assert capsys.readouterr().out == render_mermaid(graph)
    for kind, start in (("dot", 'digraph "report_export" {'), ("svg", "<svg ")):
        assert main(["graph", "--format", kind]) == 0
        assert capsys.readouterr().out.startswith(start)


def test_the_environment_names_another_fixture(
    repo: Path,
    starter_document: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    starter_document["job_type"] = "invoice_export"
    other = repo / "other.json"
    other.write_text(json.dumps(starter_document), encoding="utf-8")
    monkeypatch.setenv("FROZEN_LIFECYCLE_GRAPH", str(other))
    assert main(["graph", "--format", "dot"]) == 0
    assert capsys.readouterr().out.startswith('digraph "invoice_export" {')


def test_sql_prints_the_guards_and_the_tables_they_need(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = load_graph(repo / "contracts" / "job-status-graph.json")
    assert main(["sql", "--dialect", "sqlite"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(
        "-- Generated from contracts/job-status-graph.json by "
        "`frozen-lifecycle sql --dialect sqlite`: do not edit.\n"
        f"-- fingerprint: {graph.fingerprint}\n"
    )
    assert "CREATE TRIGGER jobs_status_guard BEFORE UPDATE OF status ON jobs" in printed
    assert main(["sql", "--dialect", "postgresql"]) == 0
    postgres = capsys.readouterr().out
    assert "CREATE OR REPLACE FUNCTION job_status_guard()" in postgres
    assert "pg_notify" not in postgres  # no channel unless one is named
    assert main(["sql", "--dialect", "postgresql", "--notify-channel", "jobs_changed"]) == 0
    assert "PERFORM pg_notify('jobs_changed', OLD.id || ' ' || NEW.status);" in (
        capsys.readouterr().out
    )
    assert main(["sql", "--dialect", "sqlite", "--tables"]) == 0
    assert capsys.readouterr().out == tables_sql("sqlite")


def test_a_sqlite_database_with_the_tables_and_guards_keeps_to_the_graph(
    repo: Path, tmp_path: Path
) -> None:
    """A team's own migration: `sql --tables`, then `sql`; then only declared moves, by their
    actor, each with its history row and a terminal state's side effects."""
    graph = load_graph(repo / "contracts" / "job-status-graph.json")
    connection = sqlite3.connect(tmp_path / "jobs.db", isolation_level=None)
    connection.executescript(tables_sql("sqlite") + guards_sql(graph, "sqlite"))
    connection.execute("INSERT INTO jobs (status) VALUES ('queued')")
    with pytest.raises(sqlite3.IntegrityError, match=r"^illegal:->running$"):
        connection.execute("INSERT INTO jobs (status) VALUES ('running')")
    with pytest.raises(sqlite3.IntegrityError, match=r"^actor:worker$"):
        connection.execute("UPDATE jobs SET status = 'canceled', change_actor = 'worker'")
    with pytest.raises(sqlite3.IntegrityError, match=r"^illegal:queued->succeeded$"):
        connection.execute("UPDATE jobs SET status = 'succeeded', change_actor = 'worker'")
    connection.execute("UPDATE jobs SET status = 'running', change_actor = 'worker'")
    connection.execute("UPDATE jobs SET status = 'failed', change_actor = 'worker'")
    with pytest.raises(sqlite3.IntegrityError, match=r"^terminal:failed$"):
        connection.execute("UPDATE jobs SET status = 'running', change_actor = 'worker'")
    history = connection.execute("SELECT from_status, to_status, actor FROM job_history")
    assert history.fetchall() == [("queued", "running", "worker"), ("running", "failed", "worker")]
    effects = connection.execute("SELECT status, effect FROM job_side_effects").fetchall()
    assert effects == [("failed", "emit_failed_webhook")]
    row = connection.execute("SELECT status, change_actor, finished_at FROM jobs").fetchone()
    assert row[:2] == ("failed", None)
    assert row[2] is not None


def test_init_writes_the_fixture_the_tests_and_the_workflow(
    tmp_path: Path, starter_fixture: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    assert main(["init", "--root", str(root), "--language", "python"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:5] == [
        "wrote contracts/job-status-graph.json",
        "wrote tests/test_job_status_graph.py",
        "wrote .github/workflows/frozen-lifecycle.yml",
        "wrote .pre-commit-config.yaml",
        "wrote .frozen-lifecycle",
    ]
    assert "  commit contracts/job-status-graph.json on its own first: " in out
    assert "write src/job_status.py: it exports STATES, can_transition and apply_transition" in out
    fixture = root / "contracts" / "job-status-graph.json"
    assert fixture.read_bytes() == starter_fixture.read_bytes()
    workflow = (root / ".github" / "workflows" / "frozen-lifecycle.yml").read_text()
    # Not published yet: CI runs the copy init wrote, with nothing installed but pytest.
    assert "pip install frozen-lifecycle" not in workflow
    assert "      - run: python -m pip install pytest\n" in workflow
    gate = "PYTHONPATH=.frozen-lifecycle python3 -S -m frozen_lifecycle gate"
    assert f"        run: {gate} --format github --commits ..HEAD\n" in workflow
    tests = (
        "python -m pytest -q --noconftest -c /dev/null --rootdir . tests/test_job_status_graph.py"
    )
    assert f"        run: {tests}\n" in workflow
    hook = (root / ".pre-commit-config.yaml").read_text()
    assert f"        entry: env {gate}\n" in hook
    copied = root / ".frozen-lifecycle"
    assert (copied / "VERSION").read_text() == f"{__version__}\n"
    assert (copied / "frozen_lifecycle" / "gate" / "__init__.py").is_file()
    assert not list(copied.rglob("__pycache__"))
    compile((root / "tests" / "test_job_status_graph.py").read_text(), "tests.py", "exec")


def test_init_from_the_package_index_once_it_is_published(tmp_path: Path) -> None:
    assert (
        main(["init", "--root", str(tmp_path), "--language", "python", "--install", "index"]) == 0
    )
    workflow = (tmp_path / ".github" / "workflows" / "frozen-lifecycle.yml").read_text()
    assert f"pip install frozen-lifecycle=={__version__} pytest\n" in workflow
    assert "        run: frozen-lifecycle gate --format github --commits ..HEAD\n" in workflow
    assert (
        "        entry: frozen-lifecycle gate\n"
        in (tmp_path / ".pre-commit-config.yaml").read_text()
    )
    assert not (tmp_path / ".frozen-lifecycle").exists()


def test_init_keeps_what_exists_and_forces_only_when_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "shop"
    (root / "contracts").mkdir(parents=True)
    (root / "contracts" / "job-status-graph.json").write_text("{}")  # theirs, even if broken
    assert main(["init", "--root", str(root), "--language", "javascript"]) == 2
    assert "invalid job status graph" in capsys.readouterr().err
    (root / "contracts" / "job-status-graph.json").unlink()
    assert main(["init", "--root", str(root), "--language", "javascript"]) == 0
    capsys.readouterr()
    tests = root / "test" / "job-status-graph.test.mjs"
    tests.write_text("// mine\n")
    assert main(["init", "--root", str(root), "--language", "javascript"]) == 0
    out = capsys.readouterr().out
    assert "kept contracts/job-status-graph.json (it exists)" in out
    assert "kept test/job-status-graph.test.mjs (it exists)" in out
    assert tests.read_text() == "// mine\n"
    assert main(["init", "--root", str(root), "--language", "javascript", "--force"]) == 0
    assert "wrote test/job-status-graph.test.mjs" in capsys.readouterr().out
    assert tests.read_text().startswith('import assert from "node:assert/strict";')


def test_init_follows_another_layout(tmp_path: Path, starter_document: dict[str, Any]) -> None:
    """Tests elsewhere import the module and read the fixture from where they are; an existing
    fixture's own words stand in for the case study's `succeeded` and `running`."""
    root = tmp_path / "web"
    starter_document["states"] = ["waiting", "working", "done_ok", "gave_up", "canceled"]
    starter_document["initial"] = "waiting"
    starter_document["terminal"] = ["done_ok", "gave_up", "canceled"]
    starter_document["transitions"] = [
        {"from": "waiting", "to": "working", "actor": "worker"},
        {"from": "waiting", "to": "canceled", "actor": "user"},
        {"from": "working", "to": "done_ok", "actor": "worker"},
        {"from": "working", "to": "gave_up", "actor": "worker"},
    ]
    starter_document["side_effects"] = {}
    (root / "spec").mkdir(parents=True)
    (root / "spec" / "jobs.json").write_text(json.dumps(starter_document))
    args = ["init", "--root", str(root), "--language", "javascript", "--fixture", "spec/jobs.json"]
    args += ["--module", "lib/jobs/status.mjs", "--tests", "test/unit/status.test.mjs"]
    assert main(args) == 0
    text = (root / "test" / "unit" / "status.test.mjs").read_text()
    assert '} from "../../lib/jobs/status.mjs";' in text
    assert 'new URL("../../spec/jobs.json", import.meta.url)' in text
    assert 'applyTransition({ id: "job_1", status: "done_ok" }, "working")' in text


def test_generate_keeps_the_readme_regions_and_the_configured_files(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "README.md").write_text(
        "# Shop\n\n<!-- BEGIN GENERATED: graph-table -->\n<!-- END GENERATED: graph-table -->\n"
    )
    (repo / "pyproject.toml").write_text(
        '[tool.frozen-lifecycle.gate]\ntyped-names = "src/shop/lifecycle.py"\n'
        'sqlite-guards = "db/guards.sql"\n'
    )
    assert main(["generate"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "wrote README.md",
        "wrote db/guards.sql",
        "wrote src/shop/lifecycle.py",
    ]
    assert "| queued | worker claims the job | running | worker | none |" in (
        (repo / "README.md").read_text()
    )
    assert main(["generate"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["gate"]) == 0
    (repo / "db" / "guards.sql").write_text("-- edited\n")
    assert main(["gate"]) == 1
    assert "db/guards.sql:1: generated-drift: differs from what the fixture generates; run " in (
        capsys.readouterr().out
    )


def test_refusals_are_one_message_and_exit_2(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", "--graph", str(tmp_path / "missing.json")]) == 2
    assert (
        capsys.readouterr().err
        == f"frozen-lifecycle graph: no such file: {tmp_path}/missing.json\n"
    )
    broken = tmp_path / "broken.json"
    broken.write_text('{"states": []}')
    assert main(["sql", "--dialect", "sqlite", "--graph", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"frozen-lifecycle sql: {broken}: invalid job status graph:\n  - schema: "
    )
    (repo / "pyproject.toml").write_text("[tool.frozen-lifecycle.gate]\nregion = []\n")
    assert main(["graph"]) == 2
    assert "unknown gate setting(s) region" in capsys.readouterr().err
    with pytest.raises(SystemExit) as raised:
        main(["sql", "--dialect", "oracle"])
    assert raised.value.code == 2
    assert main(["init", "--root", str(tmp_path / "nowhere"), "--language", "python"]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_the_version_is_the_packages(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == f"frozen-lifecycle {__version__}\n"
