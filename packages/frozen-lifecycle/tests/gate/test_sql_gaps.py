"""Forms the gate once let through: a literal status in `INSERT ... SELECT` followed by another
clause, brackets and commas inside quoted strings and identifiers, and a class named for
states (JobStates) that holds a state beside another word.

Each case is the (line, code) pairs the rules must report, nothing more; a few assert the
message too. Where a form was already read before, its case says so.
"""

from __future__ import annotations

import ast
import textwrap

import pytest
from snippets import LEXICON, python_hits

from frozen_lifecycle.gate.lexicon import (
    FORBIDDEN_ALIAS,
    NO_SOURCE_STATE,
    NOT_INITIAL,
    STATES_INVENTED,
    UNDECLARED_EDGE,
    UNKNOWN_STATUS,
)
from frozen_lifecycle.gate.python_rules import PythonRules
from frozen_lifecycle.gate.sources import SCRIPT, SQL
from frozen_lifecycle.gate.sql import SqlRules
from frozen_lifecycle.gate.text_rules import TextRules

NOT_RUNNING = "a job is created in 'queued', not 'running'"


def text_findings(kind: str, source: str) -> list[tuple[int, str, str]]:
    facts = TextRules(LEXICON).check(kind, source)
    return sorted((hit.line, hit.code, hit.message) for hit in facts.hits)


def sql_hits(source: str) -> list[tuple[int, str]]:
    return sorted({(line, code) for line, code, _ in text_findings(SQL, source)})


def statement_hits(source: str) -> list[tuple[int, str, str]]:
    """What the SQL rules alone find (the vocabulary's word-by-word reading of a text left
    out: it reads `status = '...'` wherever it is written, strings included)."""
    return sorted((hit.line, hit.code, hit.message) for hit in SqlRules(LEXICON).check(source))


# -- INSERT ... SELECT: the select list read as a VALUES row ----------------------------------

INSERT_SELECT = {
    "RETURNING after the select list": (
        "INSERT INTO jobs (owner, status) SELECT 'a', 'running' RETURNING id;",
        [(1, NOT_INITIAL)],
    ),
    "RETURNING, over lines": (
        "INSERT INTO jobs (owner, status)\nSELECT 'a',\n       'running'\nRETURNING id;",
        [(3, NOT_INITIAL)],
    ),
    "a word that is no state, then RETURNING": (
        "INSERT INTO jobs (owner, status) SELECT 'a', 'stalled' RETURNING id, status;",
        [(1, UNKNOWN_STATUS)],
    ),
    "ON CONFLICT after the select list": (
        "INSERT INTO jobs (id, status) SELECT 7, 'failed' ON CONFLICT (id) DO NOTHING;",
        [(1, NOT_INITIAL)],
    ),
    "WHERE without FROM": (
        "INSERT INTO jobs (owner, status) SELECT 'a', 'running'\n"
        " WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE owner = 'a');",
        [(1, NOT_INITIAL)],
    ),
    "each select list joined by UNION": (
        "INSERT INTO jobs (owner, status)\nSELECT 'a', 'queued'\nUNION ALL\n"
        "SELECT 'b', 'running' RETURNING id;",
        [(4, NOT_INITIAL)],
    ),
    "a UNION past a FROM": (
        "INSERT INTO jobs (owner, status)\nSELECT owner, 'queued' FROM a\n"
        "UNION SELECT owner, 'failed' FROM b;",
        [(3, NOT_INITIAL)],
    ),
    "DISTINCT before the select list": (
        "INSERT INTO jobs (owner, status) SELECT DISTINCT owner, 'running' FROM jobs;",
        [(1, NOT_INITIAL)],
    ),
    "a literal named for its column": (
        "INSERT INTO jobs (owner, status) SELECT :o AS owner, 'running' AS status RETURNING id;",
        [(1, NOT_INITIAL)],
    ),
    "a literal cast to the status type": (
        "INSERT INTO jobs (owner, status) VALUES ('a', 'running'::job_status);",
        [(1, NOT_INITIAL)],
    ),
    "the SELECT past a common table expression, not the one inside it": (
        "INSERT INTO jobs (owner, status)\n"
        "WITH src AS (SELECT 'a' AS owner, 'stalled' AS note)\n"
        "SELECT owner, 'running' FROM src RETURNING id;",
        [(3, NOT_INITIAL)],
    ),
}


