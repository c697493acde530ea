"""The reader matrix: one export read back by the readers people use, with the docs' recipes.

The export holds every column type the dialect covers (tests/exports/reader_table.py); a worker
writes it with the default options, the Excel-style options and two NULL markers (one without
spreadsheet safety), and the job's schema is written next to it. Each reader runs its recipe
from docs/how-to/read-exports.md ("Read an export back") exactly as printed there, and every cell
it gets is compared, type and value, with what the page promises, including what it says a reader
still loses.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from reportexport.core.catalog import Catalog
from reportexport.core.csvformat import CsvOptions, render_timestamp, render_value
from reportexport.core.csvschema import file_schema
from reportexport.objects import open_object_store
from reportexport.pipeline.export import new_export
from reportexport.runners.worker import Worker, WorkerSettings
from reportexport.store import Database, open_database
from tests.exports.reader_table import KINDS, NAMES, reader_rows
from tests.exports.readers import (
    CSV_NAME,
    NULL,
    SCHEMA_NAME,
    Cell,
    Table,
    differences,
    read_back,
    require_libreoffice,
)
from tests.helpers import GRAPH, catalog_for

VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "excel": {"delimiter": ";", "bom": True, "line_ending": "crlf", "time_zone": "Europe/Paris"},
    "marker": {"null_marker": "\\N"},
    "null-word": {"null_marker": "NULL", "spreadsheet_safe": False},
}
READERS = ["pandas", "polars", "duckdb", "pyarrow", "libreoffice", "csv"]
TYPED_READERS = ["pandas", "polars", "duckdb", "pyarrow"]
DIGITS = {"ts": 6, "ts_ms": 3, "tstz": 6}


@pytest.fixture(scope="module")
def exports(sources_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each variant's CSV and schema, written by a worker, in a folder of its own."""
    home = tmp_path_factory.mktemp("reader-matrix")
    queries = {
        f"readers_{name.replace('-', '_')}": {
            "source": "typed_duckdb",
            "sql": "SELECT * FROM readers ORDER BY id",
            "csv": options,
        }
        for name, options in VARIANTS.items()
    }
    catalog: Catalog = catalog_for(sources_dir, None, queries)
    db: Database = open_database(f"sqlite:///{home / 'jobs.db'}", GRAPH, check=False)
    db.schema.upgrade()
    objects = open_object_store(f"file://{home / 'objects'}", link_secret=b"secret")
    jobs = {
        name: db.jobs.create_job(new_export(catalog.queries[query], {}, owner="alice"))[0].id
        for name, query in zip(VARIANTS, queries, strict=True)
    }
    worker = Worker(db, catalog, objects, WorkerSettings(concurrency=2, poll_seconds=0.1))
    worker.start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(
            db.jobs.get_job(job_id).job.finished_at is None for job_id in jobs.values()
        ):
            time.sleep(0.05)
    finally:
        worker.stop(grace_seconds=0)
    folders = {}
    for name, job_id in jobs.items():
        job = db.jobs.get_job(job_id).job
        assert job.status == "succeeded", job.error_message
        folder = home / name
        folder.mkdir()
        with objects.read(str(job.object_key)) as source:
            (folder / CSV_NAME).write_bytes(source.read())
        (folder / SCHEMA_NAME).write_text(json.dumps(file_schema(job)), encoding="utf-8")
        folders[name] = folder
    db.close()
    return folders


@pytest.fixture(scope="module")
def office_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A LibreOffice profile of the tests' own, so that no running office takes the job."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(tmp_path_factory.mktemp("office-home")))
        yield


@pytest.fixture(scope="module")
def readings(exports: dict[str, Path], office_home: None) -> Any:
    """What each reader gets from each variant, read once."""
    cache: dict[tuple[str, str], Table] = {}

    def reading(reader: str, variant: str) -> Table:
        if reader == "libreoffice":
            require_libreoffice()
        if (reader, variant) not in cache:
            cache[reader, variant] = read_back(reader, exports[variant])
        return cache[reader, variant]

    return reading


# -- what the docs promise, cell by cell -----------------------------------------------------


def written(name: str, value: Any, options: CsvOptions) -> str | None:
    """The text the dialect writes for a value; None for NULL."""
    if value is None:
        return None
    if KINDS[name] == "timestamptz":
        return render_timestamp(value.astimezone(ZoneInfo(options.time_zone)), DIGITS[name])
    if KINDS[name] == "timestamp":
        return render_timestamp(value, DIGITS[name])
    return render_value(value, options)


