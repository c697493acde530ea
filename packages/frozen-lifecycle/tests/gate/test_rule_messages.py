"""What the gate's rules say: each finding's line, code and message, for the forms of code a
repository may hold (a plain or annotated STATES, a wrapped literal, a call through a module,
keywords), so that a rule reporting the wrong thing is noticed, not only a rule gone quiet."""

from __future__ import annotations

import ast
import json
import textwrap

import pytest

from conftest import STARTER_FIXTURE
from frozen_lifecycle.gate.lexicon import Lexicon
from frozen_lifecycle.gate.python_rules import PythonRules
from frozen_lifecycle.gate.sql import SqlRules
from frozen_lifecycle.gate.text_rules import TextRules
from frozen_lifecycle.graph import Graph, build_graph, load_graph

GRAPH = load_graph(STARTER_FIXTURE)


def _with_scheduler() -> Graph:
    """The case study's graph and one more actor, whose one edge queued -> failed makes edges
    into failed belong to two actors, and leaves an actor that no edge from running has."""
    document = json.loads(STARTER_FIXTURE.read_text(encoding="utf-8"))
    document["transitions"].append({"from": "queued", "to": "failed", "actor": "scheduler"})
    return build_graph(document)


SCHEDULER = _with_scheduler()

Found = list[tuple[int, str, str]]


# The rules are built inside each test, from the graph, so that what builds them is tested too.
def python_findings(source: str, graph: Graph = GRAPH) -> Found:
    text = textwrap.dedent(source).lstrip("\n")
    facts = PythonRules(Lexicon.of(graph)).check(ast.parse(text), text)
    return sorted((hit.line, hit.code, hit.message) for hit in facts.hits)


def text_findings(kind: str, source: str, graph: Graph = GRAPH) -> Found:
    text = textwrap.dedent(source).lstrip("\n")
    facts = TextRules(Lexicon.of(graph)).check(kind, text)
    return sorted((h.line, h.code, h.message) for h in facts.hits)


def defines_states(source: str) -> bool:
    text = textwrap.dedent(source).lstrip("\n")
    return PythonRules(Lexicon.of(GRAPH)).check(ast.parse(text), text).states_defined


# -- STATES in Python ---------------------------------------------------------------------------

LACKS_THREE = "STATES lacks fixture state(s) canceled, failed, succeeded"


@pytest.mark.parametrize(
    "source",
    [
        'STATES = ("queued", "running", "paused")',
        'STATES: tuple[str, ...] = ("queued", "running", "paused")',
        'STATES = ["queued", "running", "paused"]',
        'STATES = {"queued", "running", "paused"}',
        'STATES = tuple(["queued", "running", "paused"])',
        'STATES = frozenset({"queued", "running", "paused"})',
        'STATES = list(("queued", "running", "paused"))',
        'STATES = set(["queued", "running", "paused"])',
    ],
    ids=["plain", "annotated", "list", "set", "tuple()", "frozenset()", "list()", "set()"],
)
def test_a_states_literal_is_told_what_it_invents_and_what_it_lacks(source: str) -> None:
    assert python_findings(source) == [
        (1, "states-drift", LACKS_THREE),
        (1, "states-drift", "STATES names 'paused', not a state in the fixture"),
    ]
    assert defines_states(source)


def test_a_plain_states_that_lists_the_fixture_passes() -> None:
    source = 'STATES = ("queued", "running", "succeeded", "failed", "canceled")'
    assert python_findings(source) == []
    assert defines_states(source)
    assert python_findings(f"STATES = tuple([{source.partition('(')[2][:-1]}])") == []


def test_a_states_listed_in_another_order_or_twice_passes() -> None:
    source = 'STATES = ("canceled", "failed", "succeeded", "running", "queued", "queued")'
    assert python_findings(source) == []


def test_states_among_several_targets_is_still_states() -> None:
    assert python_findings('STATES = SHOWN = ("queued", "running")') == [
        (1, "states-drift", LACKS_THREE)
    ]
    assert python_findings('SHOWN = STATES = ("queued", "running")') == [
        (1, "states-drift", LACKS_THREE)
    ]


def test_a_states_extended_in_place_is_states() -> None:
    assert python_findings('STATES += ("paused",)') == [
        (
            1,
            "states-drift",
            "STATES lacks fixture state(s) canceled, failed, queued, running, succeeded",
        ),
        (1, "states-drift", "STATES names 'paused', not a state in the fixture"),
    ]


@pytest.mark.parametrize(
    "source",
    [
        "STATES = tuple()",
        'STATES = tuple(["queued"], "running")',
        'STATES = sorted(["queued", "running"])',
        'STATES = wrap(["queued", "running"])',
        'STATES = ("queued", GRAPH.initial)',
        'STATES = ("queued", *OTHERS)',
        'STATES = (*GRAPH["states"],)',
    ],
    ids=["tuple() of nothing", "two arguments", "sorted()", "a call", "a name", "a splat", "a key"],
)
def test_a_states_that_is_not_a_plain_literal_is_not_told_what_it_lacks(source: str) -> None:
    """Only a literal collection (bare or in one tuple/list/set/frozenset call) lists every
    state there is; anything else may add states the gate cannot see, and is judged only by the
    words it names."""
    assert python_findings(source) == []
    assert defines_states(source)


def test_a_derived_states_that_adds_a_word_is_told_that_word() -> None:
    assert python_findings('STATES = (*GRAPH.states, "paused")') == [
        (1, "states-drift", "STATES names 'paused', not a state in the fixture")
    ]
    assert python_findings('STATES = sorted(["queued", "paused", "paused"])') == [
        (1, "states-drift", "STATES names 'paused', not a state in the fixture"),
    ]


def test_the_finding_is_on_the_line_states_starts() -> None:
    source = """
        import x

        STATES = (
            "queued",
            "paused",
        )
        """
    assert python_findings(source) == [
        (3, "states-drift", "STATES lacks fixture state(s) canceled, failed, running, succeeded"),
        (3, "states-drift", "STATES names 'paused', not a state in the fixture"),
    ]


