"""One CSV dialect for every source: the same rows give the same bytes.

A header row; UTF-8; LF line endings by default (CRLF as an option); a field is quoted when it
holds the delimiter, a quote, CR or LF. NULL is an empty unquoted field and the empty string is
`""`, unless the saved query names a NULL marker (`\\N`, `NULL`): then NULL is the marker,
unquoted, text equal to the marker is quoted, and the empty string is an empty field. Booleans
`true`/`false`; decimals keep their scale; floats are the shortest text that reads back to the
same double, always with a `.` or an exponent (`1.0`, `1e+20`), and `NaN`, `inf`, `-inf`.
Timestamps are ISO 8601 with `T` and the same number of fractional digits in every value of a
column (from the column's type, or the saved query's `timestamp_precision`), zoned values in the
saved query's time zone with an offset (`+01`, `+05:30`).

Normalisation happens in a per-column SQL projection built from the query's column types, so
each source keeps its native bulk path (DuckDB's CSV writer, PostgreSQL's COPY; DuckDB's writer
formats the zoned timestamps itself, see `duckdb_timestamp_format`); spreadsheet safety (OWASP:
a leading `'` before text that starts with = + - @ tab CR LF, also after leading spaces) is part
of the same projection. `format_row` does the same in Python for sources
without a bulk path.

`DIALECT_VERSION` names these bytes: any change to what a default export writes is a new
version, recorded on each job and noted in CHANGELOG.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from reportexport.core.zones import zone_problem

DIALECT_VERSION = 2
DELIMITERS = {",": ",", ";": ";", "tab": "\t", "\t": "\t"}
LINE_ENDINGS = {"lf": "\n", "crlf": "\r\n"}
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n")
_TRIGGER_CODES = "61, 43, 45, 64, 9, 13, 10"
TIMESTAMP_PRECISIONS = (0, 3, 6)
DEFAULT_TIMESTAMP_PRECISION = 6
# A marker never holds the delimiter, a quote, a space or a line break, never starts like a
# formula, and is never a word the dialect writes for a value.
_NULL_MARKER = re.compile(r"[A-Za-z0-9\\_#!./<>]{1,16}")
_VALUE_WORDS = {"nan", "inf", "infinity", "true", "false"}


class CsvOptionError(ValueError):
    pass


@dataclass(frozen=True, kw_only=True)
class CsvOptions:
    delimiter: str = ","
    line_ending: str = "lf"
    bom: bool = False
    gzip: bool = False
    time_zone: str = "UTC"
    spreadsheet_safe: bool = True
    null_marker: str = ""
    timestamp_precision: int | None = None

    def __post_init__(self) -> None:
        if self.delimiter not in DELIMITERS:
            raise CsvOptionError(
                f"delimiter must be one of ',', ';' or 'tab', not {self.delimiter!r}"
            )
        if self.line_ending not in LINE_ENDINGS:
            raise CsvOptionError(f"line_ending must be 'lf' or 'crlf', not {self.line_ending!r}")
        zone = zone_problem(self.time_zone)
        if zone is not None:
            raise CsvOptionError(f"time_zone {zone}")
        if self.null_marker and (
            not _NULL_MARKER.fullmatch(self.null_marker) or self.null_marker.lower() in _VALUE_WORDS
        ):
            raise CsvOptionError(
                f"null_marker {self.null_marker!r} must be 1-16 letters, digits or \\_#!./<> "
                "and not a word the dialect writes (NaN, inf, true, false); '\\N' or 'NULL'"
            )
        if self.timestamp_precision is not None and (
            isinstance(self.timestamp_precision, bool)
            or self.timestamp_precision not in TIMESTAMP_PRECISIONS
        ):
            raise CsvOptionError(
                "timestamp_precision must be 0, 3 or 6 (fractional digits), "
                f"not {self.timestamp_precision!r}"
            )

    @property
    def delimiter_char(self) -> str:
        return DELIMITERS[self.delimiter]

    @property
    def newline(self) -> str:
        return LINE_ENDINGS[self.line_ending]

    def to_json(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            "delimiter": self.delimiter,
            "line_ending": self.line_ending,
            "bom": self.bom,
            "gzip": self.gzip,
            "time_zone": self.time_zone,
            "spreadsheet_safe": self.spreadsheet_safe,
        }
        # Only when set: the content hash of a saved query that does not use them stays put.
        if self.null_marker:
            described["null_marker"] = self.null_marker
        if self.timestamp_precision is not None:
            described["timestamp_precision"] = self.timestamp_precision
        return described


@dataclass(frozen=True)
class Column:
    """A result column. `precision` and `scale` mean what they mean in SQL: a decimal's digits
    and scale, a timestamp's fractional-second digits, a float's binary digits (24 or 53)."""

    name: str
    kind: str
    precision: int | None = None
    scale: int | None = None

    @property
    def type_name(self) -> str:
        """The type as the job and the schema name it: `decimal(10,2)`, `timestamp(6)`."""
        if self.kind == "decimal" and self.precision is not None:
            return f"decimal({self.precision},{self.scale or 0})"
        if self.kind in ("timestamp", "timestamptz"):
            return f"{self.kind}({self.precision})"
        if self.kind in ("integer", "decimal", "float", "boolean", "date"):
            return self.kind
        return "text"


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def check_columns(columns: Sequence[Column]) -> None:
    seen: set[str] = set()
    for column in columns:
        if column.name in seen:
            raise CsvOptionError(f"the query returns two columns named {column.name!r}")
        seen.add(column.name)


def as_written(columns: Sequence[Column], options: CsvOptions) -> list[Column]:
    """The columns with the fractional digits each timestamp column is written with."""
    written = []
    for column in columns:
        if column.kind in ("timestamp", "timestamptz"):
            digits = options.timestamp_precision
            if digits is None:
                digits = (
                    DEFAULT_TIMESTAMP_PRECISION if column.precision is None else column.precision
                )
            column = replace(column, precision=digits)
        written.append(column)
    return written


def projection(query: str, columns: Sequence[Column], options: CsvOptions, dialect: str) -> str:
    """`SELECT <normalised columns> FROM (<query>) AS q` for `dialect` (duckdb or postgres).

    On DuckDB the zoned timestamp columns with `duckdb_timestamp_format`'s digits stay typed:
    the `COPY` must then carry that option (see there)."""
    check_columns(columns)
    written = as_written(columns, options)
    typed_zoned = _typed_zoned_digits(written) if dialect == "duckdb" else None
    exprs = [
        f"{_column_expr(quote_identifier(c.name), c, options, dialect, typed_zoned)} "
        f"AS {quote_identifier(c.name)}"
        for c in written
    ]
    return f"SELECT {', '.join(exprs)} FROM ({query}) AS q"


def duckdb_timestamp_format(columns: Sequence[Column], options: CsvOptions) -> str | None:
    """The `TIMESTAMPFORMAT` of DuckDB's `COPY` for the zoned columns `projection` leaves typed,
    or None when there are none.

    The CSV writer formats them with the same code as `strftime` in the session's time zone,
    so the bytes are the same, without a string per value in between (measured: the timestamp
    column's share of the export's CPU falls to about that of the bare column). The option
    applies to every timestamp-typed column of the output: the projection renders plain
    timestamps, and zoned ones with other digits, with `strftime`, so only those it leaves
    typed meet it.
    """
    digits = _typed_zoned_digits(as_written(columns, options))
    return None if digits is None else _duckdb_pattern(digits, zoned=True)


def _typed_zoned_digits(written: Sequence[Column]) -> int | None:
    """The digits of the first zoned timestamp column as written (the columns with those
    digits are left typed on DuckDB), or None."""
    for column in written:
        if column.kind == "timestamptz":
            return DEFAULT_TIMESTAMP_PRECISION if column.precision is None else column.precision
    return None


def _column_expr(
    ref: str, column: Column, options: CsvOptions, dialect: str, typed_zoned: int | None = None
) -> str:
    kind = column.kind
    if kind in ("integer", "decimal", "date"):
        return ref
    if kind == "boolean":
        if dialect == "postgres":  # PostgreSQL's COPY writes t/f
            return f"CASE WHEN {ref} THEN 'true' WHEN NOT {ref} THEN 'false' END"
        return ref
    if kind == "float":
        return _postgres_float(ref, column) if dialect == "postgres" else _duckdb_float(ref)
    if kind in ("timestamp", "timestamptz"):
        digits = DEFAULT_TIMESTAMP_PRECISION if column.precision is None else column.precision
        zoned = kind == "timestamptz"
        if dialect == "postgres":
            return _postgres_timestamp(ref, digits, zoned=zoned)
        if zoned and digits == typed_zoned:
            return ref  # the COPY's TIMESTAMPFORMAT writes it (duckdb_timestamp_format)
        return _duckdb_timestamp(ref, digits, zoned=zoned)
    text = (
        ref
        if kind == "text"
        else f"CAST({ref} AS {'text' if dialect == 'postgres' else 'VARCHAR'})"
    )
    if not options.spreadsheet_safe:
        return text
    # ascii() of the first character is cheap; ltrim runs only for a space or a trigger.
    return (
        f"CASE WHEN ascii({text}) IN ({_TRIGGER_CODES}, 32) "
        f"AND ascii(ltrim({text})) IN ({_TRIGGER_CODES}) "
        f"THEN '''' || {text} ELSE {text} END"
    )


# -- floats: shortest round-trip text, as Python's repr and DuckDB write it --------------------


def _duckdb_float(ref: str) -> str:
    # DuckDB's own text is the shortest round-trip form with inf/-inf; only NaN is spelled apart.
    return f"CASE WHEN isnan({ref}) THEN 'NaN' ELSE CAST({ref} AS VARCHAR) END"


def _postgres_float(ref: str, column: Column) -> str:
    """PostgreSQL writes the same shortest digits, but drops `.0` from whole numbers, switches to
    an exponent sooner (1e+15 for doubles, 1e+06 for reals) and spells Infinity out."""
    text = f"CAST({ref} AS text)"
    positional_below = "1e6" if column.precision == 24 else "1e15"
    mantissa = f"replace(ltrim(split_part({text}, 'e', 1), '-'), '.', '')"
    exponent = f"CAST(split_part({text}, 'e', 2) AS integer)"
    # Rare: rewrite d.ddde+N (N < 16) positionally, as the other sources write it.
    positional = (
        f"CASE WHEN {ref} < 0 THEN '-' ELSE '' END"
        f" || rpad(left({mantissa}, {exponent} + 1), {exponent} + 1, '0')"
        f" || '.' || coalesce(nullif(substr({mantissa}, {exponent} + 2), ''), '0')"
    )
    return (
        f"CASE WHEN abs({ref}) < {positional_below} THEN"
        f" CASE WHEN {ref} = trunc({ref}) THEN {text} || '.0' ELSE {text} END"
        f" WHEN abs({ref}) < 1e16 THEN {positional}"
        f" WHEN {ref} = 'Infinity' THEN 'inf' WHEN {ref} = '-Infinity' THEN '-inf'"
        f" ELSE {text} END"
    )


# -- timestamps: a fixed number of fractional digits per column ---------------------------------

_DUCKDB_FRACTIONS = {0: "", 3: ".%g", 6: ".%f", 9: ".%n"}


def _duckdb_timestamp(ref: str, digits: int, *, zoned: bool) -> str:
    return f"strftime({ref}, '{_duckdb_pattern(digits, zoned=zoned)}')"


def _duckdb_pattern(digits: int, *, zoned: bool) -> str:
    # DuckDB's timestamp types hold 0, 3, 6 or 9 digits, the choices a catalog has are 0, 3, 6.
    return f"%Y-%m-%dT%H:%M:%S{_DUCKDB_FRACTIONS[digits]}{'%z' if zoned else ''}"


def _postgres_timestamp(ref: str, digits: int, *, zoned: bool) -> str:
    pattern = 'YYYY-MM-DD"T"HH24:MI:SS' + (f".FF{digits}" if digits else "")
    # to_char gives NULL for ±infinity: the text form says infinity as DuckDB does.
    fallback = f"replace(CAST({ref} AS text), ' ', 'T')"
    if not zoned:
        return f"coalesce(to_char({ref}, '{pattern}'), {fallback})"
    # OF writes +HH or +HH:MM but drops the seconds of old local mean times (+05:21:10), which
    # no zone has used since 1972; only older values pay for adding them back.
    seconds = f"CAST(extract(timezone FROM {ref}) AS integer) % 60"
    return (
        f"coalesce(CASE WHEN {ref} >= '1973-01-01' THEN to_char({ref}, '{pattern}OF')"
        f" ELSE to_char({ref}, '{pattern}OF') || CASE WHEN {seconds} <> 0"
        f" THEN ':' || lpad(CAST(abs({seconds}) AS text), 2, '0') ELSE '' END END, {fallback})"
    )


# -- Python rendering, for sources without a native bulk path ---------------------------------


def needs_safety(text: str) -> bool:
    return text.lstrip(" ").startswith(FORMULA_TRIGGERS)


def render_value(value: Any, options: CsvOptions) -> str | None:
    """The text of one cell, or None for NULL."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return render_float(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return render_timestamp(value, options.timestamp_precision)
    if isinstance(value, date | time):
        return value.isoformat()
    text = value.hex() if isinstance(value, bytes) else str(value)
    if options.spreadsheet_safe and needs_safety(text):
        return "'" + text
    return text


