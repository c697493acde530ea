"""What the fixture generates: typed names, README regions and files, their drift and rewrite."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path

import pytest

import reportexport
from frozen_lifecycle.gate.config import load_config
from frozen_lifecycle.generated import (
    Drift,
    GeneratedFile,
    MissingRegionError,
    Region,
    Targets,
    artifact_paths,
    artifacts,
    blank_regions,
    drift,
    region_body,
    splice_region,
)
from frozen_lifecycle.generated import write as write_artifacts
from frozen_lifecycle.graph import Graph, build_graph, load_graph
from frozen_lifecycle.provenance import Provenance
from frozen_lifecycle.render import render_mermaid, render_table
from frozen_lifecycle.typed_names import render_typed_names
from reportexport.store import guards
from reportexport.store.guards import POSTGRES_PATH, PROVENANCE, SQLITE_PATH
from tests.helpers import FIXTURE_PATH, REPO_ROOT

GRAPH = load_graph(FIXTURE_PATH)
TYPED_NAMES_PATH = "src/reportexport/core/lifecycle.py"
# What this repository keeps generated, as its pyproject.toml says.
CONFIG = load_config(REPO_ROOT)
# The checkout the exporter is imported from (under ./scripts/mutate, where REPO_ROOT is a copy
# whose src is the toolkit's, the exporter's files are still there).
EXPORTER_ROOT = Path(str(reportexport.__file__)).parents[2]
ARTIFACTS = artifacts(CONFIG.targets())
REGENERATE = "reportexport generate"


def write(graph: Graph, root: Path) -> list[str]:
    return write_artifacts(graph, root, ARTIFACTS)


def changed_graph() -> Graph:
    """A lifecycle change under test: one more terminal state, reached from queued."""
    document = copy.deepcopy(json.loads(FIXTURE_PATH.read_text(encoding="utf-8")))
    document["states"].append("expired")
    document["terminal"].append("expired")
    document["transitions"].append({"from": "queued", "to": "expired", "actor": "worker"})
    document["side_effects"]["expired"] = ["delete_temp_object"]
    return build_graph(document, source="changed")


def readme(table: str, mermaid: str) -> str:
    return (
        "# Title\n\nProse.\n\n"
        f"<!-- BEGIN GENERATED: graph-table -->\n{table}<!-- END GENERATED: graph-table -->\n\n"
        "More prose.\n\n"
        f"<!-- BEGIN GENERATED: graph-mermaid -->\n{mermaid}<!-- END GENERATED: graph-mermaid -->\n"
    )


def fenced(graph: Graph) -> str:
    return "```mermaid\n" + render_mermaid(graph) + "```\n"


def test_the_committed_typed_names_are_what_the_fixture_generates() -> None:
    committed = (EXPORTER_ROOT / TYPED_NAMES_PATH).read_text(encoding="utf-8")
    assert render_typed_names(GRAPH, provenance=PROVENANCE) == committed


def test_the_configuration_names_what_the_job_store_applies() -> None:
    """The gate regenerates from pyproject.toml what the migrator renders from store.guards:
    the same paths, NOTIFY channel and command, so the committed SQL is what a database gets."""
    targets = CONFIG.targets()
    assert (targets.sqlite_guards, targets.postgresql_guards) == (SQLITE_PATH, POSTGRES_PATH)
    assert targets.typed_names == TYPED_NAMES_PATH
    assert targets.notify_channel == guards.NOTIFY_CHANNEL
    assert targets.provenance == PROVENANCE
    for dialect, path in (("sqlite", SQLITE_PATH), ("postgres", POSTGRES_PATH)):
        committed = (EXPORTER_ROOT / path).read_text(encoding="utf-8")
        assert guards.GRAPH_SQL[dialect](GRAPH) == committed, path


def test_the_postgres_listener_waits_on_the_channel_the_guard_notifies() -> None:
    from reportexport.store import postgres

    assert postgres.NOTIFY_CHANNEL == guards.NOTIFY_CHANNEL
    assert f"pg_notify('{guards.NOTIFY_CHANNEL}', " in guards.postgres_sql(GRAPH)


def test_a_name_of_two_words_is_one_title_in_the_typed_names() -> None:
    """`From<State>By<Actor>` spells each word of a name with a capital, underscores dropped."""
    document = copy.deepcopy(json.loads(FIXTURE_PATH.read_text(encoding="utf-8")))
    document["states"].append("in_review")
    document["terminal"].append("in_review")
    document["transitions"].append({"from": "running", "to": "in_review", "actor": "review_bot"})
    text = render_typed_names(build_graph(document))
    assert '\nFromRunningByReviewBot = Literal["in_review"]\n' in text


def test_another_repository_keeps_the_readme_regions_by_default() -> None:
    """Nothing configured: the README's table and diagram, and no file."""
    assert [(type(a).__name__, a.path) for a in artifacts()] == [
        ("Region", "README.md"),
        ("Region", "README.md"),
    ]
    configured = Targets(regions=("docs/lifecycle.md",), typed_names="src/shop/lifecycle.py")
    assert [a.path for a in artifacts(configured)] == [
        "docs/lifecycle.md",
        "docs/lifecycle.md",
        "src/shop/lifecycle.py",
    ]
    provenance = Provenance(fixture="graph.json", command="make lifecycle")
    (typed,) = [
        a for a in artifacts(Targets(regions=(), typed_names="t.py", provenance=provenance))
    ]
    assert typed.render(GRAPH).startswith(
        '"""The job lifecycle\'s names, typed: generated from graph.json by\n`make lifecycle`.'
    )