def test_a_states_inside_a_function_or_of_another_name_is_no_states_definition() -> None:
    assert not defines_states('def f():\n    STATES = ("queued",)\n')
    assert not defines_states('ALL_STATES = ("queued",)')
    assert not defines_states("STATES: tuple[str, ...]")
    assert not defines_states('x.STATES = ("queued",)')


def test_a_states_literal_with_a_value_that_is_no_word_is_not_told_what_it_lacks() -> None:
    assert python_findings('STATES = ("queued", 1)') == []
    assert python_findings('STATES = ("queued", None, "paused")') == [
        (1, "states-drift", "STATES names 'paused', not a state in the fixture")
    ]


# -- STATES in JavaScript and TypeScript ------------------------------------------------------


def test_a_script_states_listed_by_hand_is_told_what_it_invents_and_lacks() -> None:
    source = """
        // the case study's states
        export const STATES = Object.freeze(["queued", "running", "paused", "paused"]);
        """
    assert text_findings("script", source) == [
        (2, "states-drift", LACKS_THREE),
        (2, "states-drift", "STATES names 'paused', not a state in the fixture"),
    ]


def test_a_script_states_derived_with_a_word_added_is_told_that_word_only() -> None:
    source = """
        import graph from "./graph.json";
        export const STATES = Object.freeze([...graph.states, "paused"]);
        """
    assert text_findings("script", source) == [
        (2, "states-drift", "STATES names 'paused', not a state in the fixture")
    ]


def test_a_typescript_union_or_enum_of_states_is_told_what_it_lacks_and_invents() -> None:
    assert text_findings("script", 'export type JobStatus = "queued" | "running" | "paused";') == [
        (
            1,
            "states-drift",
            "the type JobStatus lacks fixture state(s) canceled, failed, succeeded",
        ),
        (1, "states-invented", "the type JobStatus names 'paused', not a state in the fixture"),
    ]
    assert text_findings("script", 'enum JobState { Queued = "queued", Paused = "paused" }') == [
        (
            1,
            "states-drift",
            "the enum JobState lacks fixture state(s) canceled, failed, running, succeeded",
        ),
        (1, "states-invented", "the enum JobState names 'paused', not a state in the fixture"),
    ]


# -- the vocabulary: quoted aliases, status words in SQL and prose -----------------------------


def test_an_alias_in_back_quotes_alone_is_found() -> None:
    assert python_findings('x = 1\nhelp = "run `cleanup` later"\n') == [
        (2, "forbidden-alias", '"cleanup" is a forbidden status alias')
    ]


def test_sql_words_in_any_text_are_named_in_the_message() -> None:
    text = """
        # notes on the queries we run by hand
        --   where STATUS = 'archived'
        --   where status in ('queued', 'parked')
        --   where change_actor = 'robot'
        """
    assert text_findings("text", text) == [
        (2, "unknown-status", "'archived' in SQL is not a state in the fixture"),
        (3, "unknown-status", "'parked' in SQL is not a state in the fixture"),
        (4, "wrong-actor", "'robot' is not an actor of the fixture"),
    ]


def test_sql_words_that_are_the_fixtures_pass_in_any_text() -> None:
    text = """
        --   where STATUS = 'queued' and status in ('running', 'failed')
        --   where change_actor = 'worker' or change_actor = ''
        """
    assert text_findings("text", text) == []


def test_status_given_in_prose_or_as_a_label_is_named_in_the_message() -> None:
    text = """
        [alerts]
        expr = 'jobs{status="archived"} > 0'   # status="queued" is fine
        log = "job 7 status=parked, then status=running"
        """
    assert text_findings("text", text) == [
        (2, "unknown-status", "'archived' given to a status is not a state in the fixture"),
        (3, "unknown-status", "'parked' as status= in text is not a state in the fixture"),
    ]


# -- moves: the edges and their actors ----------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        'lifecycle.apply_transition(job, "canceled")',
        'self.store.apply_transition(job, "canceled", actor="worker")',
        'apply_transition(job, to_status="canceled")',
        'jobs.apply_transition(job=job, actor="worker", to_status="canceled")',
        'apply_transition(job, "canceled", "worker")',
    ],
    ids=["through a module", "a method, actor by keyword", "to_status=", "all keywords", "plain"],
)
def test_apply_transition_in_any_call_form_is_checked_against_the_edges(source: str) -> None:
    assert python_findings(source) == [
        (1, "wrong-actor", "every edge into canceled belongs to user, not worker")
    ]


@pytest.mark.parametrize(
    "source",
    [
        'lifecycle.apply_transition(job, "canceled", "user")',
        'apply_transition(job, to_status="canceled", actor="user")',
        'jobs.apply_transition(job=job, actor="user", to_status="canceled")',
        "apply_transition(job, to_status=outcome)",
    ],
)
def test_apply_transition_along_an_edge_passes_in_any_call_form(source: str) -> None:
    assert python_findings(source) == []


def test_apply_transition_to_a_word_that_is_not_a_state_is_an_unknown_status() -> None:
    assert python_findings('store.apply_transition(job, to_status="archived")') == [
        (1, "unknown-status", "'archived' passed as to_status= is not a state in the fixture")
    ]


def test_a_move_into_a_state_no_edge_reaches_is_named() -> None:
    assert python_findings('lifecycle.apply_transition(job, "queued", "user")') == [
        (1, "undeclared-edge", "no edge of the fixture leads to queued")
    ]


def test_a_move_between_two_named_states_is_named() -> None:
    assert python_findings('check_transition("failed", "queued", "user")') == [
        (1, "undeclared-edge", "failed -> queued is not an edge of the fixture")
    ]
    assert python_findings(
        'check_transition(from_status="running", to_status="canceled", actor="worker")'
    ) == [(1, "wrong-actor", "running -> canceled belongs to actor user, not worker")]


