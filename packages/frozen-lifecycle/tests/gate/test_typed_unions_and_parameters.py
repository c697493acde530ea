"""Two ways a word once reached a status unseen: a type built from the typed names that widens
them (`Literal[Status, "x"]`, `Status | Literal["x"]`), and a job created in another state than
the initial one through the parameters handed to the query that creates it."""

from __future__ import annotations

import pytest
from snippets import python_hits

from frozen_lifecycle.gate.lexicon import NOT_INITIAL, STATES_INVENTED, WRONG_ACTOR

WIDENED = {
    "a Literal of Status and a word": ('Legacy = Literal[Status, "cancelled"]\n', STATES_INVENTED),
    "Status or a Literal": ('Shown = Status | Literal["expired"]\n', STATES_INVENTED),
    "in an annotation, with None": (
        'def f(s: Status | Literal["expired"] | None) -> None: ...\n',
        STATES_INVENTED,
    ),
    "a Union": ('Shown = Union[Status, Literal["expired", "queued"]]\n', STATES_INVENTED),
    "the targets of an actor's edges": (
        'Outcome = FromRunningByWorker | Literal["stalled"]\n',
        STATES_INVENTED,
    ),
    "Actor and a name": ('Who = Actor | Literal["operator"]\n', WRONG_ACTOR),
    "an attribute of the typed names' module": (
        'Shown = lifecycle.Status | Literal["expired"]\n',
        STATES_INVENTED,
    ),
}


@pytest.mark.parametrize("case", WIDENED, ids=list(WIDENED))
def test_a_type_built_from_the_typed_names_adds_no_word(case: str) -> None:
    source, code = WIDENED[case]
    assert python_hits(source) == [(1, code)]


@pytest.mark.parametrize(
    "source",
    [
        "Shown = Literal[Status]\n",
        "Maybe = Status | None\n",
        'Shown = Status | Literal["queued", "failed"]\n',
        'Level = int | Literal["debug"]\n',
        'Kind = Literal["csv", "xlsx"]\n',
    ],
)
def test_a_type_that_keeps_to_the_states_is_no_finding(source: str) -> None:
    assert python_hits(source) == []


CREATED = {
    "a dict named before the query": """
        def create_job(self, new):
            params = {"owner": new.owner, "status": "running"}
            with self.driver.write() as session:
                return session.row("create_job", params)
        """,
    "a dict literal beside the INSERT": """
        def f(conn):
            conn.execute(
                "INSERT INTO jobs (owner, status) VALUES (:owner, :status)",
                {"owner": "a", "status": "running"},
            )
        """,
    "dict() named before the INSERT": """
        def f(conn):
            p = dict(owner="a", status="running")
            conn.execute("INSERT INTO jobs (owner, status) VALUES (:owner, :status)", p)
        """,
    "keywords of a create call, spread from a dict": """
        def f(store):
            extra = {"status": "running"}
            store.create_job(owner="a", **extra)
        """,
}


@pytest.mark.parametrize("case", CREATED, ids=list(CREATED))
def test_a_job_created_through_its_parameters_starts_in_the_initial_state(case: str) -> None:
    hits = python_hits(CREATED[case])
    assert [code for _, code in hits] == [NOT_INITIAL]


def test_parameters_of_other_queries_and_the_initial_state_are_no_finding() -> None:
    source = """
        def f(conn, graph):
            params = {"owner": "a", "status": graph.initial}
            conn.execute("create_job", params)
            queued = {"status": "queued"}
            conn.execute("INSERT INTO jobs (owner, status) VALUES (:owner, :status)", queued)
            moved = {"status": "running", "id": 4}
            conn.execute("UPDATE jobs SET note = :note WHERE id = :id", moved)
        """
    assert python_hits(source) == []
