"""The catalog file: the demo catalog loads, and each mistake is named with its place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reportexport.catalog import CatalogError, load_catalog
from reportexport.demo import DEMO_CATALOG

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


def test_queries_check_command(tmp_path: Path) -> None:
    good = write(tmp_path, BASE)
    ok = subprocess.run(
        [sys.executable, "-m", "reportexport", "queries", "check", "--catalog", str(good)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    bad = write(tmp_path, BASE.replace(":d", ":e"))
    failed = subprocess.run(
        [sys.executable, "-m", "reportexport", "queries", "check", "--catalog", str(bad)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert failed.returncode == 1
    assert ":e is not declared" in failed.stderr
