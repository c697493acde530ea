"""One composition root: the graph and the settings are built there, once per process."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from reportexport import composition
from tests.helpers import REPO_ROOT, TOOLKIT_SRC

SRC = REPO_ROOT / "src" / "reportexport"
TOOLKIT = TOOLKIT_SRC / "frozen_lifecycle"
GRAPH_BUILDERS = {"load_graph", "parse_graph", "build_graph"}
# Where a graph may be built: in the exporter, the composition root alone; in the toolkit, the
# graph module itself, the seed's lookups for a fixture path, and the commands, which take any
# fixture on purpose (`--graph`, the gate's history check).
GRAPH_PLACES = {
    (SRC, "composition.py", "packaged_graph"),
    (TOOLKIT, "graph.py", "load_graph"),
    (TOOLKIT, "graph.py", "parse_graph"),
    (TOOLKIT, "transitions.py", "load"),
    (TOOLKIT, "cli.py", "_graph"),
    (TOOLKIT, "init.py", "init"),
    (TOOLKIT, "gate/__init__.py", "run"),
    (TOOLKIT, "gate/commits.py", "_matches_fixture"),
}


def uses(path: Path) -> list[tuple[str, str, int]]:
    """(function it is in, name used, line) of every call and attribute use in a module."""
    found = []
    tree = ast.parse(path.read_text())
    for function in [tree, *ast.walk(tree)]:
        if not isinstance(function, ast.Module | ast.FunctionDef):
            continue
        owner = function.name if isinstance(function, ast.FunctionDef) else "<module>"
        body = function.body
        for statement in body:
            if isinstance(statement, ast.FunctionDef | ast.ClassDef):
                continue  # looked at on their own
            for node in ast.walk(statement):
                if isinstance(node, ast.Call):
                    found.append((owner, ast.unparse(node.func), node.lineno))
                elif isinstance(node, ast.Attribute | ast.Name):
                    found.append((owner, ast.unparse(node), getattr(node, "lineno", 0)))
    return found


def test_only_the_composition_root_builds_the_graph_and_the_settings() -> None:
    offenders = []
    for package in (SRC, TOOLKIT):
        for path in sorted(package.rglob("*.py")):
            relative = path.relative_to(package).as_posix()
            for owner, name, line in uses(path):
                builds_graph = name.split(".")[-1] in GRAPH_BUILDERS and "(" not in name
                if builds_graph and (package, relative, owner) not in GRAPH_PLACES:
                    offenders.append(f"{package.name}/{relative}:{line} in {owner}: {name}")
                settings = name in ("Settings", "Settings.load") or name.endswith(".Settings")
                if settings and relative not in ("composition.py", "core/settings.py"):
                    offenders.append(f"{package.name}/{relative}:{line} in {owner}: {name}")
    assert sorted(set(offenders)) == []


def test_a_process_loads_the_graph_once_for_every_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every loader ends in graph.build_graph: counting there counts every graph built."""
    from frozen_lifecycle import graph

    builds = []
    original = graph.build_graph

    def counted(*args: Any, **kwargs: Any) -> Any:
        builds.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(graph, "build_graph", counted)
    settings = composition.load_settings(environ={"REPORTEXPORT_HOME": str(tmp_path)})
    from reportexport.entrypoints.demo import build_demo_database, write_demo_catalog

    build_demo_database(tmp_path / "demo.duckdb", rows=100)
    write_demo_catalog(tmp_path / "catalog.toml")
    with composition.running(settings) as runtime:
        app = runtime.app()
        runtime.worker()
        runtime.effects_runner()
        assert runtime.exports.public_queries()
        assert app.openapi()["components"]["schemas"]["JobOut"]["properties"]["status"]["enum"]
        assert runtime.database.schema.status().current
    assert len(builds) == 1


