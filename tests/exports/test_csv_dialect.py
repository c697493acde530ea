"""One dialect: the same rows give the same bytes from DuckDB, PostgreSQL and SQLite."""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path
from typing import Any

import pytest

from reportexport.catalog import SourceConfig
from reportexport.csvformat import CsvOptions, render_value
from reportexport.sources import CancelToken, open_source
from tests.exports.conftest import TEXTS, typed_rows


class Buffer:
    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data


def export(url: str, sql: str, options: CsvOptions, params: dict[str, Any] | None = None) -> bytes:
    source = open_source(SourceConfig(name="s", url=url))
    sink = Buffer()
    source.export(sql, params or {}, options, sink, CancelToken())
    return bytes(sink.data)


def urls(sources_dir: Path, typed_postgres: str) -> dict[str, str]:
    return {
        "duckdb": f"duckdb:///{sources_dir / 'typed.duckdb'}",
        "postgres": typed_postgres,
    }


OPTIONS = [
    CsvOptions(),
    CsvOptions(delimiter=";"),
    CsvOptions(delimiter="tab"),
    CsvOptions(line_ending="crlf"),
    CsvOptions(spreadsheet_safe=False),
    CsvOptions(time_zone="Asia/Kolkata"),
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: str(o.to_json()))
def test_duckdb_and_postgres_write_the_same_bytes(
    sources_dir: Path, typed_postgres: str, options: CsvOptions
) -> None:
    sql = "SELECT * FROM typed ORDER BY id"
    outputs = {
        name: export(url, sql, options) for name, url in urls(sources_dir, typed_postgres).items()
    }
    assert outputs["duckdb"] == outputs["postgres"]


def test_sqlite_writes_the_same_bytes_for_text_and_integers(
    sources_dir: Path, typed_postgres: str
) -> None:
    sql = "SELECT id, t FROM typed ORDER BY id"
    for options in (CsvOptions(), CsvOptions(line_ending="crlf", delimiter=";")):
        lite = export(f"sqlite:///{sources_dir / 'typed.db'}", sql, options)
        assert lite == export(f"duckdb:///{sources_dir / 'typed.duckdb'}", sql, options)
        assert lite == export(typed_postgres, sql, options)


def test_the_csv_parses_back_to_the_rows(sources_dir: Path) -> None:
    data = export(f"duckdb:///{sources_dir / 'typed.duckdb'}", "SELECT * FROM typed ORDER BY id",
                  CsvOptions(spreadsheet_safe=False))  # fmt: skip
    parsed = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    assert parsed[0] == ["id", "t", "d", "f", "b", "day", "ts", "tstz"]
    options = CsvOptions(spreadsheet_safe=False)
    expected = [[render_value(v, options) or "" for v in row] for row in typed_rows()]
    assert parsed[1:] == expected


def test_null_is_an_empty_field_and_an_empty_string_is_quoted(sources_dir: Path) -> None:
    sql = "SELECT id, t FROM typed WHERE t = '' OR t IS NULL ORDER BY id"
    data = export(f"duckdb:///{sources_dir / 'typed.duckdb'}", sql, CsvOptions())
    assert data == b'id,t\n7,""\n8,\n'


def test_values_look_as_the_dialect_says(sources_dir: Path) -> None:
    data = export(f"duckdb:///{sources_dir / 'typed.duckdb'}",
                  "SELECT b, d, day, ts, tstz FROM typed WHERE id IN (2, 3) ORDER BY id",
                  CsvOptions(time_zone="Europe/Paris"))  # fmt: skip
    assert data.decode().splitlines() == [
        "b,d,day,ts,tstz",
        "true,2.20,2024-01-02,2024-02-02T13:14:15.25,2024-03-03T00:30:00+01",
        "false,3.30,2024-01-03,2024-02-03T13:14:15,2024-03-04T00:30:00.5+01",
    ]


@pytest.mark.parametrize("text", ["=1+1", "+x", "-x", "@x", "\tx", "\rx", "\nx", "  =x"])
@pytest.mark.parametrize("safe", [True, False])
def test_spreadsheet_safety_per_trigger_character(
    sources_dir: Path, typed_postgres: str, text: str, safe: bool
) -> None:
    index = TEXTS.index(text) + 1
    for url in urls(sources_dir, typed_postgres).values():
        data = export(url, f"SELECT t, id FROM typed WHERE id = {index}",
                      CsvOptions(spreadsheet_safe=safe))  # fmt: skip
        (row,) = list(csv.reader(io.StringIO(data.decode(), newline="")))[1:]
        assert row == [("'" + text) if safe else text, str(index)]


def test_numbers_are_never_prefixed(sources_dir: Path) -> None:
    data = export(f"duckdb:///{sources_dir / 'typed.duckdb'}",
                  "SELECT -d AS d, -f AS f FROM typed WHERE id = 3", CsvOptions())  # fmt: skip
    assert data == b"d,f\n-3.30,-1e+20\n"


def test_crlf_ends_records_but_keeps_newlines_inside_values(sources_dir: Path) -> None:
    data = export(f"duckdb:///{sources_dir / 'typed.duckdb'}",
                  "SELECT t FROM typed WHERE id = 4", CsvOptions(line_ending="crlf"))  # fmt: skip
    assert data == b't\r\n"line\nbreak"\r\n'


def test_a_query_error_is_a_source_error_with_the_databases_message(sources_dir: Path) -> None:
    from reportexport.sources import SourceError

    with pytest.raises(SourceError, match="no_such_column"):
        export(f"duckdb:///{sources_dir / 'typed.duckdb'}", "SELECT no_such_column FROM typed",
               CsvOptions())  # fmt: skip


def test_postgres_parameters_are_adapted_not_spliced(typed_postgres: str) -> None:
    hostile = "x' OR '1'='1"
    data = export(typed_postgres, "SELECT id FROM typed WHERE t = :t", CsvOptions(), {"t": hostile})
    assert data == b"id\n"


def test_gzip_is_applied_by_the_sink_not_the_source() -> None:
    from reportexport.catalog import Limits
    from reportexport.exports import ObjectSink

    sink_target = Buffer()
    sink = ObjectSink(sink_target, CsvOptions(gzip=True, bom=True), Limits())  # type: ignore[arg-type]
    sink.write(b"a,b\n1,2\n")
    sink.finish()
    assert gzip.decompress(bytes(sink_target.data)) == b"\xef\xbb\xbfa,b\n1,2\n"


@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
def test_a_query_past_its_statement_timeout_ends_as_a_timeout(sources_dir: Path, kind: str) -> None:
    from reportexport.sources import QueryTimeoutError

    if kind == "duckdb":
        url, sql = (
            f"duckdb:///{sources_dir / 'typed.duckdb'}",
            "SELECT count(*) FROM range(100000000000)",
        )
    else:
        url = f"sqlite:///{sources_dir / 'typed.db'}"
        sql = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
               "SELECT count(*) FROM n")  # fmt: skip
    source = open_source(SourceConfig(name="s", url=url, statement_timeout_seconds=0.3))
    with pytest.raises(QueryTimeoutError, match=r"longer than 0\.3 s"):
        source.export(sql, {}, CsvOptions(), Buffer(), CancelToken())
