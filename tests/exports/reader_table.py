"""The table the reader matrix exports: every column type the dialect covers, and its traps.

The same rows go into DuckDB and PostgreSQL; the dialect tests check that both write the same
bytes, and the reader matrix reads those bytes back with each reader.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

# Text that a reader may mistake for something else, or lose: delimiters, quotes, line breaks,
# formula triggers, unicode, NULL-looking words (a surname "Null"), and the empty string.
TEXTS: list[str | None] = [
    "plain",
    "a,b",
    'q"uote',
    "line\nbreak",
    "cr\rhere",
    "crlf\r\nhere",
    "",
    None,
    "=1+1",
    "+x",
    "-x",
    "@x",
    "\tx",
    "  =x",
    "Ünïcödé ✓ 日本",
    "a;b",
    "#hash",
    "'quoted'",
    "Null",
    "NULL",
    "\\N",
    "NaN",
    "TRUE",
    " padded ",
]

# Codes that look like numbers, dates or booleans but are text: readers must keep them so.
CODES: list[str | None] = ["007", "01234", "1e5", "2024-01-01", "TRUE", "00", None, "0.50"]

RATIOS = [1.0, 0.1, -2.25, 1e20, math.nan, math.inf, -math.inf, 123456.789, None, -0.5]
WHOLES = [1.0, 100.0, -3.0, 0.0, None, 42.0, 7.0]
PRICES = ["0.10", "-3.30", "12345678.90", "0.00", None, "7.00"]
QUANTITIES = [1, -2, 2**53 + 1, 0, None, 1000]

# (name, DuckDB type, PostgreSQL type, the kind the dialect writes)
COLUMNS = [
    ("id", "INTEGER", "integer", "integer"),
    ("qty", "BIGINT", "bigint", "integer"),
    ("price", "DECIMAL(10,2)", "numeric(10,2)", "decimal"),
    ("ratio", "DOUBLE", "double precision", "float"),
    ("whole", "DOUBLE", "double precision", "float"),
    ("flag", "BOOLEAN", "boolean", "boolean"),
    ("day", "DATE", "date", "date"),
    ("ts", "TIMESTAMP", "timestamp", "timestamp"),
    ("ts_ms", "TIMESTAMP_MS", "timestamp(3)", "timestamp"),
    ("tstz", "TIMESTAMPTZ", "timestamptz", "timestamptz"),
    ("t", "VARCHAR", "text", "text"),
    ("code", "VARCHAR", "text", "text"),
]
NAMES = [name for name, *_ in COLUMNS]
KINDS = {name: kind for name, _, _, kind in COLUMNS}


def reader_rows() -> list[tuple[Any, ...]]:
    rows = []
    for i, text in enumerate(TEXTS, start=1):
        price = PRICES[i % len(PRICES)]
        rows.append(
            (
                i,
                QUANTITIES[i % len(QUANTITIES)],
                None if price is None else Decimal(price),
                RATIOS[i % len(RATIOS)],
                WHOLES[i % len(WHOLES)],
                None if i % 4 == 0 else i % 2 == 0,
                None if i % 9 == 0 else date(2024, 1, i),
                None if i % 10 == 0 else datetime(2024, 2, i, 13, 14, 15, 0 if i % 2 else 250_000),
                datetime(2024, 2, i, 8, 0, 1, 125_000 if i % 3 else 0),
                # March and July: Europe/Paris gives two offsets (+01 and +02) in one column.
                None
                if i % 11 == 0
                else datetime(2024, 3 if i % 2 else 7, i, 23, 30, 0, 0 if i % 3 else 500_000, UTC),
                text,
                CODES[i % len(CODES)],
            )
        )
    return rows


def duckdb_ddl() -> str:
    return ", ".join(f"{name} {duck}" for name, duck, *_ in COLUMNS)


def postgres_ddl() -> str:
    return ", ".join(f"{name} {pg}" for name, _, pg, _ in COLUMNS)
