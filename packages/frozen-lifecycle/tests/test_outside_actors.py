"""The actor words a behaviour probe tries beyond the fixture's: those an installed guard
compares an actor with, those the history holds, and the plausible names."""

from __future__ import annotations

import sqlite3

from conftest import STARTER_FIXTURE
from frozen_lifecycle.graph import load_graph
from frozen_lifecycle.outside_actors import (
    GUARD_DEFINITIONS,
    PLAUSIBLE,
    guard_actor_words,
    outside_actors,
)
from frozen_lifecycle.sql import guards_sql, tables_sql

GRAPH = load_graph(STARTER_FIXTURE)


def test_the_words_a_guard_compares_an_actor_with() -> None:
    definitions = [
        "WHEN NEW.change_actor = 'night_shift' THEN NULL",
        "IF NEW.change_actor IS DISTINCT FROM 'support' AND OLD.status IN ('failed') THEN",
        "WHEN actor IN ('batch', 'worker') THEN NULL",
        "CASE NEW.change_actor WHEN 'robot' THEN 1 WHEN 'user' THEN 2 END",
        "SET note = 'unrelated' WHERE status = 'queued'",
    ]
    assert guard_actor_words(definitions) == [
        "night_shift",
        "support",
        "batch",
        "worker",
        "robot",
        "user",
    ]


def test_outside_actors_leave_the_fixtures_words_out_and_keep_the_plausible() -> None:
    found = outside_actors(
        GRAPH, ["NEW.change_actor = 'worker' OR NEW.change_actor = 'ops'"], ["user", "cron", None]
    )
    assert found == ("ops", "cron", *PLAUSIBLE)


def test_the_generated_sqlite_guard_names_no_actor_outside_the_fixture() -> None:
    connection = sqlite3.connect(":memory:")
    connection.executescript(tables_sql("sqlite") + guards_sql(GRAPH, "sqlite"))
    definitions = [row[0] for row in connection.execute(GUARD_DEFINITIONS[0])]
    assert definitions  # the guard is read
    assert set(guard_actor_words(definitions)) == set(GRAPH.actors)
    assert outside_actors(GRAPH, definitions) == PLAUSIBLE