def test_a_move_out_of_a_terminal_state_is_named() -> None:
    assert python_findings('check_transition("succeeded", to_status, "worker")') == [
        (1, "undeclared-edge", "succeeded is terminal: no edge of the fixture leaves it")
    ]


def test_an_actor_that_is_not_the_fixtures_is_named_once() -> None:
    assert python_findings('check_transition("running", "succeeded", "robot")') == [
        (1, "wrong-actor", "'robot' is not an actor of the fixture")
    ]


def test_an_empty_actor_is_no_actor_named() -> None:
    """The database refuses a change without its actor; the gate leaves it to the database."""
    assert python_findings('check_transition("running", "succeeded", "")') == []
    assert python_findings('check_transition("running", "canceled", "")') == []


def test_a_move_to_a_state_and_back_to_itself_is_no_move() -> None:
    assert python_findings('check_transition("running", ("running", "queued"), "worker")') == [
        (1, "undeclared-edge", "running -> queued is not an edge of the fixture")
    ]
    assert python_findings('check_transition("running", "running", "worker")') == []


def test_the_actors_of_several_edges_are_listed() -> None:
    assert python_findings('apply_transition(job, "failed", "user")', SCHEDULER) == [
        (1, "wrong-actor", "every edge into failed belongs to scheduler, worker, not user")
    ]
    assert python_findings('check_transition("running", to_status, "scheduler")', SCHEDULER) == [
        (1, "wrong-actor", "every edge from running belongs to user, worker, not scheduler")
    ]
    assert python_findings('check_transition("running", to_status, "user")', SCHEDULER) == []


def test_a_move_from_a_named_state_without_an_actor_passes() -> None:
    assert python_findings('check_transition("running", to_status)', SCHEDULER) == []
    assert python_findings('check_transition("queued", "failed")', SCHEDULER) == []


# -- words that read as statuses ------------------------------------------------------------------


def test_words_that_read_as_statuses_beside_states_are_invented() -> None:
    """A status word, a participle, an alias; not an actor, a side effect or a reason."""
    source = (
        'ok = ("queued", "running", "idle", "draining", "worker", "emit_failed_webhook",'
        ' "lease_expired")'
    )
    assert python_findings(source) == [
        (
            1,
            "states-invented",
            "a collection of states names 'draining', not a state in the fixture",
        ),
        (1, "states-invented", "a collection of states names 'idle', not a state in the fixture"),
    ]
    assert Lexicon.of(GRAPH).status_like(GRAPH.forbidden_aliases[0])


def test_beside_a_lone_state_only_a_status_word_or_an_alias_is_invented() -> None:
    """One word shared with another vocabulary is no collection of states: a schedule's
    counters (`firing`, `paused`, `ended`) once failed a lifecycle change that added `paused`."""
    source = 'ok = ("queued", "idle", "draining", "firings")'
    assert python_findings(source) == [
        (1, "states-invented", "a collection of states names 'idle', not a state in the fixture"),
    ]
    assert python_findings('totals = ("firing", "queued", "ended", "firing_jobs")') == []


def test_an_actor_or_a_side_effect_that_reads_as_a_status_is_neither() -> None:
    document = json.loads(STARTER_FIXTURE.read_text(encoding="utf-8"))
    document["transitions"].append({"from": "queued", "to": "failed", "actor": "scheduling"})
    document["side_effects"]["failed"].append("billing")
    graph = build_graph(document)
    assert python_findings('ok = ("queued", "scheduling", "billing", "stalled")', graph) == [
        (1, "states-invented", "a collection of states names 'stalled', not a state in the fixture")
    ]


def test_a_status_column_written_in_capitals_is_read_in_any_text() -> None:
    assert text_findings("text", "# by hand:\n--   WHERE STATUS = 'archived'\n") == [
        (2, "unknown-status", "'archived' in SQL is not a state in the fixture")
    ]


def test_a_job_created_in_another_state_is_told_the_initial_one() -> None:
    assert python_findings('store.jobs.create_job(new, status="running")') == [
        (1, "not-initial", "a job is created in 'queued', not 'running'")
    ]
    assert text_findings("sql", "INSERT INTO jobs (owner, status)\nVALUES ('a', 'failed');") == [
        (2, "not-initial", "a job is created in 'queued', not 'failed'")
    ]


# -- SQL ------------------------------------------------------------------------------------------

BLIND_WRITE = (
    "no source state: the status is set with no `status = ...` in the WHERE naming the state "
    "the row must be in (a blind write)"
)

