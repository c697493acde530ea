"""`reportexport queries check`: every saved query described against its own source.

Parsing the catalog catches what the file alone shows (types, names, unused or undeclared
parameters); this asks each source to describe each query's result (no rows are read), so SQL
that cannot run (`SELECT no_such_column`) is found before a user meets it. Problems name the
query's place in the file: `catalog.toml:12: queries.orders_by_day.sql: ...`.
"""

from __future__ import annotations

import re
from pathlib import Path

from reportexport.catalog import Catalog
from reportexport.sources import SourceError, open_source


def check_queries(catalog: Catalog) -> list[str]:
    """One line per saved query that its source cannot describe; empty when all can."""
    problems = []
    text = _read(catalog.path)
    for query in catalog.queries.values():
        source_config = catalog.sources[query.source]
        try:
            source = open_source(source_config)
            # Every parameter NULL: enough for the source to type the result.
            source.describe(query.sql, dict.fromkeys(query.parameters))
        except SourceError as exc:
            where = place(catalog.path, text, f"queries.{query.name}")
            problems.append(f"{where}: queries.{query.name}.sql: {exc}")
    return problems


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
