"""The job store's graph SQL: the toolkit's guards as this program generates and applies them.

The committed `sql/<dialect>/graph.sql` files are these texts, and `[tool.frozen-lifecycle.gate]`
in pyproject.toml names the same paths, channel and command, so the gate (which imports
nothing of this program) regenerates them alike and fails when they drift.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from frozen_lifecycle.graph import Graph
from frozen_lifecycle.provenance import Provenance
from frozen_lifecycle.sql import postgres_graph_sql, sqlite_graph_sql

PROVENANCE = Provenance(command="reportexport generate")
# The channel the PostgreSQL listener waits on (store/postgres.py) for changes no worker made.
NOTIFY_CHANNEL = "reportexport_jobs"
SQLITE_PATH = "src/reportexport/store/sql/sqlite/graph.sql"
POSTGRES_PATH = "src/reportexport/store/sql/postgres/graph.sql"


def sqlite_sql(graph: Graph) -> str:
    return sqlite_graph_sql(graph, provenance=PROVENANCE)


def postgres_sql(graph: Graph) -> str:
    return postgres_graph_sql(graph, provenance=PROVENANCE, notify_channel=NOTIFY_CHANNEL)


GRAPH_SQL: Mapping[str, Callable[[Graph], str]] = {"sqlite": sqlite_sql, "postgres": postgres_sql}