SQL_MESSAGES = {
    "the results of a CASE are the targets": (
        """
        -- a first line
        UPDATE jobs
           SET status = CASE WHEN ok THEN 'succeeded' ELSE 'queued' END,
               change_actor = 'worker'
         WHERE status = 'running';
        """,
        [(3, "undeclared-edge", "running -> queued is not an edge of the fixture")],
    ),
    "a CASE in lower case": (
        "UPDATE jobs SET status = case when ok then 'succeeded' end, change_actor = 'worker'"
        " WHERE status = 'queued';",
        [(1, "undeclared-edge", "queued -> succeeded is not an edge of the fixture")],
    ),
    "a parameter leaving a terminal state": (
        "UPDATE jobs SET status = :to, change_actor = 'worker' WHERE status = 'succeeded';",
        [(1, "undeclared-edge", "succeeded is terminal: no edge of the fixture leaves it")],
    ),
    "sources compared and listed": (
        "UPDATE jobs SET status = 'failed', change_actor = 'worker'\n"
        " WHERE status = 'succeeded' OR status IN ('running');",
        [(1, "undeclared-edge", "succeeded -> failed is not an edge of the fixture")],
    ),
    "a list of states the row is not in names no source": (
        "UPDATE jobs SET status = 'failed', change_actor = 'worker'\n"
        " WHERE status NOT IN ('running') AND status = 'queued';",
        [(1, "undeclared-edge", "queued -> failed is not an edge of the fixture")],
    ),
    "a blind write, found where its SET is": (
        "select 1;\nUPDATE jobs\n   SET status = 'failed', change_actor = 'worker'\n"
        " WHERE id = :id;",
        [(3, "no-source-state", BLIND_WRITE)],
    ),
    "rows inserted, into jobs only": (
        "INSERT INTO job_states (status) VALUES ('running');\n"
        'INSERT INTO jobs (owner, "Status")\n'
        "VALUES ('a', 'archived'), ('b', 'queued'),\n       ('c', 'running');",
        [
            (
                3,
                "unknown-status",
                "'archived' inserted as a job's status is not a state in the fixture",
            ),
            (4, "not-initial", "a job is created in 'queued', not 'running'"),
        ],
    ),
    "inserts without a literal status": (
        "INSERT INTO jobs (status) VALUES (:s);\n"
        "INSERT INTO jobs (owner) VALUES ('running');\n"
        "INSERT INTO jobs (owner, status) VALUES ('a');\n"
        "INSERT INTO jobs (owner, status)\nSELECT owner, 'failed' FROM jobs WHERE id = 1;",
        [(5, "not-initial", "a job is created in 'queued', not 'failed'")],
    ),
    "a CASE on the status": (
        "SELECT CASE status WHEN 'queued' THEN 1\n  WHEN 'paused' THEN 2 END FROM jobs;",
        [
            (
                2,
                "unknown-status",
                "'paused' compared with a status by CASE is not a state in the fixture",
            )
        ],
    ),
    "CASE results given to an actor and a status": (
        "SELECT CASE WHEN x THEN 'robot' ELSE 'worker' END AS change_actor,\n"
        "       CASE WHEN y THEN 'paused'\n  END AS job_status FROM jobs;",
        [
            (1, "wrong-actor", "'robot' is not an actor of the fixture"),
            (
                2,
                "unknown-status",
                "'paused' given to job_status by CASE is not a state in the fixture",
            ),
        ],
    ),
    "a CASE in parentheses": (
        "UPDATE jobs SET status = (CASE WHEN x THEN 'paused' END) WHERE status = 'running';",
        [(1, "unknown-status", "'paused' given to status by CASE is not a state in the fixture")],
    ),
    "enum types": (
        "CREATE TYPE job_status AS ENUM ('queued', 'running', 'paused');\n"
        "CREATE TYPE colour AS ENUM ('red', 'green');\n"
        "ALTER TYPE job_status ADD VALUE 'paused';\n"
        "ALTER TYPE colour ADD VALUE 'blue';\n"
        "ALTER TYPE job_state ADD VALUE IF NOT EXISTS 'queued';\n"
        "ALTER TYPE \"Job_Status\" ADD VALUE 'held';",
        [
            (
                1,
                "states-invented",
                "the enum type job_status names 'paused', not a state in the fixture",
            ),
            (3, "states-invented", "the enum type job_status gains 'paused', not a state"),
            (6, "states-invented", "the enum type \"Job_Status\" gains 'held', not a state"),
        ],
    ),
    "IN lists of other columns": (
        "SELECT * FROM t WHERE phase IN ('queued', 'stalled', 'csv');\n"
        "SELECT * FROM t WHERE phase NOT IN ('queued', 'csv');\n"
        "SELECT * FROM t WHERE t.status IN ('queued', 'running');",
        [
            (
                1,
                "states-invented",
                "a list of states in SQL names 'stalled', not a state in the fixture",
            )
        ],
    ),
}


@pytest.mark.parametrize(("sql", "expected"), SQL_MESSAGES.values(), ids=SQL_MESSAGES.keys())
def test_sql_findings_name_what_drifts(sql: str, expected: Found) -> None:
    assert text_findings("sql", sql) == expected


@pytest.mark.parametrize(("sql", "expected"), SQL_MESSAGES.values(), ids=SQL_MESSAGES.keys())
def test_sql_rules_alone_number_their_own_lines(sql: str, expected: Found) -> None:
    text = textwrap.dedent(sql).lstrip("\n")
    hits = SqlRules(Lexicon.of(GRAPH)).check(text)
    assert sorted((h.line, h.code, h.message) for h in hits) == expected


NOT_RUNNING = "a job is created in 'queued', not 'running'"
PAUSED_BY_CASE = "'paused' given to status by CASE is not a state in the fixture"

