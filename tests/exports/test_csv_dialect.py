"""One dialect: the same rows give the same bytes from DuckDB, PostgreSQL and SQLite."""

from __future__ import annotations

import csv
import gzip
import io
import random
from pathlib import Path
from typing import Any

import pytest

from reportexport.core.catalog import SourceConfig
from reportexport.core.csvformat import CsvOptionError, CsvOptions, render_float, render_value
from reportexport.sources import QUERY_FAILURES, CancelToken, SourceError, open_source
from tests.exports.reader_table import reader_rows
from tests.helpers import TEXTS, typed_rows


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
        "true,2.20,2024-01-02,2024-02-02T13:14:15.250000,2024-03-03T00:30:00.000000+01",
        "false,3.30,2024-01-03,2024-02-03T13:14:15.000000,2024-03-04T00:30:00.500000+01",
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


# A failing query of each kind, and the words a person is shown for it.
FAILURES = [
    ("SELECT no_such_column FROM typed", QUERY_FAILURES["unknown_column"] + " (no_such_column)"),
    ("SELECT * FROM no_such_table", QUERY_FAILURES["unknown_name"] + " (no_such_table)"),
    ("SELEC 1", QUERY_FAILURES["syntax"]),
]


@pytest.mark.parametrize("kind", ["duckdb", "sqlite", "postgres"])
@pytest.mark.parametrize(("sql", "words"), FAILURES, ids=["column", "table", "syntax"])
def test_a_query_error_is_worded_for_people_and_kept_whole_for_operators(
    sources_dir: Path, typed_postgres: str, kind: str, sql: str, words: str
) -> None:
    """A person reads what went wrong in words (and the name it concerns), never the driver's
    own text; that text is the error's `detail`, which operators read in the logs."""
    url = {**urls(sources_dir, typed_postgres), "sqlite": f"sqlite:///{sources_dir / 'typed.db'}"}
    with pytest.raises(SourceError) as raised:
        export(url[kind], sql, CsvOptions())
    shown = str(raised.value)
    assert shown.startswith(words), shown
    assert shown.endswith("operators can see the source's own message in the logs")
    assert raised.value.detail != shown
    assert raised.value.detail in str(raised.value.__cause__)
    for driver_words in ("Binder Error", "Catalog Error", "Parser Error", "no such", "syntax",
                         "does not exist", "near"):  # fmt: skip
        assert driver_words not in shown


def test_postgres_parameters_are_adapted_not_spliced(typed_postgres: str) -> None:
    hostile = "x' OR '1'='1"
    data = export(typed_postgres, "SELECT id FROM typed WHERE t = :t", CsvOptions(), {"t": hostile})
    assert data == b"id\n"


def test_gzip_is_applied_by_the_sink_not_the_source() -> None:
    from reportexport.core.catalog import Limits
    from reportexport.pipeline.export import ObjectSink

    sink_target = Buffer()
    sink = ObjectSink(sink_target, CsvOptions(gzip=True, bom=True), Limits())  # type: ignore[arg-type]
    sink.write(b"a,b\n1,2\n")
    sink.finish()
    assert gzip.decompress(bytes(sink_target.data)) == b"\xef\xbb\xbfa,b\n1,2\n"


@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
def test_a_query_past_its_statement_timeout_ends_as_a_timeout(sources_dir: Path, kind: str) -> None:
    from reportexport.sources import QueryTimeoutError

    # Queries of minutes or more: the timeout fires a thousand times sooner on any machine. A
    # hash of every row leaves DuckDB no shortcut past the rows (a bare count of a range is
    # a fraction of a second per billion).
    if kind == "duckdb":
        url, sql = (
            f"duckdb:///{sources_dir / 'typed.duckdb'}",
            "SELECT count(*) FROM range(100000000000) AS t(i) WHERE hash(i) > 0",
        )
    else:
        url = f"sqlite:///{sources_dir / 'typed.db'}"
        sql = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
               "SELECT count(*) FROM n")  # fmt: skip
    source = open_source(SourceConfig(name="s", url=url, statement_timeout_seconds=0.3))
    with pytest.raises(QueryTimeoutError, match=r"longer than 0\.3 s"):
        source.export(sql, {}, CsvOptions(), Buffer(), CancelToken())


# A query of minutes or more on each source that keeps no rows in memory while it runs.
ENDLESS = {
    "duckdb": "SELECT count(*) AS n FROM range(100000000000) AS t(i) WHERE hash(i) > 0",
    "sqlite": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
    "SELECT count(*) AS n FROM n",
    "postgres": "SELECT 1 AS n FROM pg_sleep(600)",
}