@pytest.mark.parametrize(("sql", "expected"), INSERT_SELECT.values(), ids=INSERT_SELECT.keys())
def test_a_literal_status_in_insert_select_is_read(
    sql: str, expected: list[tuple[int, str]]
) -> None:
    assert sql_hits(sql) == expected


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO jobs (owner, status) SELECT 'a', 'queued' RETURNING id;",
        "INSERT INTO jobs (owner, status) SELECT 'a', :status RETURNING id;",
        "INSERT INTO jobs (owner, status) SELECT 'a', 'queued' UNION SELECT 'b', 'queued';",
        # The rows EXCEPT removes are never inserted.
        "INSERT INTO jobs (owner, status) SELECT 'a', 'queued' EXCEPT SELECT 'a', 'running';",
        "INSERT INTO jobs (status, owner) SELECT 'queued', 'running' RETURNING id;",
        # The select list inside the common table expression is not the one inserted.
        "INSERT INTO jobs (owner, status) WITH src AS (SELECT 'a', 'running')\n"
        "SELECT owner, 'queued' FROM src;",
    ],
)
def test_insert_select_of_the_initial_state_or_no_literal_is_fine(sql: str) -> None:
    assert sql_hits(sql) == []


def test_insert_select_in_a_python_string_says_which_state() -> None:
    source = """
        def rerun(db, owner):
            return db.execute(
                "INSERT INTO jobs (owner, status) SELECT %s, 'running' RETURNING id", (owner,)
            )
        """
    assert python_hits(source) == [(3, NOT_INITIAL)]
    sql = "INSERT INTO jobs (owner, status) SELECT 'a', 'running' RETURNING id;"
    assert text_findings(SQL, sql) == [(1, NOT_INITIAL, NOT_RUNNING)]


# -- quoted strings and identifiers: skipped when brackets are matched and commas split ------

QUOTED = {
    "an opening bracket in a string before the status": (
        "UPDATE jobs SET note = 'a (b', status = 'running' WHERE status = 'succeeded';",
        [(1, UNDECLARED_EDGE)],
    ),
    "a closing bracket in a string before the status": (
        "UPDATE jobs SET note = 'a) b', status = 'running' WHERE status = 'succeeded';",
        [(1, UNDECLARED_EDGE)],
    ),
    "an escaped quote and a bracket in one string": (
        "UPDATE jobs SET note = 'it''s (b', status = 'running' WHERE status = 'succeeded';",
        [(1, UNDECLARED_EDGE)],
    ),
    "a bracket in a double-quoted identifier": (
        "UPDATE jobs SET \"note (x\" = 1, status = 'running' WHERE status = 'succeeded';",
        [(1, UNDECLARED_EDGE)],
    ),
    "a status assignment written inside a string": (
        "UPDATE jobs SET note = 'was status = ', status = 'running'\n WHERE status = 'succeeded';",
        [(1, UNDECLARED_EDGE)],
    ),
    "a status comparison inside a string is no source state": (
        "UPDATE jobs SET status = 'failed', change_actor = 'worker'\n"
        " WHERE note <> 'status = ''queued''' AND id = :id;",
        [(1, NO_SOURCE_STATE)],
    ),
    "a comma in a double-quoted column name": (
        "INSERT INTO jobs (\"a,b\", status) VALUES ('x', 'running');",
        [(1, NOT_INITIAL)],
    ),
    "a closing bracket in a string of the select list": (
        "INSERT INTO jobs (owner, status) SELECT 'x)', 'running' FROM dual;",
        [(1, NOT_INITIAL)],
    ),
    "a comma in a string of the select list": (
        "INSERT INTO jobs (owner, status) SELECT 'a, b', 'running' RETURNING id;",
        [(1, NOT_INITIAL)],
    ),
    # Read before: the VALUES reader already skipped single-quoted strings.
    "a closing bracket in a string of a VALUES row": (
        "INSERT INTO jobs (owner, status) VALUES ('x)', 'running');",
        [(1, NOT_INITIAL)],
    ),
    "an opening bracket in a string of a VALUES row": (
        "INSERT INTO jobs (owner, status) VALUES ('x(', 'running');",
        [(1, NOT_INITIAL)],
    ),
}


@pytest.mark.parametrize(("sql", "expected"), QUOTED.values(), ids=QUOTED.keys())
def test_quoted_text_does_not_move_the_clause(sql: str, expected: list[tuple[int, str]]) -> None:
    assert [(line, code) for line, code, _ in statement_hits(sql)] == expected