SQL_READING = {
    "comments hold no SQL and keep the lines": (
        "/* a comment over\n   two lines: status = 'running' */ -- and status = 'running'\n"
        "UPDATE jobs SET status = 'failed' WHERE id = :id;",
        [(3, "no-source-state", BLIND_WRITE)],
    ),
    "a statement ends at its semicolon": (
        "UPDATE jobs SET status = 'failed', change_actor = 'worker' WHERE status = 'running';"
        " UPDATE jobs SET x = 1 WHERE status = 'queued';",
        [],
    ),
    "a SET clause with brackets and a quoted keyword": (
        "UPDATE jobs SET status = 'failed', meta = coalesce(meta, (SELECT m FROM d)),"
        " note = 'no WHERE here', change_actor = 'worker' WHERE status = 'queued';",
        [(1, "undeclared-edge", "queued -> failed is not an edge of the fixture")],
    ),
    "a CASE within a CASE": (
        "UPDATE jobs SET status = CASE WHEN a THEN CASE WHEN b THEN 'failed' END ELSE 'queued'"
        " END, change_actor = 'worker' WHERE status = 'running';",
        [(1, "undeclared-edge", "running -> queued is not an edge of the fixture")],
    ),
    "a CASE after another": (
        "SELECT CASE WHEN a THEN 1 END, CASE status WHEN 'paused' THEN 1 END FROM jobs;",
        [
            (
                1,
                "unknown-status",
                "'paused' compared with a status by CASE is not a state in the fixture",
            )
        ],
    ),
    "a CASE given to the status after one given to another column": (
        "UPDATE jobs SET a = CASE WHEN x THEN 'y' END, status = CASE WHEN y THEN 'paused' END"
        " WHERE status = 'running';",
        [(1, "unknown-status", PAUSED_BY_CASE)],
    ),
    "a CASE named after one that is not": (
        "SELECT CASE WHEN a THEN 'x' END, CASE WHEN b THEN 'paused' END AS status FROM jobs;",
        [(1, "unknown-status", PAUSED_BY_CASE)],
    ),
    "a CASE of states given to the status": (
        "SELECT CASE WHEN x THEN 'queued' ELSE 'running' END AS status FROM jobs;",
        [],
    ),
    "a bare fragment": (
        "status = CASE WHEN x THEN 'paused' END",
        [(1, "unknown-status", PAUSED_BY_CASE)],
    ),
    "a CASE's words on their own lines": (
        "SELECT CASE status\nWHEN 'paused' THEN 1 END,\n"
        "  CASE WHEN x\nTHEN 'paused' END AS status\nFROM jobs;",
        [
            (
                2,
                "unknown-status",
                "'paused' compared with a status by CASE is not a state in the fixture",
            ),
            (4, "unknown-status", PAUSED_BY_CASE),
        ],
    ),
    "a CASE farther than 80 characters from its column": (
        "UPDATE jobs SET status ="
        + " " * 73
        + "CASE WHEN x THEN 'paused' END WHERE status = 'running';",
        [],
    ),
    "a CASE just within 80 characters of its column": (
        "UPDATE jobs SET status ="
        + " " * 72
        + "CASE WHEN x THEN 'paused' END WHERE status = 'running';",
        [(1, "unknown-status", PAUSED_BY_CASE)],
    ),
    "an INSERT ... SELECT without spaces": (
        "INSERT INTO jobs (owner,meta,status) SELECT owner,coalesce(a, 'x,y'),'running' FROM jobs;",
        [(1, "not-initial", NOT_RUNNING)],
    ),
    "an INSERT ... SELECT over lines": (
        "INSERT INTO jobs (owner, status)\nSELECT owner,\n'running' FROM jobs;",
        [(3, "not-initial", NOT_RUNNING)],
    ),
    "VALUES rows without spaces": (
        "INSERT INTO jobs (owner, status) VALUES ('a','queued'),('b',coalesce(x, ')'),'c'),"
        "('d','running');",
        [(1, "not-initial", NOT_RUNNING)],
    ),
    "an INSERT after one into another table": (
        "WITH x AS (INSERT INTO audit (status) VALUES ('x') RETURNING id)\n"
        "INSERT INTO jobs (owner, status) VALUES ('a', 'running');",
        [(2, "not-initial", NOT_RUNNING)],
    ),
    "an INSERT after one without a status": (
        "WITH x AS (INSERT INTO jobs (owner) VALUES ('a') RETURNING id)\n"
        "INSERT INTO jobs (owner, status) VALUES ('a', 'running');",
        [(2, "not-initial", NOT_RUNNING)],
    ),
    "a row after one holding a parameter": (
        "INSERT INTO jobs (owner, status) VALUES ('a', :s), ('b', 'running');",
        [(1, "not-initial", NOT_RUNNING)],
    ),
    "a row too short for its columns": ("INSERT INTO jobs (owner, status) VALUES ('a');", []),
    "columns without spaces": (
        "INSERT INTO jobs (owner,status) VALUES ('a', 'running');",
        [(1, "not-initial", NOT_RUNNING)],
    ),
    "an enum type of states and another word": (
        "CREATE TYPE job_status AS ENUM ('queued', 'csv');",
        [
            (
                1,
                "states-invented",
                "the enum type job_status names 'csv', not a state in the fixture",
            )
        ],
    ),
    "an IN list after a status's": (
        "SELECT * FROM t WHERE status IN ('queued') AND phase IN ('queued', 'stalled');",
        [
            (
                1,
                "states-invented",
                "a list of states in SQL names 'stalled', not a state in the fixture",
            )
        ],
    ),
}


@pytest.mark.parametrize(("sql", "expected"), SQL_READING.values(), ids=SQL_READING.keys())
def test_sql_is_read_statement_by_statement_clause_by_clause(sql: str, expected: Found) -> None:
    assert text_findings("sql", sql) == expected


# -- templates, scripts, YAML, JSON, Markdown ---------------------------------------------------


def compared(word: str) -> str:
    return f"{word!r} compared with a status is not a state in the fixture"


def test_a_templates_comparisons_are_named_on_their_lines() -> None:
    template = """
        <p>
        {% if job.status|lower == 'Stalled' %}{% elif job.status|lower == 'QUEUED' %}{% endif %}
        {{ 'x' if job.status == 'Paused' else '' }}
        {% if 'parked' == job.state %}b{% endif %}
        {% if job.status in ['queued', 'held'] %}c{% endif %}
        {% set status = 'parked' %}{% set status = 'queued' %}
        """
    assert text_findings("template", template) == [
        (2, "unknown-status", compared("Stalled")),
        (3, "unknown-status", compared("Paused")),
        (4, "unknown-status", compared("parked")),
        (5, "unknown-status", compared("held")),
        (6, "unknown-status", "'parked' in SQL is not a state in the fixture"),
        (6, "unknown-status", "'parked' set as a status is not a state in the fixture"),
    ]


