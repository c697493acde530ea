"""The dialect's pure parts: options, column types, the projection's SQL and Python's renderer.

What the projections write is proven against DuckDB and PostgreSQL in test_csv_dialect.py;
here the SQL text itself is pinned (csv_projections.sql), so no database is needed.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from reportexport.core.csvformat import (
    Column,
    CsvOptionError,
    CsvOptions,
    as_written,
    check_columns,
    duckdb_timestamp_format,
    format_header,
    format_row,
    needs_safety,
    projection,
    quote_field,
    quote_identifier,
    render_float,
    render_timestamp,
    render_value,
)

PROJECTIONS = Path(__file__).with_name("csv_projections.sql")
COLUMNS = [
    Column("i", "integer"),
    Column("d", "decimal", 10, 2),
    Column("day", "date"),
    Column("b", "boolean"),
    Column("f", "float"),
    Column("r", "float", 24),
    Column("t", "timestamp", 3),
    Column("t0", "timestamp", 0),
    Column("tz", "timestamptz"),
    Column("s", "text"),
    Column("u", "uuid"),
    Column('say "hi"', "text"),
]
VARIANTS = {
    "default": CsvOptions(),
    "unsafe, precision 0": CsvOptions(spreadsheet_safe=False, timestamp_precision=0),
}


def pinned_projections() -> dict[str, list[str]]:
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in PROJECTIONS.read_text(encoding="utf-8").splitlines():
        if line.startswith("-- ") and ": " in line:
            current = blocks.setdefault(line[3:], [])
        elif line and current is not None:
            current.append(line)
    return blocks


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_projection_is_the_pinned_sql(dialect: str, variant: str) -> None:
    expressions = pinned_projections()[f"{dialect}: {variant}"]
    written = projection("SELECT * FROM t", COLUMNS, VARIANTS[variant], dialect)
    assert written == f"SELECT {', '.join(expressions)} FROM (SELECT * FROM t) AS q"


def test_duckdb_writes_the_typed_zoned_timestamps_with_the_copys_format() -> None:
    assert duckdb_timestamp_format(COLUMNS, VARIANTS["default"]) == "%Y-%m-%dT%H:%M:%S.%f%z"
    assert duckdb_timestamp_format(COLUMNS, VARIANTS["unsafe, precision 0"]) == (
        "%Y-%m-%dT%H:%M:%S%z"
    )
    assert duckdb_timestamp_format(COLUMNS[:8], CsvOptions()) is None
    # Zoned columns of other digits than the first one's are rendered, never left typed.
    mixed = [Column("a", "timestamptz", 3), Column("b", "timestamptz", 6)]
    assert duckdb_timestamp_format(mixed, CsvOptions()) == "%Y-%m-%dT%H:%M:%S.%g%z"
    assert projection("SELECT * FROM t", mixed, CsvOptions(), "duckdb") == (
        """SELECT "a" AS "a", strftime("b", '%Y-%m-%dT%H:%M:%S.%f%z') AS "b" """
        "FROM (SELECT * FROM t) AS q"
    )


def test_the_defaults_are_the_dialects() -> None:
    """Spreadsheet safety is on unless a saved query turns it off; the rest is plain CSV."""
    options = CsvOptions()
    assert options.to_json() == {
        "delimiter": ",",
        "line_ending": "lf",
        "bom": False,
        "gzip": False,
        "time_zone": "UTC",
        "spreadsheet_safe": True,
    }
    assert (options.null_marker, options.timestamp_precision) == ("", None)
    assert (options.delimiter_char, options.newline) == (",", "\n")
    assert render_value("=1+1", options) == "'=1+1"


@pytest.mark.parametrize(
    ("delimiter", "char"), [(",", ","), (";", ";"), ("tab", "\t"), ("\t", "\t")]
)
def test_each_delimiter_is_written_as_its_character(delimiter: str, char: str) -> None:
    options = CsvOptions(delimiter=delimiter)
    assert options.delimiter_char == char
    assert format_row([1, "a"], options) == f"1{char}a\n"


def test_crlf_ends_rows_and_the_header() -> None:
    options = CsvOptions(line_ending="crlf")
    assert options.newline == "\r\n"
    assert format_header(["a", "b"], options) == "a,b\r\n"
    assert format_row([1, None], options) == "1,\r\n"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"delimiter": "|"}, "delimiter must be one of ',', ';' or 'tab', not '|'"),
        ({"line_ending": "cr"}, "line_ending must be 'lf' or 'crlf', not 'cr'"),
        ({"line_ending": "LF"}, "line_ending must be 'lf' or 'crlf', not 'LF'"),
        (
            {"time_zone": "Europe/Paris'; --"},
            'time_zone "Europe/Paris\'; --" is not an IANA time zone: e.g. Europe/Paris, UTC',
        ),
        ({"time_zone": ""}, "time_zone '' is not an IANA time zone: e.g. Europe/Paris, UTC"),
        (
            {"time_zone": "x" * 65},
            f"time_zone '{'x' * 65}' is not an IANA time zone: e.g. Europe/Paris, UTC",
        ),
        (
            {"time_zone": "localtime"},
            "time_zone 'localtime' is not an IANA time zone: e.g. Europe/Paris, UTC",
        ),
        (
            {"time_zone": "europe/paris"},
            "time_zone 'europe/paris' is not an IANA time zone: did you mean Europe/Paris?",
        ),
        (
            {"null_marker": "true"},
            "null_marker 'true' must be 1-16 letters, digits or \\_#!./<> and not a word the "
            "dialect writes (NaN, inf, true, false); '\\N' or 'NULL'",
        ),
        (
            {"null_marker": "Infinity"},
            "null_marker 'Infinity' must be 1-16 letters, digits or \\_#!./<> and not a word the "
            "dialect writes (NaN, inf, true, false); '\\N' or 'NULL'",
        ),
        (
            {"timestamp_precision": 2},
            "timestamp_precision must be 0, 3 or 6 (fractional digits), not 2",
        ),
        (
            {"timestamp_precision": False},
            "timestamp_precision must be 0, 3 or 6 (fractional digits), not False",
        ),
    ],
)
def test_options_the_dialect_cannot_write_are_refused_by_name(
    option: dict[str, Any], message: str
) -> None:
    with pytest.raises(CsvOptionError) as raised:
        CsvOptions(**option)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    "option",
    [
        {"time_zone": "America/Argentina/Buenos_Aires"},
        {"time_zone": "Etc/GMT+5"},
        {"time_zone": "UTC"},
        {"null_marker": "\\N"},
        {"null_marker": "x" * 16},
        {"null_marker": "NULL"},
        {"timestamp_precision": 0},
        {"timestamp_precision": 6},
    ],
)
def test_options_the_dialect_can_write_are_taken(option: dict[str, Any]) -> None:
    options = CsvOptions(**option)
    assert options.to_json().items() >= option.items()


@pytest.mark.parametrize(
    ("column", "type_name"),
    [
        (Column("a", "decimal", 10, 2), "decimal(10,2)"),
        (Column("a", "decimal", 10), "decimal(10,0)"),
        (Column("a", "decimal"), "decimal"),
        (Column("a", "timestamp", 3), "timestamp(3)"),
        (Column("a", "timestamptz", 6), "timestamptz(6)"),
        (Column("a", "integer"), "integer"),
        (Column("a", "float", 53), "float"),
        (Column("a", "boolean"), "boolean"),
        (Column("a", "date"), "date"),
        (Column("a", "uuid"), "text"),
        (Column("a", "text"), "text"),
    ],
)
def test_a_column_names_its_type(column: Column, type_name: str) -> None:
    assert column.type_name == type_name


def test_two_columns_of_one_name_are_refused() -> None:
    columns = [Column("a", "integer"), Column("b", "text"), Column("a", "text")]
    with pytest.raises(CsvOptionError) as raised:
        check_columns(columns)
    assert str(raised.value) == "the query returns two columns named 'a'"
    with pytest.raises(CsvOptionError, match="two columns named 'a'"):
        projection("SELECT 1", columns, CsvOptions(), "duckdb")
    check_columns([Column("a", "integer"), Column("A", "integer")])


def test_timestamp_columns_are_written_with_the_digits_asked_for() -> None:
    columns = [Column("t", "timestamp", 3), Column("z", "timestamptz"), Column("n", "integer", 9)]
    assert [c.precision for c in as_written(columns, CsvOptions())] == [3, 6, 9]
    chosen = as_written(columns, CsvOptions(timestamp_precision=0))
    assert [c.precision for c in chosen] == [0, 0, 9]
    assert [c.name for c in chosen] == ["t", "z", "n"]


def test_identifiers_are_quoted_with_their_quotes_doubled() -> None:
    assert quote_identifier('say "hi"') == '"say ""hi"""'
    assert quote_identifier("plain") == '"plain"'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (math.nan, "NaN"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (1.0, "1.0"),
        (0.1, "0.1"),
        (-0.0, "-0.0"),
        (1e20, "1e+20"),
        (1e-7, "1e-07"),
    ],
)
def test_floats_are_python_shortest_text(value: float, text: str) -> None:
    assert render_float(value) == text
    assert render_value(value, CsvOptions()) == text