def typed_reader_cell(reader: str, name: str, value: Any, options: CsvOptions) -> Cell:
    """pandas, polars, DuckDB and pyarrow with their recipes."""
    kind, marker = KINDS[name], options.null_marker
    if value is None:
        return NULL
    if kind == "decimal":
        return ("float", float(value))  # every one of them makes a decimal a float
    if kind == "float" and math.isnan(value):
        return NULL if reader == "pandas" else ("nan",)
    if kind == "date" and reader == "pandas":
        return ("datetime", datetime(value.year, value.month, value.day))
    if kind == "timestamptz":
        return ("instant", value)
    if kind == "text":
        text = written(name, value, options)
        if reader == "pandas" and text == marker:  # "" without a marker, or the marker itself
            return NULL
        if reader == "polars" and marker and text == marker:
            return NULL
        return ("text", text)
    tags = {"integer": "int", "float": "float", "boolean": "bool", "date": "date"}
    return (tags.get(kind, "datetime"), value)


def spreadsheet_cell(name: str, value: Any, options: CsvOptions) -> Cell:
    """LibreOffice Calc with its recipe's import options."""
    kind, text = KINDS[name], written(name, value, options)
    if text is None:
        return ("text", options.null_marker) if options.null_marker else NULL
    if kind in ("integer", "decimal"):
        return ("number", float(f"{float(value):.15g}"))  # a spreadsheet keeps 15 digits
    if kind == "float":
        return ("number", value) if math.isfinite(value) else ("text", text)
    if kind == "boolean":
        return ("bool", value)
    if kind == "date":
        return ("datetime", datetime(value.year, value.month, value.day))
    if kind == "timestamp":
        return ("datetime", value)
    if not text:
        return NULL
    # Zoned timestamps are text too: a sheet has no offsets. Line breaks in a cell are LF.
    return ("text", text.replace("\r\n", "\n").replace("\r", "\n"))


def expected_table(reader: str, options: CsvOptions) -> Table:
    rows = []
    for row in reader_rows():
        cells = []
        for name, value in zip(NAMES, row, strict=True):
            if reader == "csv":
                text = written(name, value, options)
                cells.append(("text", options.null_marker if text is None else text))
            elif reader == "libreoffice":
                cells.append(spreadsheet_cell(name, value, options))
            else:
                cells.append(typed_reader_cell(reader, name, value, options))
        rows.append(cells)
    return Table(list(NAMES), rows)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("reader", READERS)
def test_a_reader_gets_every_cell_the_readme_promises(
    readings: Any, reader: str, variant: str
) -> None:
    got = readings(reader, variant)
    problems = list(differences(expected_table(reader, CsvOptions(**VARIANTS[variant])), got))
    assert not problems, f"{reader} reading the {variant} export:\n" + "\n".join(problems[:40])


# -- the promises one by one, so that a failure names the one broken ---------------------------


def column(got: Table, name: str) -> list[Cell]:
    index = got.names.index(name)
    return [row[index] for row in got.rows]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("reader", TYPED_READERS)
def test_every_timestamp_column_is_read_as_a_datetime(
    readings: Any, reader: str, variant: str
) -> None:
    got = readings(reader, variant)
    for name, wanted in (("ts", "datetime"), ("ts_ms", "datetime"), ("tstz", "instant")):
        assert {c[0] for c in column(got, name)} - {"null"} == {wanted}, (reader, name)


APART = [("polars", "default"), ("duckdb", "default"), ("pyarrow", "default")]


@pytest.mark.parametrize(
    ("reader", "variant"), [*APART, *((reader, "marker") for reader in TYPED_READERS)]
)
def test_null_and_empty_text_stay_apart(readings: Any, reader: str, variant: str) -> None:
    texts = [row[10] for row in reader_rows()]
    by_text = dict(zip(texts, column(readings(reader, variant), "t"), strict=True))
    assert by_text[None] == NULL
    assert by_text[""] == ("text", "")
    assert by_text["Null"] == ("text", "Null")  # a surname is never NULL
    assert by_text["NULL"] == ("text", "NULL")


@pytest.mark.parametrize("reader", [*TYPED_READERS, "libreoffice"])
def test_text_columns_stay_text(readings: Any, reader: str) -> None:
    codes = {c for c in column(readings(reader, "excel"), "code") if c != NULL}
    assert ("text", "007") in codes
    assert {kind for kind, *_ in codes} == {"text"}


def test_the_marker_shows_null_in_a_spreadsheet_where_an_empty_cell_hides_it(
    readings: Any,
) -> None:
    texts = [r[10] for r in reader_rows()]
    plain = dict(zip(texts, column(readings("libreoffice", "default"), "t"), strict=True))
    marked = dict(zip(texts, column(readings("libreoffice", "marker"), "t"), strict=True))
    assert plain[None] == plain[""] == NULL
    assert (marked[None], marked[""]) == (("text", "\\N"), NULL)
