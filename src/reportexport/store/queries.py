"""Named SQL queries kept in files, one file per dialect.

Each query is a block headed `-- name --` followed by a one-line `-- description`; the store
method that runs it has the same name, so grep leads from Python to SQL and back.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

_HEADER = re.compile(r"^-- ([a-z_]+) --$", re.M)


@functools.cache
def load_queries(dialect: str) -> dict[str, str]:
    text = resources.files(__package__).joinpath("sql", dialect, "queries.sql").read_text("utf-8")
    parts = _HEADER.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"{dialect}/queries.sql: query {name!r} defined twice")
        queries[name] = body.strip()
    return queries


def migration_files(dialect: str) -> list[tuple[int, str, str]]:
    """(version, name, sql) of every migration, in order."""
    folder = resources.files(__package__).joinpath("migrations", dialect)
    found = []
    for entry in folder.iterdir():
        match = re.fullmatch(r"(\d{4})_([a-z0-9_]+)\.sql", entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort()
    versions = [version for version, _, _ in found]
    if versions != list(range(1, len(found) + 1)):
        raise ValueError(f"{dialect} migrations are not numbered 1..n: {versions}")
    return found