@pytest.mark.parametrize("kind", ["duckdb", "sqlite", "postgres"])
def test_a_cancel_that_comes_before_the_query_runs_still_stops_it(
    sources_dir: Path, typed_postgres: str, kind: str
) -> None:
    """A driver's interrupt reaches only a statement already running: a cancel that lands just
    before the export's query starts (here, before the export is even called) must still stop
    it, as a shutdown's must, instead of leaving a query of minutes to run out."""
    import threading

    url = {**urls(sources_dir, typed_postgres), "sqlite": f"sqlite:///{sources_dir / 'typed.db'}"}
    source = open_source(SourceConfig(name="s", url=url[kind]))
    cancel = CancelToken()
    cancel.cancel("worker_shutdown")
    ended: list[BaseException] = []

    def export() -> None:
        try:
            source.export(ENDLESS[kind], {}, CsvOptions(), Buffer(), cancel)
        except BaseException as exc:  # what the worker would see
            ended.append(exc)

    running = threading.Thread(target=export, daemon=True)  # not waited for if it never ends
    running.start()
    running.join(timeout=120)  # minutes of work if nothing stops it; stopped, well under 1 s
    assert not running.is_alive(), "the cancel did not stop the query"
    assert [type(exc).__name__ for exc in ended] == ["ExportCanceledError"]
    assert str(ended[0]) == "worker_shutdown"


# -- dialect 2: what the reader matrix asked for ---------------------------------------------

READER_OPTIONS = [
    CsvOptions(),
    CsvOptions(delimiter=";", line_ending="crlf", time_zone="Europe/Paris"),
    CsvOptions(null_marker="\\N"),
    CsvOptions(null_marker="NULL", spreadsheet_safe=False),
    CsvOptions(timestamp_precision=0),
    CsvOptions(timestamp_precision=3, time_zone="Asia/Kolkata"),
]


@pytest.mark.parametrize("options", READER_OPTIONS, ids=lambda o: str(o.to_json()))
def test_the_reader_table_gives_the_same_bytes_from_duckdb_and_postgres(
    sources_dir: Path, typed_postgres: str, options: CsvOptions
) -> None:
    sql = "SELECT * FROM readers ORDER BY id"
    outputs = {
        name: export(url, sql, options) for name, url in urls(sources_dir, typed_postgres).items()
    }
    assert outputs["duckdb"] == outputs["postgres"]


def test_a_timestamp_column_has_one_precision_from_its_type(sources_dir: Path) -> None:
    data = export(
        f"duckdb:///{sources_dir / 'typed.duckdb'}",
        "SELECT ts, ts_ms, CAST(ts AS TIMESTAMP_S) AS ts_s FROM readers "
        "WHERE id IN (1, 2) ORDER BY id",
        CsvOptions(),
    )
    assert data.decode().splitlines() == [
        "ts,ts_ms,ts_s",
        "2024-02-01T13:14:15.000000,2024-02-01T08:00:01.125,2024-02-01T13:14:15",
        "2024-02-02T13:14:15.250000,2024-02-02T08:00:01.125,2024-02-02T13:14:15",
    ]


@pytest.mark.parametrize(("precision", "cell"), [(0, "13:14:15"), (3, "13:14:15.250")])
def test_the_catalog_sets_the_precision_of_every_timestamp_column(
    sources_dir: Path, typed_postgres: str, precision: int, cell: str
) -> None:
    for url in urls(sources_dir, typed_postgres).values():
        data = export(
            url,
            "SELECT ts, ts_ms FROM readers WHERE id = 2",
            CsvOptions(timestamp_precision=precision),
        )
        ts, ts_ms = data.decode().splitlines()[1].split(",")
        assert ts == f"2024-02-02T{cell}"
        assert ts_ms == "2024-02-02T08:00:01" + (".125" if precision else "")


def test_infinite_timestamps_are_written_as_infinity(
    sources_dir: Path, typed_postgres: str
) -> None:
    sql = (
        "SELECT CAST('infinity' AS TIMESTAMP) AS a, CAST('-infinity' AS TIMESTAMP) AS b, "
        "CAST('infinity' AS TIMESTAMPTZ) AS c, CAST('-infinity' AS TIMESTAMPTZ) AS d"
    )
    for url in urls(sources_dir, typed_postgres).values():
        assert export(url, sql, CsvOptions()) == b"a,b,c,d\ninfinity,-infinity,infinity,-infinity\n"


