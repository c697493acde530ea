"""`reportexport queries check`: every saved query described against its own source.

Parsing the catalog catches what the file alone shows (types, names, unused or undeclared
parameters); this asks each source to describe each query's result (no rows are read), so SQL
that cannot run (`SELECT no_such_column`) is found before a user meets it. Problems name the
query's place in the file: `catalog.toml:12: queries.orders_by_day.sql: ...`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from reportexport.core.catalog import Catalog
from reportexport.core.parameters import ParameterError, ParamSpec, coerce
from reportexport.sources import SourceError, open_source


def check_queries(catalog: Catalog) -> list[str]:
    """One line per saved query that its source cannot describe; empty when all can."""
    problems = []
    text = _read(catalog.path)
    for query in catalog.queries.values():
        source_config = catalog.sources[query.source]
        try:
            source = open_source(source_config)
            # A value of each parameter's type, so that the source types the SQL as an export
            # would bind it (NULL would hide `:n + 'abc'`).
            samples = {name: sample_value(spec) for name, spec in query.parameters.items()}
            source.describe(query.sql, samples)
        except SourceError as exc:
            where = place(catalog.path, text, f"queries.{query.name}")
            problems.append(f"{where}: queries.{query.name}.sql: {exc.detail}")
    return problems


SAMPLE_TEXT = {
    "integer": "0",
    "number": "0",
    "boolean": "false",
    "date": "2024-01-01",
    "timestamp": "2024-01-01T00:00:00+00:00",
}


def sample_value(spec: ParamSpec) -> Any:
    """A value the parameter could take: its default, a bound, else a plain one of its type."""
    for candidate in (spec.default, spec.min, spec.max):
        if candidate is not None:
            return candidate
    if spec.choices:
        return spec.choices[0]
    text = SAMPLE_TEXT.get(spec.type, "x" * max(1, spec.min_length or 1))
    try:
        return coerce(spec, text, from_text=True)
    except ParameterError:
        return None  # a pattern the plain text does not match: NULL still types the rest


def place(path: Path, text: str, dotted: str) -> str:
    """`file:line` of the table or key `dotted` (e.g. `queries.orders_by_day`) in the catalog."""
    name = re.escape(dotted)
    header = re.compile(rf"^\s*\[\s*{name}\s*\]|^\s*{name}\s*[.=]", re.M)
    match = header.search(text)
    line = text.count("\n", 0, match.start()) + 1 if match else 1
    return f"{path}:{line}"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""
