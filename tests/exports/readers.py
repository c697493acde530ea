"""The reader matrix's machinery: the docs' recipes run as written, and what a reader got,
cell by cell, as tagged values, so that a type changes a cell as surely as a value does
(`True == 1`, `1 == 1.0` and a datetime compared with text would hide that)."""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO_ROOT

CSV_NAME, SCHEMA_NAME, XLSX_NAME = "orders-42.csv", "orders-42.schema.json", "orders-42.xlsx"
_RECIPE = re.compile(r"<!-- reader: (\w+) -->\n```python\n(.*?)```", re.S)
# "Read an export back", where the recipes are printed for people to copy.
RECIPES_PAGE = REPO_ROOT / "docs" / "how-to" / "read-exports.md"
SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")

Cell = tuple[Any, ...]
NULL: Cell = ("null",)


@dataclass(frozen=True)
class Table:
    names: list[str]
    rows: list[list[Cell]]


def recipes() -> dict[str, str]:
    """The docs' recipe for each reader, by name."""
    text = RECIPES_PAGE.read_text(encoding="utf-8")
    return {name: code for name, code in _RECIPE.findall(text)}


def run_recipe(reader: str) -> dict[str, Any]:
    """Run a reader's recipe in the current folder (which holds the CSV and its schema)."""
    code = compile(recipes()[reader], f"{RECIPES_PAGE.name} recipe for {reader}", "exec")
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    return namespace


def require_libreoffice() -> str:
    if SOFFICE is not None:
        return SOFFICE
    message = (
        "LibreOffice NOT FOUND (apt-get install libreoffice-calc): its reader tests cannot run"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(message + " (a failure under CI=true)")
    pytest.skip(message)


# -- what a reader got ------------------------------------------------------------------------


def cell(value: Any) -> Cell:
    """A value as a (type, value) pair; instants in UTC, every missing value the same NULL."""
    if hasattr(value, "to_pydatetime"):  # pandas' Timestamp
        value = value.to_pydatetime()
    if hasattr(value, "item") and not isinstance(value, str | bytes):  # numpy scalars
        value = value.item()
    if value is None or _is_pandas_missing(value):
        return NULL
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("nan",) if math.isnan(value) else ("float", value)
    if isinstance(value, Decimal):
        return ("decimal", value)
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            return ("instant", value.astimezone(UTC))
        return ("datetime", value)
    if isinstance(value, date):
        return ("date", value)
    if isinstance(value, str):
        return ("text", value)
    raise TypeError(f"a reader gave {value!r} of type {type(value).__name__}")


def _is_pandas_missing(value: Any) -> bool:
    import pandas as pd

    return value is pd.NA or value is pd.NaT


def spreadsheet_cell(value: Any) -> Cell:
    """A spreadsheet has one number type: an integer cell and a float cell are both numbers."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return ("number", float(value))
    return cell(value)


def table(names: Iterable[Any], rows: Iterable[Sequence[Any]], as_cell: Any = cell) -> Table:
    return Table([str(n) for n in names], [[as_cell(v) for v in row] for row in rows])


def read_back(reader: str, folder: Path) -> Table:
    """Run the reader's recipe in `folder` and turn what it made into a Table."""
    with contextlib.chdir(folder):  # DuckDB's relation reads the file when it is fetched
        return _table_of(reader, run_recipe(reader))


def _table_of(reader: str, made: dict[str, Any]) -> Table:
    if reader == "pandas":
        df = made["df"]
        return table(df.columns, df.astype(object).itertuples(index=False))
    if reader == "polars":
        return table(made["df"].columns, made["df"].rows())
    if reader == "duckdb":
        return table(made["relation"].columns, made["relation"].fetchall())
    if reader == "pyarrow":
        arrow = made["table"]
        columns = [column.to_pylist() for column in arrow.columns]
        return table(arrow.column_names, zip(*columns, strict=True))
    if reader == "csv":
        return table(made["header"], made["rows"])
    if reader == "libreoffice":
        import openpyxl

        sheet = openpyxl.load_workbook(XLSX_NAME).active
        header, *rows = sheet.iter_rows(values_only=True)
        return table(header, rows, spreadsheet_cell)
    raise ValueError(reader)


def differences(expected: Table, got: Table) -> Iterator[str]:
    """Each cell where a reader got something else than promised, by row id and column."""
    if expected.names != got.names:
        yield f"header: expected {expected.names}, got {got.names}"
    if len(expected.rows) != len(got.rows):
        yield f"expected {len(expected.rows)} rows, got {len(got.rows)}"
    for number, (want, have) in enumerate(zip(expected.rows, got.rows, strict=False), start=1):
        for name, a, b in zip(expected.names, want, have, strict=False):
            if a != b:
                yield f"row {number}, {name}: expected {a!r}, got {b!r}"