def test_a_scripts_comparisons_lists_and_moves_are_named_on_their_lines() -> None:
    script = """
        // a
        if (job.status.toLowerCase() === 'QUEUED') {}
        if (job.status === 'QUEUED') {}
        ['queued', 'held'].includes(job.status);
        const WAITING = Object.freeze(['held', 'queued']);
        if (WAITING.includes(job.status)) {}
        switch (job.status) {
          case 'queued': { break; }
          case 'held': break;
        }
        const x = { status: 'held' };
        applyTransition(job, 'canceled');
        applyTransition(job, 'succeeded', 'user');
        checkTransition('running', 'canceled', 'worker');
        checkTransition('failed', 'queued');
        """
    assert text_findings("script", script) == [
        (3, "unknown-status", compared("QUEUED")),
        (4, "unknown-status", compared("held")),
        (5, "unknown-status", compared("held")),
        (9, "unknown-status", compared("held")),
        (11, "unknown-status", "'held' keyed as a status is not a state in the fixture"),
        (12, "wrong-actor", "every edge into canceled belongs to user, not worker"),
        (13, "wrong-actor", "every edge into succeeded belongs to worker, not user"),
        (14, "wrong-actor", "running -> canceled belongs to actor user, not worker"),
        (15, "undeclared-edge", "failed -> queued is not an edge of the fixture"),
    ]


def test_a_constant_array_read_for_includes_is_no_array_of_states() -> None:
    script = "const WAITING = ['queued', 'stalled'];\nif (WAITING.includes(job.status)) {}\n"
    assert text_findings("script", script) == [(1, "unknown-status", compared("stalled"))]
    unclosed = "const WAITING = ['queued', 'stalled'\nif (WAITING.includes(job.status)) {}\n"
    assert text_findings("script", unclosed) == [(1, "unknown-status", compared("stalled"))]


def test_a_script_states_over_lines_is_read_to_its_end() -> None:
    script = """
        export const STATES = Object.freeze([
          "queued", "running",
          "succeeded", "failed", "canceled", ["x"][0] === "x" ? "paused" : "queued",
        ]);
        const OTHER = ["csv", "paused"];
        """
    assert text_findings("script", script) == [
        (1, "states-drift", "STATES names 'paused', not a state in the fixture"),
        (1, "states-drift", "STATES names 'x', not a state in the fixture"),
    ]


def test_an_array_of_states_needs_two_words() -> None:
    assert text_findings("script", 'const a = ["stalled"];\nconst b = ["queued", "stalled"];') == [
        (2, "states-invented", "an array of states names 'stalled', not a state in the fixture")
    ]


def test_a_status_type_or_enum_of_other_words_is_no_states_definition() -> None:
    facts = TextRules(Lexicon.of(GRAPH)).check("script", 'type PhaseStatus = "csv" | "json";')
    assert not facts.states_defined
    assert facts.hits == []
    facts = TextRules(Lexicon.of(GRAPH)).check("script", 'type Phase = "queued" | "csv";')
    assert not facts.states_defined
    assert sorted((h.line, h.code, h.message) for h in facts.hits) == [
        (1, "states-invented", "the type Phase names 'csv', not a state in the fixture")
    ]
    facts = TextRules(Lexicon.of(GRAPH)).check("script", 'type JobState = "queued" | "running";')
    assert facts.states_defined


def test_yaml_words_are_named_with_their_keys_and_lines() -> None:
    yaml = """
        # deploy
        job_status: held   # a comment
        note: "a # not a comment"
        label: "x" # status: held
        states:
          - queued
          - held  # inline
          - held
        other: 1
        shown_states: [queued, "held", held]
        status: Yes
        phase: [queued, running, draining]
        nested:
            list:
            - queued
            - running
            - draining
          next: 1
        """
    assert text_findings("yaml", yaml) == [
        (2, "unknown-status", "'held' given to job_status is not a state in the fixture"),
        (7, "states-invented", "the list states names 'held', not a state in the fixture"),
        (10, "states-invented", "the list shown_states names 'held', not a state in the fixture"),
        (12, "states-invented", "the list phase names 'draining', not a state in the fixture"),
        (17, "states-invented", "the list list names 'draining', not a state in the fixture"),
    ]


def test_a_yaml_list_ends_where_its_indent_does() -> None:
    yaml = "states:\n  - queued\n  - running\nother:\n- held\n"
    assert text_findings("yaml", yaml) == []
    yaml = "shown:\n  - queued\n  - running\n  - stalled\n"
    assert text_findings("yaml", yaml) == [
        (4, "states-invented", "the list shown names 'stalled', not a state in the fixture")
    ]


def test_json_words_are_named_on_their_lines() -> None:
    json_text = """
        {
         "a": {"status": "held"},
         "schema": {"enum": ["queued", "held"]},
         "list": ["queued", "held", "csv"],
         "more": ["queued", "stalled"]
        }
        """
    assert text_findings("json", json_text) == [
        (2, "unknown-status", "'held' keyed as a status is not a state in the fixture"),
        (3, "states-invented", "a JSON Schema enum names 'held', not a state in the fixture"),
        (5, "states-invented", "an array of states names 'stalled', not a state in the fixture"),
    ]


TABLE_HELD = "a hand-written status table names {!r}, not a state in the fixture"


def test_a_hand_written_tables_rows_are_read_by_their_headings() -> None:
    markdown = """
        intro
        | From status | To status | Actor |
        |---|---|---|
        | running | canceled | worker |
        | `failed` | **queued** | user |
        | queued | running | robot \\| x |
        | running | succeeded |

        | Old state | New state | Actor |
        | --- | --- | --- |
        | queued | held | worker |
        | previous | target |
        ~~~
        | status | x |
        | --- | --- |
        | held | x |
        ~~~
        """
    assert text_findings("markdown", markdown) == [
        (4, "wrong-actor", "running -> canceled belongs to actor user, not worker"),
        (5, "undeclared-edge", "failed -> queued is not an edge of the fixture"),
        (11, "states-invented", TABLE_HELD.format("held")),
        (12, "states-invented", TABLE_HELD.format("previous")),
        (12, "states-invented", TABLE_HELD.format("target")),
    ]