def test_an_old_local_mean_time_keeps_the_seconds_of_its_offset(
    sources_dir: Path, typed_postgres: str
) -> None:
    sql = "SELECT CAST('1900-01-01 10:00:00+00' AS TIMESTAMPTZ) AS at"
    expected = b"at\n1900-01-01T15:21:10.000000+05:21:10\n"
    for url in urls(sources_dir, typed_postgres).values():
        assert export(url, sql, CsvOptions(time_zone="Asia/Kolkata")) == expected


def float_samples() -> list[float]:
    """Doubles where text forms differ: whole numbers, the 1e15..1e16 band, tiny and huge."""
    rng = random.Random(16)
    samples = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        100.0,
        0.1,
        0.5,
        1e15,
        -1e15,
        1e16,
        1e17,
        1.5e-7,
        1e-4,
        1e-5,
        123456789.125,
        1 / 3,
        2.5e-300,
        5e-324,
        1.7976931348623157e308,
        9007199254740993.0,
        1234567890123456.7,
        -1234567890123456.7,
        999999999999999.9,
    ]
    samples += [rng.uniform(-1, 1) * 10.0 ** rng.randint(-20, 20) for _ in range(300)]
    samples += [float(rng.randint(-(10**17), 10**17)) for _ in range(100)]
    samples += [float(rng.randint(-(10**6), 10**6)) for _ in range(50)]
    return samples


def values_query(values: list[str], sql_type: str) -> str:
    rows = ", ".join(f"({i}, CAST('{v}' AS {sql_type}))" for i, v in enumerate(values))
    return f"SELECT f FROM (VALUES {rows}) AS v(i, f) ORDER BY i"


def test_floats_are_python_shortest_text_from_every_source(
    sources_dir: Path, typed_postgres: str
) -> None:
    samples = float_samples()
    expected = [render_float(f) for f in samples] + ["NaN", "inf", "-inf"]
    query = values_query(
        [repr(f) for f in samples] + ["NaN", "Infinity", "-Infinity"], "DOUBLE PRECISION"
    )
    for url in urls(sources_dir, typed_postgres).values():
        written = export(url, query, CsvOptions()).decode().splitlines()[1:]
        for value, text, wanted in zip(samples, written, expected, strict=False):
            if abs(value) >= 1e16:
                # PostgreSQL may spend a 17th digit on whole doubles this large: same double.
                assert float(text) == value, (text, wanted)
            else:
                assert text == wanted
        assert written[-3:] == ["NaN", "inf", "-inf"]
    rows = ", ".join(f"({i}, {f!r})" for i, f in enumerate(samples))
    lite = export(
        f"sqlite:///{sources_dir / 'typed.db'}",
        f"SELECT column2 AS f FROM (VALUES {rows}) ORDER BY column1",
        CsvOptions(),
    )
    assert lite.decode().splitlines()[1:] == expected[:-3]


def test_reals_are_written_alike_by_duckdb_and_postgres(
    sources_dir: Path, typed_postgres: str
) -> None:
    reals = [
        "0.1",
        "1",
        "123456.0",
        "1234567",
        "123456789.125",
        "16777216",
        "3.4e38",
        "1e-5",
        "-0.25",
        "1.17549435e-38",
        "7654321.5",
        "NaN",
        "Infinity",
    ]
    outputs = [
        export(url, values_query(reals, "REAL"), CsvOptions())
        for url in urls(sources_dir, typed_postgres).values()
    ]
    assert outputs[0] == outputs[1]
    assert outputs[0].decode().splitlines()[1:5] == ["0.1", "1.0", "123456.0", "1234567.0"]


@pytest.mark.parametrize("marker", ["\\N", "NULL"])
def test_a_null_marker_keeps_null_empty_text_and_text_equal_to_the_marker_apart(
    sources_dir: Path, typed_postgres: str, marker: str
) -> None:
    sql = (
        "SELECT id, t FROM readers WHERE t IN ('', 'Null', 'NULL', '\\N') OR t IS NULL ORDER BY id"
    )
    options = CsvOptions(null_marker=marker)
    written = {"": "", "Null": "Null", "NULL": "NULL", "\\N": "\\N", None: marker}
    written[marker] = f'"{marker}"'
    rows = [(r[0], r[10]) for r in reader_rows() if r[10] in written]
    expected = "id,t\n" + "".join(f"{i},{written[t]}\n" for i, t in rows)
    for url in urls(sources_dir, typed_postgres).values():
        assert export(url, sql, options).decode() == expected
    assert f'"{marker}"' in expected
    assert f",{marker}\n" in expected


def test_sqlite_writes_the_null_marker_as_the_databases_do(
    sources_dir: Path, typed_postgres: str
) -> None:
    sql = "SELECT id, t FROM typed ORDER BY id"
    options = CsvOptions(null_marker="\\N")
    lite = export(f"sqlite:///{sources_dir / 'typed.db'}", sql, options)
    assert lite == export(typed_postgres, sql, options)
    assert b"7,\n8,\\N\n" in lite


