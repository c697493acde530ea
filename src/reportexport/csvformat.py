"""One CSV dialect for every source: the same rows give the same bytes.

A header row; UTF-8; LF line endings by default (CRLF as an option); a field is quoted when it
holds the delimiter, a quote, CR or LF, and an empty string is `""` while NULL is an empty
unquoted field; booleans `true`/`false`; decimals keep their scale; timestamps ISO 8601 with `T`,
fractional seconds only when non-zero, zoned values in the saved query's time zone with an offset.

Normalisation happens in a per-column SQL projection built from the query's column types, so
each source keeps its native bulk path (DuckDB's CSV writer, PostgreSQL's COPY); spreadsheet
safety (OWASP: a leading `'` before text that starts with = + - @ tab CR LF, also after leading
spaces) is part of the same projection. `format_row` does the same in Python for sources
without a bulk path.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

DELIMITERS = {",": ",", ";": ";", "tab": "\t", "\t": "\t"}
LINE_ENDINGS = {"lf": "\n", "crlf": "\r\n"}
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n")
_TRIGGER_CODES = "61, 43, 45, 64, 9, 13, 10"


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

    def __post_init__(self) -> None:
        if self.delimiter not in DELIMITERS:
            raise CsvOptionError(
                f"delimiter must be one of ',', ';' or 'tab', not {self.delimiter!r}"
            )
        if self.line_ending not in LINE_ENDINGS:
            raise CsvOptionError(f"line_ending must be 'lf' or 'crlf', not {self.line_ending!r}")
        if not re.fullmatch(r"[A-Za-z0-9_+\-/]{1,64}", self.time_zone):
            raise CsvOptionError(f"time_zone {self.time_zone!r} is not a time zone name")

    @property
    def delimiter_char(self) -> str:
        return DELIMITERS[self.delimiter]

    @property
    def newline(self) -> str:
        return LINE_ENDINGS[self.line_ending]

    def to_json(self) -> dict[str, Any]:
        return {
            "delimiter": self.delimiter,
            "line_ending": self.line_ending,
            "bom": self.bom,
            "gzip": self.gzip,
            "time_zone": self.time_zone,
            "spreadsheet_safe": self.spreadsheet_safe,
        }


@dataclass(frozen=True)
class Column:
    name: str
    kind: str


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def check_columns(columns: Sequence[Column]) -> None:
    seen: set[str] = set()
    for column in columns:
        if column.name in seen:
            raise CsvOptionError(f"the query returns two columns named {column.name!r}")
        seen.add(column.name)


def projection(query: str, columns: Sequence[Column], options: CsvOptions, dialect: str) -> str:
    """`SELECT <normalised columns> FROM (<query>) AS q` for `dialect` (duckdb or postgres)."""
    check_columns(columns)
    exprs = [
        f"{_column_expr(quote_identifier(c.name), c.kind, options, dialect)} "
        f"AS {quote_identifier(c.name)}"
        for c in columns
    ]
    return f"SELECT {', '.join(exprs)} FROM ({query}) AS q"


def _column_expr(ref: str, kind: str, options: CsvOptions, dialect: str) -> str:
    if kind in ("integer", "decimal", "float", "date"):
        return ref
    if kind == "boolean":
        if dialect == "postgres":  # PostgreSQL's COPY writes t/f
            return f"CASE WHEN {ref} THEN 'true' WHEN NOT {ref} THEN 'false' END"
        return ref
    if kind in ("timestamp", "timestamptz"):
        cast = f"CAST({ref} AS {'text' if dialect == 'postgres' else 'VARCHAR'})"
        return f"replace({cast}, ' ', 'T')"
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
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return _iso_timestamp(value)
    if isinstance(value, date | time):
        return value.isoformat()
    text = value.hex() if isinstance(value, bytes) else str(value)
    if options.spreadsheet_safe and needs_safety(text):
        return "'" + text
    return text


def _iso_timestamp(value: datetime) -> str:
    """As the databases write it: no zero fraction, offset as +HH or +HH:MM."""
    text = value.replace(tzinfo=None).isoformat()
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    offset = value.utcoffset()
    if offset is None:
        return text
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    return f"{text}{sign}{hours:02d}" + (f":{rest:02d}" if rest else "")


def quote_field(text: str | None, delimiter: str) -> str:
    if text is None:
        return ""
    if text == "" or delimiter in text or '"' in text or "\r" in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def format_row(values: Iterable[Any], options: CsvOptions) -> str:
    delimiter = options.delimiter_char
    return (
        delimiter.join(quote_field(render_value(v, options), delimiter) for v in values)
        + options.newline
    )


def format_header(names: Iterable[str], options: CsvOptions) -> str:
    delimiter = options.delimiter_char
    return delimiter.join(quote_field(n, delimiter) for n in names) + options.newline