def test_a_fixture_other_than_the_generated_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers import graph_with_archived

    other, _ = graph_with_archived(tmp_path)
    with pytest.raises(composition.SetupError, match="reportexport generate"):
        composition.packaged_graph(other)
    monkeypatch.setenv("REPORTEXPORT_GRAPH", str(other))  # the `graph` setting, as any other
    with pytest.raises(composition.SetupError, match="reportexport generate"):
        composition.packaged_graph(composition.load_settings().graph)
    monkeypatch.delenv("REPORTEXPORT_GRAPH")
    assert composition.packaged_graph(composition.load_settings().graph).source.endswith(
        "job-status-graph.json"
    )


def test_the_effects_runner_takes_its_links_and_addresses_from_the_settings(
    tmp_path: Path,
) -> None:
    """A webhook's download link lives `link_seconds` and starts at `public_url`, as every
    other link does."""
    from reportexport.entrypoints.demo import build_demo_database, write_demo_catalog

    settings = composition.load_settings(
        environ={
            "REPORTEXPORT_HOME": str(tmp_path),
            "REPORTEXPORT_LINK_SECONDS": "600",
            "REPORTEXPORT_PUBLIC_URL": "https://exports.example.com",
        }
    )
    build_demo_database(tmp_path / "demo.duckdb", rows=10)
    write_demo_catalog(tmp_path / "catalog.toml")
    with composition.running(settings) as runtime:
        context = runtime.effects_runner().context
        assert (context.link_seconds, context.public_url) == (600, "https://exports.example.com")


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, None),
        ({"REPORTEXPORT_SMTP_HOST": "smtp.example.com", "REPORTEXPORT_SMTP_FROM": "r@example.com",
          "REPORTEXPORT_SMTP_PORT": "465", "REPORTEXPORT_SMTP_SECURITY": "tls"},
         ("smtp.example.com", 465, "tls", "r@example.com")),
        ({"REPORTEXPORT_SMTP_HOST": "smtp.example.com", "REPORTEXPORT_SMTP_FROM": "r@example.com",
          "REPORTEXPORT_SMTP_SECURITY": "ssl"}, "smtp_security must be one of"),
        ({"REPORTEXPORT_SMTP_HOST": "smtp.example.com"}, "smtp_from must be an e-mail address"),
    ],
)  # fmt: skip
def test_e_mail_is_sent_as_the_smtp_settings_say_or_not_at_all(
    tmp_path: Path, environ: dict[str, str], expected: Any
) -> None:
    """No `smtp_host`: no e-mail; a security or From address that cannot work stops the
    process at start with what is wrong, never at the first announcement."""
    settings = composition.load_settings(environ={"REPORTEXPORT_HOME": str(tmp_path), **environ})
    runtime = composition.Runtime(settings)
    if isinstance(expected, str):
        with pytest.raises(composition.SetupError, match=expected):
            runtime.smtp_server()
        return
    server = runtime.smtp_server()
    found = None if server is None else (server.host, server.port, server.security, server.sender)
    assert found == expected


def test_an_effects_process_without_a_catalog_announces_and_gives_recipients_up_with_why(
    tmp_path: Path,
) -> None:
    """`reportexport effects` runs without a catalog, as it always did: owners, webhooks and
    chat are announced to; a schedule's recipient, whose access only the catalog can tell, is
    given up with the reason instead of mailed unchecked."""
    from tests.helpers import new_job

    settings = composition.load_settings(environ={"REPORTEXPORT_HOME": str(tmp_path)})
    with composition.running(settings) as runtime:
        runtime.database.schema.upgrade()
        job = runtime.database.jobs.create_job(new_job())[0]
        context = runtime.effects_runner(restart_loops=False).context
        assert context.recipient_refusal is not None
        assert context.owner_refusal is not None  # what goes to an outside address
        said = context.recipient_refusal("bob", job, "bob@example.com")
        withheld = context.owner_refusal(job)
        assert context.schedule_address is not None
    assert said is not None
    assert said.startswith("a recipient's access cannot be checked by this process: no catalog")
    assert withheld is not None
    assert withheld.startswith("the owner's access cannot be checked by this process: no catalog")