def test_sqlite_reads_column_types_from_the_values(sources_dir: Path) -> None:
    source = open_source(SourceConfig(name="s", url=f"sqlite:///{sources_dir / 'typed.db'}"))
    exported = source.export(
        "SELECT id, t, id * 0.5 AS half, NULL AS unknown, "
        "CASE WHEN id > 3 THEN id ELSE 'x' END AS mixed FROM typed",
        {},
        CsvOptions(),
        Buffer(),
        CancelToken(),
    )
    assert [c.type_name for c in exported.columns] == ["integer", "text", "float", "text", "text"]


def test_each_source_reports_the_types_it_wrote(sources_dir: Path, typed_postgres: str) -> None:
    expected = [
        "integer",
        "integer",
        "decimal(10,2)",
        "float",
        "float",
        "boolean",
        "date",
        "timestamp(6)",
        "timestamp(3)",
        "timestamptz(6)",
        "text",
        "text",
    ]
    for url in urls(sources_dir, typed_postgres).values():
        source = open_source(SourceConfig(name="s", url=url))
        exported = source.export("SELECT * FROM readers", {}, CsvOptions(), Buffer(), CancelToken())
        assert [c.type_name for c in exported.columns] == expected
        exported = source.export(
            "SELECT ts, tstz FROM readers",
            {},
            CsvOptions(timestamp_precision=0),
            Buffer(),
            CancelToken(),
        )
        assert [c.type_name for c in exported.columns] == ["timestamp(0)", "timestamptz(0)"]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("null_marker", "a b"),
        ("null_marker", 'x"'),
        ("null_marker", "=1"),
        ("null_marker", "nan"),
        ("null_marker", "x" * 17),
        ("timestamp_precision", 9),
        ("timestamp_precision", True),
    ],
)
def test_options_the_dialect_cannot_write_are_refused(option: str, value: Any) -> None:
    with pytest.raises(CsvOptionError, match=option):
        CsvOptions(**{option: value})


def test_new_options_leave_the_content_hash_of_other_queries_alone() -> None:
    assert set(CsvOptions().to_json()) == {
        "delimiter",
        "line_ending",
        "bom",
        "gzip",
        "time_zone",
        "spreadsheet_safe",
    }
    marked = CsvOptions(null_marker="\\N", timestamp_precision=3)
    assert CsvOptions(**marked.to_json()) == marked


def test_duckdb_types_carry_their_digits(sources_dir: Path) -> None:
    source = open_source(SourceConfig(name="s", url=f"duckdb:///{sources_dir / 'typed.duckdb'}"))
    sink = Buffer()
    sql = (
        "SELECT CAST('2024-01-01 10:00:00.123456789' AS TIMESTAMP_NS) AS ns, "
        "CAST(1 AS HUGEINT) AS huge, CAST(1.5 AS REAL) AS r, CAST(2 AS DECIMAL(4,1)) AS d, "
        "CAST('2024-01-01 10:00:00' AS TIMESTAMP_S) AS s, CAST('10:00' AS TIME) AS clock"
    )
    exported = source.export(sql, {}, CsvOptions(), sink, CancelToken())
    assert [c.type_name for c in exported.columns] == [
        "timestamp(9)", "integer", "float", "decimal(4,1)", "timestamp(0)", "text"
    ]  # fmt: skip
    assert bytes(sink.data).splitlines()[1] == (
        b"2024-01-01T10:00:00.123456789,1,1.5,2.0,2024-01-01T10:00:00,10:00:00"
    )


def test_postgres_types_carry_their_typmods(typed_postgres: str) -> None:
    source = open_source(SourceConfig(name="s", url=typed_postgres))
    sink = Buffer()
    sql = (
        "SELECT CAST(1.50 AS numeric) AS n, CAST(1.5 AS real) AS r, "
        "CAST('2024-01-01 10:00:00.7' AS timestamp(0)) AS s, "
        "CAST('2024-01-01 10:00:00.125+00' AS timestamptz(2)) AS z, CAST(1 AS smallint) AS i"
    )
    exported = source.export(sql, {}, CsvOptions(), sink, CancelToken())
    assert [c.type_name for c in exported.columns] == [
        "decimal", "float", "timestamp(0)", "timestamptz(2)", "integer"
    ]  # fmt: skip
    assert (
        bytes(sink.data).splitlines()[1]
        == b"1.50,1.5,2024-01-01T10:00:01,2024-01-01T10:00:00.13+00,1"
    )