def render_float(value: float) -> str:
    """Python's shortest round-trip text (DuckDB's too), with NaN, inf and -inf."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def render_timestamp(value: datetime, digits: int | None = None) -> str:
    """As the databases write it: `digits` fractional digits (6 by default), offset as +HH,
    +HH:MM or +HH:MM:SS."""
    places = DEFAULT_TIMESTAMP_PRECISION if digits is None else digits
    text = value.replace(tzinfo=None).isoformat(timespec="microseconds")
    text = text[: len(text) - (6 - places)] if places else text[:-7]
    offset = value.utcoffset()
    return text if offset is None else text + _offset_text(offset)


def _offset_text(offset: timedelta) -> str:
    seconds = int(offset.total_seconds())
    sign = "+" if seconds >= 0 else "-"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours:02d}"
    if minutes or seconds:
        text += f":{minutes:02d}"
    if seconds:
        text += f":{seconds:02d}"
    return text


def quote_field(text: str | None, delimiter: str, null_marker: str = "") -> str:
    if text is None:
        return null_marker
    if text == null_marker or delimiter in text or '"' in text or "\r" in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def format_row(values: Iterable[Any], options: CsvOptions) -> str:
    delimiter, marker = options.delimiter_char, options.null_marker
    return (
        delimiter.join(quote_field(render_value(v, options), delimiter, marker) for v in values)
        + options.newline
    )


def format_header(names: Iterable[str], options: CsvOptions) -> str:
    delimiter, marker = options.delimiter_char, options.null_marker
    return delimiter.join(quote_field(n, delimiter, marker) for n in names) + options.newline