@pytest.mark.parametrize(
    ("source", "target"),
    [("Current", "Next"), ("Previous", "Target"), ("Old", "New"), ("From", "To")],
)
def test_each_heading_of_a_move_is_read(source: str, target: str) -> None:
    markdown = f"| {source} status | {target} status |\n| --- | --- |\n| failed | running |\n"
    assert text_findings("markdown", markdown) == [
        (3, "undeclared-edge", "failed -> running is not an edge of the fixture")
    ]


def test_a_table_with_one_side_of_a_move_names_no_move() -> None:
    assert text_findings("markdown", "| Next status |\n| --- |\n| queued |\n") == []
    assert (
        text_findings("markdown", "| Status | Next |\n| --- | --- |\n| failed | queued |\n") == []
    )


def test_a_generated_region_keeps_the_lines_of_the_tables_after_it() -> None:
    markdown = """
        <!-- BEGIN GENERATED: graph-table -->
        | status | x |
        | --- | --- |
        | held | x |
        <!-- END GENERATED: graph-table -->
        | Status |
        | --- |
        | held |
        """
    assert text_findings("markdown", markdown) == [
        (8, "states-invented", TABLE_HELD.format("held"))
    ]


def test_a_table_at_the_end_of_a_file_or_without_rows_is_read() -> None:
    assert text_findings("markdown", "| Status |\n| --- |") == []
    assert text_findings("markdown", "| Status |") == []
    assert text_findings("markdown", "| Status |\n| --- |\n| held |") == [
        (3, "states-invented", TABLE_HELD.format("held"))
    ]
    assert text_findings("markdown", "| Status | Note\n| --- | ---\n| held | x") == [
        (3, "states-invented", TABLE_HELD.format("held"))
    ]


def test_sql_quoted_in_any_text_is_read_as_sql() -> None:
    text = (
        "first\n"
        "run: psql -c \"UPDATE jobs SET status = 'running', change_actor = 'user'\n"
        " WHERE status = 'queued'\"\n"
    )
    assert text_findings("yaml", text) == [
        (2, "wrong-actor", "queued -> running belongs to actor worker, not user")
    ]


# -- Python: every construct's message ---------------------------------------------------------


def names(what: str, word: str) -> str:
    return f"{what} names {word!r}, not a state in the fixture"


def unknown(word: str, how: str) -> str:
    return f"{word!r} {how} is not a state in the fixture"