@pytest.mark.parametrize(
    ("value", "digits", "text"),
    [
        (datetime(2024, 3, 5, 10, 0, 0, 123456), None, "2024-03-05T10:00:00.123456"),
        (datetime(2024, 3, 5, 10, 0, 0, 123456), 6, "2024-03-05T10:00:00.123456"),
        (datetime(2024, 3, 5, 10, 0, 0, 123999), 3, "2024-03-05T10:00:00.123"),
        (datetime(2024, 3, 5, 10, 0, 0, 999999), 0, "2024-03-05T10:00:00"),
        (datetime(2024, 3, 5, 10, tzinfo=UTC), 0, "2024-03-05T10:00:00+00"),
        (
            datetime(2024, 3, 5, 10, tzinfo=timezone(timedelta(hours=5, minutes=30))),
            3,
            "2024-03-05T10:00:00.000+05:30",
        ),
        (
            datetime(2024, 3, 5, 10, tzinfo=timezone(-timedelta(hours=3))),
            0,
            "2024-03-05T10:00:00-03",
        ),
        (
            datetime(1890, 1, 1, tzinfo=timezone(timedelta(hours=-1, seconds=-10))),
            0,
            "1890-01-01T00:00:00-01:00:10",
        ),
        (
            datetime(1890, 1, 1, tzinfo=timezone(timedelta(seconds=5))),
            0,
            "1890-01-01T00:00:00+00:00:05",
        ),
    ],
)
def test_timestamps_have_their_digits_and_offset(
    value: datetime, digits: int | None, text: str
) -> None:
    assert render_timestamp(value, digits) == text


