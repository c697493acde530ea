"""The catalog file: the demo catalog loads, and each mistake is named with its place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reportexport.core.catalog import CatalogError, load_catalog
from reportexport.entrypoints.demo import DEMO_CATALOG

BASE = """
version = 1
[sources.db]
url = "duckdb:///x.duckdb"
[queries.q]
source = "db"
sql = "SELECT * FROM t WHERE d = :d"
parameters.d = { type = "date" }
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "catalog.toml"
    path.write_text(text)
    return path


def test_the_demo_catalog_loads(tmp_path: Path) -> None:
    catalog = load_catalog(write(tmp_path, DEMO_CATALOG))
    assert "orders_by_day" in catalog.queries
    assert catalog.sources["demo"].url == f"duckdb:///{(tmp_path / 'demo.duckdb').resolve()}"
    excel = catalog.queries["customers_by_country"].csv
    assert (excel.delimiter, excel.bom, excel.line_ending) == (";", True, "crlf")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.replace('source = "db"', 'source = "nope"'), "queries.q.source: 'nope'"),
        (lambda t: t.replace(":d", ":e"), "queries.q.sql: :e is not declared"),
        (lambda t: t + 'parameters.unused = { type = "integer" }\n', "parameters.unused: not used"),
        (lambda t: t.replace('"date"', '"datetime"'), "parameters.d.type: one of"),
        (lambda t: t.replace('type = "date"', 'type = "enum"'), "an enum needs its choices"),
        (lambda t: t.replace('type = "date"', 'type = "date", default = "x"'), "parameters.d"),
        (lambda t: t + 'csv = { delimiter = "|" }\n', "queries.q.csv: delimiter must be"),
        (lambda t: t + "limits = { max_rowz = 1 }\n", "queries.q.limits"),
        (lambda t: t.replace("version = 1", "version = 2"), "version must be 1"),
        (lambda t: t.replace("duckdb:///", "mysql://"), "sources.db.url"),
        (lambda t: t + "colour = 1\n", "queries.q: unknown key(s) colour"),
    ],
)
def test_each_mistake_is_named_with_its_place(tmp_path: Path, change: object, message: str) -> None:
    with pytest.raises(CatalogError) as raised:
        load_catalog(write(tmp_path, change(BASE)))  # type: ignore[operator]
    assert message in str(raised.value)


def test_the_content_hash_follows_what_decides_the_export(tmp_path: Path) -> None:
    first = load_catalog(write(tmp_path, BASE)).queries["q"].content_hash
    retitled = load_catalog(write(tmp_path, BASE + 'title = "New title"\n')).queries["q"]
    edited = load_catalog(write(tmp_path, BASE.replace("SELECT *", "SELECT d"))).queries["q"]
    assert retitled.content_hash == first
    assert edited.content_hash != first


def check(catalog: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reportexport", "queries", "check", "--catalog", str(catalog)],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.slow
def test_queries_check_describes_each_query_against_its_source(tmp_path: Path) -> None:
    import duckdb

    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        con.execute("CREATE TABLE t (d DATE, n INTEGER)")
    ok = check(write(tmp_path, BASE))
    assert ok.returncode == 0, ok.stderr
    assert "1 saved queries, 1 sources; each described by its source" in ok.stdout

    cannot_run = check(write(tmp_path, BASE.replace("SELECT *", "SELECT no_such_column")))
    assert cannot_run.returncode == 1
    catalog = tmp_path / "catalog.toml"
    assert f"{catalog}:5: queries.q.sql: " in cannot_run.stderr  # the [queries.q] line
    assert "no_such_column" in cannot_run.stderr

    mistyped = check(write(tmp_path, BASE.replace("WHERE d = :d", "WHERE upper(:d) = 'X'")))
    assert mistyped.returncode == 1, mistyped.stdout  # upper() of a date: bound as one, not NULL
    assert f"{catalog}:5: queries.q.sql: " in mistyped.stderr

    undeclared = check(write(tmp_path, BASE.replace(":d", ":e")))
    assert undeclared.returncode == 2
    assert f"{catalog}:5: queries.q.sql: :e is not declared" in undeclared.stderr