PYTHON_MESSAGES = {
    "a Literal type": (
        'Pausable = Literal["queued", "running", "paused"]',
        [(1, "states-invented", names("a Literal type", "paused"))],
    ),
    "a Literal in an annotation": (
        'def f(s: Literal["queued", "unknown"]) -> None: ...',
        [(1, "states-invented", names("a Literal type", "unknown"))],
    ),
    "a StrEnum of any name": (
        'class Phase(StrEnum):\n    QUEUED = "queued"\n    STALLED = "stalled"\n',
        [(3, "states-invented", names("the enum Phase", "stalled"))],
    ),
    "a str Enum": (
        'class Phase(str, Enum):\n    RUNNING = "running"\n    DRAINING = "draining"\n',
        [(3, "states-invented", names("the enum Phase", "draining"))],
    ),
    "an enum of auto() names": (
        "class Phase(StrEnum):\n    QUEUED = auto()\n    STALLED = auto()\n",
        [(3, "states-invented", names("the enum Phase", "stalled"))],
    ),
    "a class of constants": (
        'class Lifecycle:\n    RUNNING = "running"\n    EXPIRED = "expired"\n',
        [(3, "states-invented", names("the class Lifecycle", "expired"))],
    ),
    "a list mixing states": (
        'LABELS = ["queued", "running", "expired"]',
        [(1, "states-invented", names("a collection of states", "expired"))],
    ),
    "a set mixing states": (
        'ACTIVE = {"queued", "blocked"}',
        [(1, "states-invented", names("a collection of states", "blocked"))],
    ),
    "a frozenset named for states": (
        'ACTIVE_STATES = frozenset({"queued", "csv"})',
        [(1, "states-invented", names("ACTIVE_STATES", "csv"))],
    ),
    "a splat of the fixture's states": (
        'CHOICES = (*graph.states, "paused")',
        [(1, "states-invented", names("the fixture's states, splatted,", "paused"))],
    ),
    "a splat in a list": (
        'CHOICES = [*STATES, "paused"]',
        [(1, "states-invented", names("the fixture's states, splatted,", "paused"))],
    ),
    "a concatenation": (
        'LISTABLE = STATES + ("archived",)',
        [(1, "states-invented", names("the fixture's states, extended,", "archived"))],
    ),
    "a union of sets": (
        'SHOWN = set(TERMINAL) | {"archived"}',
        [(1, "states-invented", names("the fixture's states, extended,", "archived"))],
    ),
    "an append": (
        'SHOWN_STATES.append("archived")',
        [(1, "states-invented", names("the fixture's states, extended,", "archived"))],
    ),
    "a JSON Schema enum": (
        'Field(json_schema_extra={"enum": ["queued", "expired"]})',
        [(1, "states-invented", names("a JSON Schema enum", "expired"))],
    ),
    "mapping keys": (
        'COLOURS = {"queued": "grey", "stalled": "red"}',
        [(1, "states-invented", names("a mapping", "stalled"))],
    ),
    "a local passed on": (
        'def f():\n    state = "stalled"\n    return JobFilter(status=state)\n',
        [(2, "unknown-status", unknown("stalled", "passed as status="))],
    ),
    ".get('status')": (
        'ok = job.get("status") == "stalled"',
        [(1, "unknown-status", unknown("stalled", "compared with a status"))],
    ),
    ".lower()": (
        'ok = status.lower() in ("failed", "aborted")',
        [(1, "unknown-status", unknown("aborted", "compared with a status"))],
    ),
    ".upper()": (
        'ok = job.status.upper() == "EXPIRED"',
        [(1, "unknown-status", unknown("EXPIRED", "compared with a status"))],
    ),
    "str() and .strip()": (
        'ok = str(job["status"]).strip() == "stuck"',
        [(1, "unknown-status", unknown("stuck", "compared with a status"))],
    ),
    "getattr": (
        'ok = getattr(job, "status", None) == "blocked"',
        [(1, "unknown-status", unknown("blocked", "compared with a status"))],
    ),
    "a module constant": (
        'PARKED = ("stalled", "parked")\n\ndef f(job):\n    return job.status in PARKED\n',
        [
            (1, "unknown-status", unknown("parked", "compared with a status")),
            (1, "unknown-status", unknown("stalled", "compared with a status")),
        ],
    ),
    "a key named state": (
        'ok = row["state"] == "blocked"',
        [(1, "unknown-status", unknown("blocked", "compared with a status"))],
    ),
    "match on a lowered status": (
        'match job.status.lower():\n    case "stalled":\n        pass\n',
        [(2, "unknown-status", unknown("stalled", "matched as a status"))],
    ),
    "prose in an f-string": (
        'log.info(f"job {job_id} status=stalled attempt={n}")',
        [(1, "unknown-status", unknown("stalled", "as status= in text"))],
    ),
    "a default": (
        'def f(status="paused"): ...',
        [(1, "unknown-status", unknown("paused", "the default of status"))],
    ),
    "a tuple compared element-wise": (
        'ok = (job.status, job.error_code) == ("stalled", None)',
        [(1, "unknown-status", unknown("stalled", "compared with a status"))],
    ),
    "a local, past a nested function that names nothing the rules read": (
        (
            "def f(job):\n"
            '    word = "stalled"\n'
            "\n"
            "    def helper(x):\n"
            "        return x + 1\n"
            "\n"
            "    return job.status == helper(0) or job.status == word\n"
        ),
        [(2, "unknown-status", unknown("stalled", "compared with a status"))],
    ),
    "a module constant that names nothing the rules read, in a class": (
        (
            'PARKED = "parked"\n'
            "\n"
            "class Plain:\n"
            "    def double(self, x):\n"
            "        return 2 * x\n"
            "\n"
            "    def check(self, job):\n"
            "        return job.status == PARKED\n"
        ),
        [(1, "unknown-status", unknown("parked", "compared with a status"))],
    ),
    "a Literal of one word": (
        'Pausable = Literal["stalled"]\nOther = Literal["queued", "csv"]',
        [(2, "states-invented", names("a Literal type", "csv"))],
    ),
    "an enum in a module": (
        (
            "import enum\n"
            "\n"
            "class JobPhase(enum.StrEnum):\n"
            '    QUEUED = "queued"\n'
            '    HELD = "held"\n'
            '    HELD_AGAIN = "held"\n'
        ),
        [(5, "states-invented", names("the enum JobPhase", "held"))],
    ),
    "a mapping that also names a status key": (
        (
            'M = {"queued": 1, "held": 2, "stalled": 3}\n'
            'P = {"status": "held", **other}\n'
            'Q = {"enum": ("queued", "csv")}'
        ),
        [
            (1, "states-invented", names("a mapping", "stalled")),
            (2, "unknown-status", unknown("held", "keyed as a status")),
            (3, "states-invented", names("a JSON Schema enum", "csv")),
        ],
    ),
    "a table keyed by side effects": (
        'NOTES = {\n    "write_csv_object": "checked",\n    "notify_slack": "sent",\n}',
        [
            (
                3,
                "effect-handlers",
                "a table keyed by side effects names 'notify_slack', not one of the fixture's",
            )
        ],
    ),
    "compare chains": (
        (
            'ok = "stalled" == job.status\n'
            'ok = job.status != "held"\n'
            'ok = job.status in {"queued", "held"}\n'
            'ok = "x" < job.status == "held"'
        ),
        [
            (1, "unknown-status", unknown("stalled", "compared with a status")),
            (2, "unknown-status", unknown("held", "compared with a status")),
            (3, "unknown-status", unknown("held", "compared with a status")),
            (4, "unknown-status", unknown("held", "compared with a status")),
            (4, "unknown-status", unknown("x", "compared with a status")),
        ],
    ),
    "assigned and passed": (
        (
            'job.status = "held"\n'
            'row["status"] = "held"\n'
            'f(status="held")\n'
            'status: str = "held"\n'
            'status += "held"'
        ),
        [
            (1, "unknown-status", unknown("held", "assigned to a status")),
            (2, "unknown-status", unknown("held", "assigned to a status")),
            (3, "unknown-status", unknown("held", "passed as status=")),
            (4, "unknown-status", unknown("held", "assigned to a status")),
            (5, "unknown-status", unknown("held", "assigned to a status")),
        ],
    ),
    "a transition target": (
        'can_transition("held", "queued")\ncheck_transition(job.status, "held", "user")',
        [
            (1, "unknown-status", unknown("held", "a transition target")),
            (2, "unknown-status", unknown("held", "a transition target")),
        ],
    ),
    "extended": (
        (
            'STATES.append("held")\n'
            'STATES.extend(["queued", "held"])\n'
            'TERMINAL.add("held")\n'
            'graph.states.insert(0, "held")\n'
            'SHOWN = set(TERMINAL) | {"held"}'
        ),
        [
            (1, "states-invented", names("the fixture's states, extended,", "held")),
            (2, "states-invented", names("the fixture's states, extended,", "held")),
            (3, "states-invented", names("the fixture's states, extended,", "held")),
            (4, "states-invented", names("the fixture's states, extended,", "held")),
            (5, "states-invented", names("the fixture's states, extended,", "held")),
        ],
    ),
}


@pytest.mark.parametrize(
    ("source", "expected"), PYTHON_MESSAGES.values(), ids=PYTHON_MESSAGES.keys()
)
def test_each_python_construct_is_named_in_its_message_on_its_line(
    source: str, expected: Found
) -> None:
    assert python_findings(source) == expected