def test_a_timestamp_takes_the_digits_of_the_options() -> None:
    moment = datetime(2024, 3, 5, 10, 0, 0, 123456, tzinfo=UTC)
    assert render_value(moment, CsvOptions()) == "2024-03-05T10:00:00.123456+00"
    assert render_value(moment, CsvOptions(timestamp_precision=3)) == "2024-03-05T10:00:00.123+00"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, None),
        (True, "true"),
        (False, "false"),
        (7, "7"),
        (-7, "-7"),
        (Decimal("2.50"), "2.50"),
        (date(2024, 3, 5), "2024-03-05"),
        (time(10, 0, 1), "10:00:01"),
        (b"\x00\xff", "00ff"),
        ("text", "text"),
        ("-5", "'-5"),
        ("  =1", "'  =1"),
        ("\tx", "'\tx"),
        ("a=1", "a=1"),
        ("", ""),
    ],
)
def test_each_python_value_has_one_text(value: Any, text: str | None) -> None:
    assert render_value(value, CsvOptions()) == text


def test_spreadsheet_safety_can_be_turned_off() -> None:
    assert render_value("=1+1", CsvOptions(spreadsheet_safe=False)) == "=1+1"
    assert render_value(-5, CsvOptions()) == "-5"  # numbers are never prefixed


@pytest.mark.parametrize("text", ["=", "+1", "-", "@x", "\t", "\r", "\n", "   +"])
def test_formula_triggers_count_also_after_leading_spaces(text: str) -> None:
    assert needs_safety(text) is True


@pytest.mark.parametrize("text", ["x=", "X=1", "", " ", "'=", "\u00a0="])
def test_other_text_is_left_alone(text: str) -> None:
    assert needs_safety(text) is False


@pytest.mark.parametrize(
    ("text", "marker", "field"),
    [
        (None, "", ""),
        (None, "\\N", "\\N"),
        ("", "", '""'),
        ("", "\\N", ""),
        ("\\N", "\\N", '"\\N"'),
        ("a,b", "", '"a,b"'),
        ('say "hi"', "", '"say ""hi"""'),
        ("a\rb", "", '"a\rb"'),
        ("a\nb", "", '"a\nb"'),
        ("a;b", "", "a;b"),
        ("plain", "\\N", "plain"),
    ],
)
def test_a_field_is_quoted_only_when_it_must_be(text: str | None, marker: str, field: str) -> None:
    assert quote_field(text, ",", marker) == field


def test_a_row_quotes_the_delimiter_it_uses() -> None:
    options = CsvOptions(delimiter=";", null_marker="NULL")
    assert format_row(["a;b", "a,b", None, "NULL", ""], options) == '"a;b";a,b;NULL;"NULL";\n'
    assert format_header(["x;y", "NULL"], options) == '"x;y";"NULL"\n'
    assert quote_field(None, ",") == ""