def test_typed_names_follow_a_changed_graph() -> None:
    text = render_typed_names(changed_graph())
    assert '    ("queued", "expired", "worker"),\n' in text
    assert '        "expired": ("delete_temp_object",),\n' in text
    assert '        "succeeded": ("write_csv_object", "emit_done_webhook"),\n' in text
    assert 'TerminalStatus = Literal[\n    "succeeded",\n    "failed",\n    "canceled",\n' in text
    assert '    "expired",\n]\nActor = Literal[\n    "worker",\n    "user",\n]\n' in text
    assert f'FINGERPRINT: Final = "{changed_graph().fingerprint}"\n' in text
    assert 'INITIAL: Final[Status] = "queued"\n' in text
    compile(text, TYPED_NAMES_PATH, "exec")
    assert "`frozen-lifecycle generate`" in text  # the toolkit's own command, by default


def test_the_artifacts_are_the_readme_regions_and_three_files() -> None:
    kept = artifacts(CONFIG.targets())  # built here, not at import, so its mutants are seen
    assert [(type(a).__name__, a.path) for a in kept] == [
        ("Region", "README.md"),
        ("Region", "README.md"),
        ("GeneratedFile", SQLITE_PATH),
        ("GeneratedFile", POSTGRES_PATH),
        ("GeneratedFile", TYPED_NAMES_PATH),
    ]
    assert artifact_paths(kept) == {"README.md", SQLITE_PATH, POSTGRES_PATH, TYPED_NAMES_PATH}
    regions = [a for a in kept if isinstance(a, Region)]
    assert [r.name for r in regions] == ["graph-table", "graph-mermaid"]
    assert regions[0].render(GRAPH) == render_table(GRAPH)
    assert regions[1].render(GRAPH) == fenced(GRAPH)
    files = [a for a in kept if isinstance(a, GeneratedFile)]
    assert files[0].render(GRAPH) == guards.sqlite_sql(GRAPH)
    assert files[1].render(GRAPH) == guards.postgres_sql(GRAPH)
    assert files[2].render(GRAPH) == render_typed_names(GRAPH, provenance=PROVENANCE)


def test_a_region_body_is_found_with_the_line_it_starts_on() -> None:
    text = readme("| a |\n", "```mermaid\nx\n```\n")
    assert region_body(text, "graph-table") == ("| a |\n", 6)
    assert region_body(text, "graph-mermaid") == ("```mermaid\nx\n```\n", 12)
    assert region_body(text, "graph-other") is None
    assert region_body("<!-- BEGIN GENERATED: a.b -->\nx<!-- END GENERATED: a-b -->", "a.b") is None


def test_splicing_replaces_one_region_body_and_nothing_else() -> None:
    text = readme("old\n", "old mermaid\n")
    spliced = splice_region(text, "graph-table", "new\n")
    assert spliced == readme("new\n", "old mermaid\n")
    assert splice_region(spliced, "graph-table", "$1 \\g<0>\n") == readme(
        "$1 \\g<0>\n", "old mermaid\n"
    )


def test_splicing_into_a_missing_region_names_the_markers_to_add() -> None:
    with pytest.raises(MissingRegionError) as raised:
        splice_region("no markers here\n", "graph-table", "x")
    assert str(raised.value) == "no region 'graph-table': add its BEGIN and END GENERATED markers"


def test_blank_regions_keeps_what_a_person_wrote() -> None:
    text = (
        readme("table\n", "mermaid\n")
        + "<!-- BEGIN GENERATED: other -->\nkept\n<!-- END GENERATED: other -->\n"
    )
    blank = blank_regions(text)
    assert (
        blank
        == readme("", "") + "<!-- BEGIN GENERATED: other -->\nkept\n<!-- END GENERATED: other -->\n"
    )