def test_an_actor_named_inside_a_string_is_not_the_actor() -> None:
    sql = (
        "UPDATE jobs SET note = 'by actor = ', status = 'running', change_actor = 'worker'\n"
        " WHERE status = 'queued';"
    )
    assert statement_hits(sql) == []
    wrong = sql.replace("'worker'", "'user'")
    assert statement_hits(wrong) == [
        (1, "wrong-actor", "queued -> running belongs to actor worker, not user")
    ]


def test_sql_in_a_shell_string_is_still_read_past_its_double_quotes() -> None:
    """A double quote that closes a shell string pairs with no later one across lines or
    single-quoted strings: the UPDATE inside is read as before."""
    text = (
        "psql -c \"UPDATE jobs SET status = 'running', change_actor = 'worker'"
        " WHERE status = 'succeeded'\"\n"
        'echo "done (see the log"\n'
    )
    assert text_findings(SCRIPT, text) == [
        (1, UNDECLARED_EDGE, "succeeded -> running is not an edge of the fixture")
    ]


# -- classes named for states: read strictly, as a STATES-named tuple is ----------------------

STATES_CLASSES = {
    "a class named JobStates": (
        """
        class JobStates:
            QUEUED = "queued"
            RUNNING = "running"
            BANANA = "banana"
        """,
        [(4, STATES_INVENTED)],
    ),
    "a class named ExportStatuses, its members annotated": (
        """
        class ExportStatuses:
            QUEUED: str = "queued"
            ARCHIVE: Final = "archive"
        """,
        [(3, STATES_INVENTED)],
    ),
    "a class named JOBSTATES": (
        """
        class JOBSTATES:
            CSV = "csv"
            QUEUED = "queued"
        """,
        [(2, STATES_INVENTED)],
    ),
    # Read strictly before: an enum of any name refuses every word that is not a state.
    "an Enum named JobStates": (
        """
        class JobStates(Enum):
            QUEUED = "queued"
            BANANA = "banana"
        """,
        [(3, STATES_INVENTED)],
    ),
    "a StrEnum of auto() names named JobStates": (
        """
        class JobStates(StrEnum):
            QUEUED = auto()
            BANANA = auto()
        """,
        [(3, STATES_INVENTED)],
    ),
}


@pytest.mark.parametrize(("source", "expected"), STATES_CLASSES.values(), ids=STATES_CLASSES.keys())
def test_a_class_named_for_states_refuses_any_other_word(
    source: str, expected: list[tuple[int, str]]
) -> None:
    assert python_hits(source) == expected


def test_a_tuple_named_in_camel_case_for_states_is_read_strictly() -> None:
    assert python_hits('JobStates = ("queued", "banana")') == [(1, STATES_INVENTED)]
    assert python_hits('jobstatuses = ["queued", "banana"]') == [(1, STATES_INVENTED)]
    assert python_hits('Labels = ("queued", "banana")') == []


def test_the_word_a_states_class_invents_is_named() -> None:
    source = textwrap.dedent(
        """
        class JobStates:
            QUEUED = "queued"
            BANANA = "banana"
            RETRYING = "retrying"
        """
    ).lstrip("\n")
    facts = PythonRules(LEXICON).check(ast.parse(source), source)
    assert sorted((h.line, h.code, h.message) for h in facts.hits) == [
        (3, STATES_INVENTED, "the class JobStates names 'banana', not a state in the fixture"),
        (4, FORBIDDEN_ALIAS, '"retrying" is a forbidden status alias'),
        (4, STATES_INVENTED, "the class JobStates names 'retrying', not a state in the fixture"),
    ]


@pytest.mark.parametrize(
    "source",
    [
        # Every member a state.
        """
        class JobStates:
            QUEUED = "queued"
            RUNNING = "running"
        """,
        # No state of the fixture: another machine's states.
        """
        class BreakerStates:
            OPEN = "open"
            CLOSED = "closed"
        """,
        # Not named for states: only words that read as statuses are refused.
        """
        class Labels:
            RUNNING = "running"
            TITLE = "Export"
        """,
        # A states class of the typed names, derived from the fixture.
        """
        class JobStates:
            QUEUED = STATES[0]
            OTHER = helper("x")
        """,
    ],
)
def test_other_classes_of_constants_are_fine(source: str) -> None:
    assert python_hits(source) == []