def test_write_regenerates_every_artifact_and_names_what_changed(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(readme("stale\n", "stale\n"), encoding="utf-8")
    changed = write(GRAPH, tmp_path)
    assert changed == ["README.md", "README.md", SQLITE_PATH, POSTGRES_PATH, TYPED_NAMES_PATH]
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == readme(
        render_table(GRAPH), fenced(GRAPH)
    )
    written = (tmp_path / TYPED_NAMES_PATH).read_text(encoding="utf-8")
    assert written == render_typed_names(GRAPH, provenance=PROVENANCE)
    assert write(GRAPH, tmp_path) == []
    assert write(changed_graph(), tmp_path) == [
        "README.md",
        "README.md",
        SQLITE_PATH,
        POSTGRES_PATH,
        TYPED_NAMES_PATH,
    ]


def test_write_leaves_a_missing_readme_missing(tmp_path: Path) -> None:
    assert "README.md" not in write(GRAPH, tmp_path)
    assert not (tmp_path / "README.md").exists()


def test_write_leaves_a_readme_without_markers_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Title\n\nNo regions.\n", encoding="utf-8")
    assert write(GRAPH, tmp_path) == [SQLITE_PATH, POSTGRES_PATH, TYPED_NAMES_PATH]
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == "# Title\n\nNo regions.\n"


def test_nothing_drifts_right_after_a_write(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(readme("", ""), encoding="utf-8")
    write(GRAPH, tmp_path)
    assert list(drift(GRAPH, _reader(tmp_path), ARTIFACTS)) == []


def test_each_drift_names_the_file_and_the_first_line_that_differs(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(readme("", ""), encoding="utf-8")
    write(GRAPH, tmp_path)
    typed = tmp_path / TYPED_NAMES_PATH
    lines = typed.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[20] = "# edited by hand\n"
    typed.write_text("".join(lines), encoding="utf-8")
    table = render_table(GRAPH).splitlines(keepends=True)
    table[3] = "| edited |\n"
    (tmp_path / "README.md").write_text(readme("".join(table), fenced(GRAPH)), encoding="utf-8")
    regenerate = f"run `{REGENERATE}`"
    assert list(drift(GRAPH, _reader(tmp_path), ARTIFACTS, command=REGENERATE)) == [
        Drift(
            path="README.md",
            line=6 + 3,
            message=f"region 'graph-table' differs from what the fixture generates; {regenerate}",
        ),
        Drift(
            path=TYPED_NAMES_PATH,
            line=21,
            message=f"differs from what the fixture generates; {regenerate}",
        ),
    ]


def test_a_shorter_file_drifts_where_it_ends(tmp_path: Path) -> None:
    write(GRAPH, tmp_path)
    typed = tmp_path / TYPED_NAMES_PATH
    kept = typed.read_text(encoding="utf-8").splitlines(keepends=True)[:10]
    typed.write_text("".join(kept), encoding="utf-8")
    found = list(drift(GRAPH, _reader(tmp_path), ARTIFACTS))
    assert [(d.path, d.line) for d in found] == [(TYPED_NAMES_PATH, 11)]


def test_missing_files_and_regions_are_not_drift(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("no regions\n", encoding="utf-8")
    assert list(drift(GRAPH, _reader(tmp_path), ARTIFACTS)) == []


def _reader(root: Path) -> Callable[[str], str | None]:
    def read(path: str) -> str | None:
        target = root / path
        return target.read_text(encoding="utf-8") if target.exists() else None

    return read


def test_a_region_in_a_text_that_starts_with_a_blank_line_counts_it() -> None:
    text = "\n<!-- BEGIN GENERATED: graph-table -->\nbody\n<!-- END GENERATED: graph-table -->\n"
    assert region_body(text, "graph-table") == ("body\n", 3)


def test_splicing_replaces_the_first_of_two_regions_of_one_name_only() -> None:
    region = "<!-- BEGIN GENERATED: graph-table -->\n{}<!-- END GENERATED: graph-table -->\n"
    text = region.format("one\n") + region.format("two\n")
    assert splice_region(text, "graph-table", "new\n") == region.format("new\n") + region.format(
        "two\n"
    )


def test_a_missing_readme_does_not_hide_the_drift_of_the_files(tmp_path: Path) -> None:
    write(GRAPH, tmp_path)
    typed = tmp_path / TYPED_NAMES_PATH
    typed.write_text(typed.read_text(encoding="utf-8") + "# appended\n", encoding="utf-8")
    assert not (tmp_path / "README.md").exists()
    found = list(drift(GRAPH, _reader(tmp_path), ARTIFACTS))
    appended_at = len(render_typed_names(GRAPH, provenance=PROVENANCE).splitlines()) + 1
    assert [(d.path, d.line) for d in found] == [(TYPED_NAMES_PATH, appended_at)]


def test_a_readme_without_one_region_still_has_the_others_checked(tmp_path: Path) -> None:
    write(GRAPH, tmp_path)
    mermaid_only = (
        "# Title\n\n<!-- BEGIN GENERATED: graph-mermaid -->\nstale\n"
        "<!-- END GENERATED: graph-mermaid -->\n"
    )
    (tmp_path / "README.md").write_text(mermaid_only, encoding="utf-8")
    typed = tmp_path / TYPED_NAMES_PATH
    typed.write_text("# edited\n" + typed.read_text(encoding="utf-8"), encoding="utf-8")
    found = list(drift(GRAPH, _reader(tmp_path), ARTIFACTS))
    assert [(d.path, d.line) for d in found] == [("README.md", 4), (TYPED_NAMES_PATH, 1)]
