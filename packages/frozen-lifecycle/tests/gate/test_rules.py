"""The gate's rules, one behaviour per case: what each finds, and what it leaves alone.

Each case is a snippet and the (line, code) pairs the rules must report for it, nothing more.
"""

from __future__ import annotations

import ast

import pytest
from snippets import LEXICON, python_hits, text_hits

from frozen_lifecycle.gate.lexicon import (
    FORBIDDEN_ALIAS,
    NO_SOURCE_STATE,
    NOT_INITIAL,
    STATES_INVENTED,
    UNDECLARED_EDGE,
    UNKNOWN_STATUS,
    WRONG_ACTOR,
)
from frozen_lifecycle.gate.python_rules import EFFECT_HANDLERS, PythonRules
from frozen_lifecycle.gate.sources import JSON, MARKDOWN, SCRIPT, SQL, TEMPLATE, TEXT, YAML
from frozen_lifecycle.gate.states import STATES_DRIFT
from frozen_lifecycle.gate.text_rules import TextRules

# -- Python: constructs that hold states --------------------------------------------------------

STATES_IN_PYTHON = {
    "a Literal type": 'Pausable = Literal["queued", "running", "paused"]',
    "a Literal in an annotation": 'def f(s: Literal["queued", "unknown"]) -> None: ...',
    "a StrEnum of any name": """
        class Phase(StrEnum):
            QUEUED = "queued"
            STALLED = "stalled"
        """,
    "a str Enum": """
        class Phase(str, Enum):
            RUNNING = "running"
            DRAINING = "draining"
        """,
    "an enum of auto() names": """
        class Phase(StrEnum):
            QUEUED = auto()
            STALLED = auto()
        """,
    "a class of constants": """
        class Lifecycle:
            RUNNING = "running"
            EXPIRED = "expired"
        """,
    "a list mixing states": 'LABELS = ["queued", "running", "expired"]',
    "a set mixing states": 'ACTIVE = {"queued", "blocked"}',
    "a frozenset named for states": 'ACTIVE_STATES = frozenset({"queued", "csv"})',
    "a splat of the fixture's states": 'CHOICES = (*graph.states, "paused")',
    "a splat in a list": 'CHOICES = [*STATES, "paused"]',
    "a concatenation": 'LISTABLE = STATES + ("archived",)',
    "a union of sets": 'SHOWN = set(TERMINAL) | {"archived"}',
    "an append": 'SHOWN_STATES.append("archived")',
    "a JSON Schema enum": 'Field(json_schema_extra={"enum": ["queued", "expired"]})',
    "mapping keys": 'COLOURS = {"queued": "grey", "stalled": "red"}',
}


@pytest.mark.parametrize("source", STATES_IN_PYTHON.values(), ids=STATES_IN_PYTHON.keys())
def test_a_construct_that_holds_states_and_another_word_is_found(source: str) -> None:
    assert {code for _, code in python_hits(source)} == {STATES_INVENTED}


@pytest.mark.parametrize(
    "source",
    [
        'ProcessRole = Literal["serve", "worker", "effects"]',
        'Compression = Literal["none", "gzip"]',
        'TRIPLE = ("queued", "running", "worker")',
        'PAIR = ("failed", "lease_expired")  # a state and a reason',
        "CHOICES = (*graph.states,)",
        'OK = STATES + ("queued",)',
        """
        class Compression(StrEnum):
            NONE = "none"
            GZIP = "gzip"
        """,
        """
        @dataclass
        class Settings:
            kind: str = "worker"
            level: str = "info"
        """,
        'assert (job.status, job.error_code) == ("failed", "lease_expired")',
        'COLOURS = {"queued": "grey", "running": "blue"}',
    ],
)
def test_states_with_other_kinds_of_words_are_fine(source: str) -> None:
    assert python_hits(source) == []


def test_a_module_level_states_must_be_the_fixtures() -> None:
    assert python_hits('STATES = ("queued", "running", "paused")') == [(1, STATES_DRIFT)]
    assert python_hits("STATES = GRAPH.states") == []
    facts = PythonRules(LEXICON).check(ast.parse("STATES = GRAPH.states"))
    assert facts.states_defined


def test_states_read_from_the_fixtures_json_by_key_are_derived() -> None:
    """`GRAPH["states"]` reads the states out of the fixture: the key is no state of its own;
    a word added beside them still is."""
    assert python_hits('STATES = tuple(GRAPH["states"])') == []
    assert python_hits('STATES = (*GRAPH["states"], "paused")') == [(1, STATES_DRIFT)]


# -- Python: status words reached through names -----------------------------------------------

STATUS_THROUGH_NAMES = {
    "a local passed on": """
        def f():
            state = "stalled"
            return JobFilter(status=state)
        """,
    ".get('status')": 'ok = job.get("status") == "stalled"',
    ".lower()": 'ok = status.lower() in ("failed", "aborted")',
    ".upper()": 'ok = job.status.upper() == "EXPIRED"',
    "str() and .strip()": 'ok = str(job["status"]).strip() == "stuck"',
    "getattr": 'ok = getattr(job, "status", None) == "blocked"',
    "a module constant": """
        PARKED = ("stalled", "parked")

        def f(job):
            return job.status in PARKED
        """,
    "a key named state": 'ok = row["state"] == "blocked"',
    "match on a lowered status": """
        match job.status.lower():
            case "stalled":
                pass
        """,
    "prose in an f-string": 'log.info(f"job {job_id} status=stalled attempt={n}")',
    "a default": 'def f(status="paused"): ...',
    "a tuple compared element-wise": 'ok = (job.status, job.error_code) == ("stalled", None)',
    "a local, past a nested function that names nothing the rules read": """
        def f(job):
            word = "stalled"

            def helper(x):
                return x + 1

            return job.status == helper(0) or job.status == word
        """,
    "a module constant that names nothing the rules read, in a class": """
        PARKED = "parked"

        class Plain:
            def double(self, x):
                return 2 * x

            def check(self, job):
                return job.status == PARKED
        """,
}


@pytest.mark.parametrize("source", STATUS_THROUGH_NAMES.values(), ids=STATUS_THROUGH_NAMES.keys())
def test_a_word_that_reaches_a_status_through_a_name_is_found(source: str) -> None:
    assert {code for _, code in python_hits(source)} == {UNKNOWN_STATUS}


def test_the_finding_points_at_the_word() -> None:
    source = """
        PARKED = (
            "stalled",
        )

        def f(job):
            return job.status in PARKED
        """
    assert python_hits(source) == [(2, UNKNOWN_STATUS)]


@pytest.mark.parametrize(
    "source",
    [
        'ok = job.status.upper() == "QUEUED"',
        'ok = job.get("status") in ("queued", "running")',
        'ok = "run" in job.status  # a substring test',
        "ok = response.status_code == 206",
        "state = secrets.token_urlsafe(16)",
        'def f(status: str = ""): ...',
        'log.info("job %s status=%s", job.id, job.status)',
        'log.info(f"job {job.id} status={job.status}")',
    ],
)
def test_fixture_states_and_unrelated_names_pass(source: str) -> None:
    assert python_hits(source) == []


# -- Python: edges, actors, the initial state, handlers ---------------------------------------


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ('apply_transition(job, "canceled", "worker")', WRONG_ACTOR),
        ('apply_transition(job, "canceled")', WRONG_ACTOR),  # the case study's default actor
        ('apply_transition(job, "running", "user")', WRONG_ACTOR),
        ('apply_transition(job, "queued", "user")', UNDECLARED_EDGE),
        ('check_transition("failed", "queued", "user")', UNDECLARED_EDGE),
        ('check_transition("running", "canceled", "worker")', WRONG_ACTOR),
        ('check_transition("succeeded", to_status, "worker")', UNDECLARED_EDGE),
        ('Move(from_status="failed", to_status="queued", actor="user")', UNDECLARED_EDGE),
        ('Move(from_status="queued", to_status="running", actor="robot")', WRONG_ACTOR),
        ('store.jobs.create_job(new, status="running")', NOT_INITIAL),
        ('NewJob(owner="a", status="failed")', NOT_INITIAL),
    ],
)
def test_a_move_the_fixture_does_not_declare_is_found(source: str, code: str) -> None:
    assert python_hits(source) == [(1, code)]


@pytest.mark.parametrize(
    "source",
    [
        'apply_transition(job, "canceled", "user")',
        'apply_transition(job, "running")',
        'check_transition(job.status, "canceled", "user")',
        'check_transition("running", outcome.to_status, "worker")',
        'Move(from_status="queued", to_status="running", actor="worker")',
        "HistoryEntry(from_status=h.from_status, to_status=h.to_status, actor=h.actor)",
        'store.jobs.create_job(new, status="queued")',
        'can_transition("succeeded", "running")  # asking is fine',
    ],
)
def test_declared_moves_pass(source: str) -> None:
    assert python_hits(source) == []


@pytest.mark.parametrize(
    "source",
    [
        'HANDLERS["emit_stalled_webhook"] = emit_stalled_webhook',
        'HANDLERS.update({"emit_retry_webhook": handler})',
        "HANDLERS.update(emit_retry_webhook=handler)",
        'HANDLERS.setdefault("emit_retry_webhook", handler)',
        'EXTRA_HANDLERS = {"write_csv_object": a, "notify_slack": b}',
        "@side_effect_handler\ndef emit_stalled_webhook(ctx, job, effect): ...",
    ],
)
def test_handlers_are_gathered_in_any_form(source: str) -> None:
    facts = PythonRules(LEXICON).check(ast.parse(source), source)
    assert facts.handlers
    assert any(name not in LEXICON.effects for name, _ in facts.handlers)


def test_a_table_keyed_by_side_effects_names_only_side_effects() -> None:
    source = 'NOTES = {"write_csv_object": "checked", "notify_slack": "sent"}'
    assert python_hits(source) == [(1, EFFECT_HANDLERS)]


def test_sql_in_a_python_string_is_read_statement_by_statement() -> None:
    source = '''
        QUERY = """
            UPDATE jobs
               SET status = 'canceled', change_actor = 'worker'
             WHERE id = :id AND status = 'running'
        """
        '''
    assert python_hits(source) == [(3, WRONG_ACTOR)]


def test_a_blind_status_write_built_in_an_f_string_is_found() -> None:
    source = """
        def give_up(conn, job_id):
            conn.execute(
                f"UPDATE jobs SET status = 'failed', change_actor = 'worker' WHERE id = {job_id}"
            )
        """
    assert python_hits(source) == [(3, NO_SOURCE_STATE)]


def test_the_parts_of_a_concatenated_string_keep_their_lines() -> None:
    source = """
        SCRIPT = (
            "SELECT 1;\\n"
            # a comment between the parts
            "UPDATE jobs SET status = 'stalled';\\n"
        )
        """
    assert python_hits(source) == [(4, UNKNOWN_STATUS)]


def test_an_alias_in_a_string_on_one_line_stays_on_that_line() -> None:
    assert python_hits("X = '\\nSTATES = (*STATES, \"retrying\")\\n'") == [(1, FORBIDDEN_ALIAS)]


# -- SQL ------------------------------------------------------------------------------------------

SQL_CASES = {
    "the worker cancels": (
        "UPDATE jobs SET status = 'canceled', change_actor = 'worker'\n"
        " WHERE id = :id AND status = 'running';",
        [(1, WRONG_ACTOR)],
    ),
    "a terminal state reopened": (
        "UPDATE jobs SET status = 'running', change_actor = 'worker' WHERE status = 'succeeded';",
        [(1, UNDECLARED_EDGE)],
    ),
    "an IN list of sources": (
        "UPDATE jobs SET status = 'running', change_actor = 'worker'\n"
        " WHERE status IN ('queued', 'failed');",
        [(1, UNDECLARED_EDGE)],
    ),
    "a guard in a CTE": (
        "WITH picked AS (SELECT id FROM jobs WHERE status = 'failed')\n"
        "UPDATE jobs SET status = 'queued', change_actor = 'user'\n"
        " WHERE id IN (SELECT id FROM picked);",
        [(2, UNDECLARED_EDGE)],
    ),
    "a blind write: no source state": (
        "UPDATE jobs SET status = 'failed', change_actor = 'worker' WHERE id = :id;",
        [(1, NO_SOURCE_STATE)],
    ),
    "a blind write with driver parameters": (
        "UPDATE jobs\n   SET status = %(to_status)s, change_actor = 'worker'\n WHERE id = %(id)s;",
        [(2, NO_SOURCE_STATE)],
    ),
    "a blind write guarded only against the terminal states": (
        "UPDATE jobs SET status = 'failed', change_actor = 'worker'\n"
        " WHERE id = $1 AND status NOT IN ('succeeded', 'failed', 'canceled');",
        [(1, NO_SOURCE_STATE)],
    ),
    "an unknown actor": (
        "UPDATE jobs SET status = 'failed', change_actor = 'robot' WHERE status = 'running';",
        [(1, WRONG_ACTOR)],
    ),
    "CASE THEN given to the status": (
        "UPDATE jobs\n   SET status = CASE WHEN x THEN 'stalled' ELSE status END\n"
        " WHERE status = 'running';",
        [(2, UNKNOWN_STATUS)],
    ),
    "CASE ... END AS status": (
        "SELECT CASE WHEN lease_expires_at < now() THEN 'stalled' ELSE status END AS status\n"
        "  FROM jobs;",
        [(1, UNKNOWN_STATUS)],
    ),
    "a CASE on the status": (
        "SELECT CASE status WHEN 'paused' THEN 1 ELSE 0 END FROM jobs;",
        [(1, UNKNOWN_STATUS)],
    ),
    "CASE given to an actor": (
        "SELECT CASE WHEN x THEN 'robot' END AS change_actor FROM jobs;",
        [(1, WRONG_ACTOR)],
    ),
    "an enum type": (
        "CREATE TYPE job_status AS ENUM ('queued', 'running', 'paused');",
        [(1, STATES_INVENTED)],
    ),
    "a value added to an enum type": (
        "ALTER TYPE job_status ADD VALUE 'paused';",
        [(1, STATES_INVENTED)],
    ),
    "a domain's IN list": (
        "CREATE DOMAIN w AS text CHECK (VALUE IN ('queued', 'archived'));",
        [(1, STATES_INVENTED)],
    ),
    "a job inserted running": (
        "INSERT INTO jobs (owner, status)\nVALUES ('a', 'running');",
        [(2, NOT_INITIAL)],
    ),
    "a retry copying a job as running": (
        "INSERT INTO jobs (owner, rerun_of, status)\n"
        "SELECT owner, id, 'running' FROM jobs WHERE id = :id;",
        [(2, NOT_INITIAL)],
    ),
}


@pytest.mark.parametrize(("sql", "expected"), SQL_CASES.values(), ids=SQL_CASES.keys())
def test_sql_that_drifts_is_found(sql: str, expected: list[tuple[int, str]]) -> None:
    assert text_hits(SQL, sql) == expected


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE jobs SET status = 'running', change_actor = 'worker' WHERE status = 'queued';",
        "UPDATE jobs SET status = :to_status, change_actor = 'worker' WHERE status = 'running';",
        "UPDATE jobs SET status = 'canceled', change_actor = 'user' WHERE status = :expected;",
        "UPDATE jobs SET status = 'canceled', change_actor = 'user', change_person = 'olga'\n"
        " WHERE id = 42;",
        "UPDATE jobs SET rows_written = :rows WHERE status = 'running';",
        "UPDATE jobs SET status = 'failed', change_actor = 'worker'\n"
        " WHERE id = :id AND lease_token = :token AND status = 'running';",
        "WITH picked AS (SELECT id FROM jobs WHERE status = 'queued' LIMIT :n)\n"
        "UPDATE jobs SET status = 'running', change_actor = 'worker'\n"
        " WHERE id IN (SELECT id FROM picked);",
        "UPDATE jobs SET status = 'canceled', change_actor = 'user'\n"
        " WHERE id = :id AND status = ANY(:cancelable);",
        "UPDATE jobs SET rows_written = :rows WHERE id = :id;",
        "INSERT INTO jobs (owner, status) VALUES (:owner, :status);",
        "INSERT INTO job_states (status, position) VALUES ('running', 1);",
        "SELECT CASE NEW.status WHEN 'succeeded' THEN 1 END;",
        "SELECT status, count(*) FROM jobs WHERE status IN ('queued', 'running') GROUP BY status;",
        "SELECT * FROM t WHERE kind IN ('csv', 'json');",
    ],
)
def test_sql_within_the_fixture_passes(sql: str) -> None:
    assert text_hits(SQL, sql) == []


# -- templates and scripts ----------------------------------------------------------------------

TEMPLATE_CASES = {
    "Jinja ==": "{% if job.status == 'stalled' %}x{% endif %}",
    "Jinja reversed": "{% if 'stalled' != job.status %}x{% endif %}",
    "Jinja in a list": "{% if job.status in ['queued', 'paused'] %}x{% endif %}",
    "Jinja with a filter": "{% if job.status|lower == 'stalled' %}x{% endif %}",
    "Jinja .get": "{% if job.get('status') == 'stalled' %}x{% endif %}",
    "Jinja elif": "{% if job.status == 'failed' %}a{% elif job.status == 'expired' %}b{% endif %}",
    "Jinja set": "{% set status = 'stalled' %}",
    "a script's ===": "<script>if (job.status === 'stalled') go();</script>",
}


@pytest.mark.parametrize("source", TEMPLATE_CASES.values(), ids=TEMPLATE_CASES.keys())
def test_a_template_that_names_an_invented_status_is_found(source: str) -> None:
    assert text_hits(TEMPLATE, source) == [(1, UNKNOWN_STATUS)]


SCRIPT_CASES = {
    "===": 'if (job.status === "stalled") {}',
    "!== reversed": 'if ("stalled" !== job.status) {}',
    "a lowered status": 'if (job.status.toLowerCase() === "stalled") {}',
    "includes on an array": '["queued", "paused"].includes(job.status)',
    "includes on a constant": 'const WAITING = ["stalled"];\nWAITING.includes(job.status);',
    "switch": 'switch (job.status) {\n  case "stalled": break;\n}',
    "an object key": 'const sample = { id: 1, status: "stalled" };',
    "camelCase": 'if (jobStatus === "stalled") {}',
}


@pytest.mark.parametrize("source", SCRIPT_CASES.values(), ids=SCRIPT_CASES.keys())
def test_a_script_that_names_an_invented_status_is_found(source: str) -> None:
    assert {code for _, code in text_hits(SCRIPT, source)} == {UNKNOWN_STATUS}


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ('export const ACTIVE = ["queued", "running", "stalled"];', STATES_INVENTED),
        ('export type Phase = "queued" | "paused";', STATES_INVENTED),
        ('enum Phase { Queued = "queued", Stalled = "stalled" }', STATES_INVENTED),
        ('export const STATES = ["queued", "running"];', STATES_DRIFT),
        (
            'export const STATES = Object.freeze(["queued", "running", "succeeded", "failed",\n'
            '  "canceled", "retrying"]);',
            STATES_DRIFT,
        ),
        ('export type JobStatus = "queued" | "running";', STATES_DRIFT),
        ('applyTransition(job, "canceled", "worker");', WRONG_ACTOR),
        ('applyTransition(job, "canceled");', WRONG_ACTOR),
        ('checkTransition("failed", "queued", "user");', UNDECLARED_EDGE),
    ],
)
def test_a_script_that_holds_other_states_or_moves_is_found(source: str, code: str) -> None:
    assert code in {c for _, c in text_hits(SCRIPT, source)}


@pytest.mark.parametrize(
    "source",
    [
        "export const STATES = Object.freeze([...graph.states]);",
        'export const STATES = ["queued", "running", "succeeded", "failed", "canceled"];',
        'export type JobStatus = "queued" | "running" | "succeeded" | "failed" | "canceled";',
        'if (job.status === "succeeded") location.reload();',
        'source.addEventListener("status", show);\nsource.onerror = () => source.close();',
        'applyTransition({ id: "job_1", status: "succeeded" }, "running");',
        'applyTransition(job, "canceled", "user");',
        'const kinds = ["csv", "json"];',
        "if (response.status === 206) {}",
    ],
)
def test_scripts_within_the_fixture_pass(source: str) -> None:
    assert text_hits(SCRIPT, source) == []


def test_a_script_defines_states_where_it_derives_them() -> None:
    facts = TextRules(LEXICON).check(SCRIPT, "export const STATES = [...graph.states];")
    assert facts.states_defined


# -- YAML, JSON, Markdown ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("jobs:\n  - owner: demo\n    status: stalled\n", [(3, UNKNOWN_STATUS)]),
        ("initial_status: paused  # a comment\n", [(1, UNKNOWN_STATUS)]),
        ('status: "stalled"\n', [(1, UNKNOWN_STATUS)]),
        ("states:\n  - queued\n  - paused\n", [(3, STATES_INVENTED)]),
        ("shown: [queued, running, stalled]\n", [(1, STATES_INVENTED)]),
        ('expr: reportexport_jobs{status="stalled"} > 0\n', [(1, UNKNOWN_STATUS)]),
    ],
)
def test_yaml_that_names_an_invented_status_is_found(
    source: str, expected: list[tuple[int, str]]
) -> None:
    assert text_hits(YAML, source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "status: queued\n",
        "logging:\n  level: error\n",
        "command: [reportexport, worker, --concurrency, '4']\n",
        "state: present\n",
        "status: null\n",
        "states:\n  - queued\n  - running\n",
    ],
)
def test_yaml_within_the_fixture_passes(source: str) -> None:
    assert text_hits(YAML, source) == []


def test_json_that_names_an_invented_status_is_found() -> None:
    assert text_hits(JSON, '{"data": {"status": "stalled"}}') == [(1, UNKNOWN_STATUS)]
    assert text_hits(JSON, '{"enum": ["queued", "expired"]}') == [(1, STATES_INVENTED)]
    assert text_hits(JSON, '{"status": "queued", "enum": ["csv", "json"]}') == []


def test_a_hand_written_status_table_is_read() -> None:
    table = """
        | Status | Meaning |
        | --- | --- |
        | `queued` | waiting |
        | `paused` | held |

        | Current status | Event | Next status | Actor |
        | --- | --- | --- | --- |
        | queued | claim | running | worker |
        | failed | retry | queued | user |
        | running | cancel | canceled | worker |
        | succeeded | any retry | reject | — |
        """
    assert text_hits(MARKDOWN, table) == [
        (4, STATES_INVENTED),
        (9, UNDECLARED_EDGE),
        (10, WRONG_ACTOR),
    ]


def test_generated_regions_and_code_blocks_are_not_hand_written_tables() -> None:
    text = """
        <!-- BEGIN GENERATED: graph-table -->
        | status | x |
        | --- | --- |
        | paused | x |
        <!-- END GENERATED: graph-table -->

        ```
        | status | x |
        | --- | --- |
        | paused | x |
        ```

        | setting | default |
        | --- | --- |
        | `--concurrency` | 2 |
        """
    assert text_hits(MARKDOWN, text) == []


def test_any_text_is_read_for_quoted_aliases_and_sql() -> None:
    script = """
        #!/bin/sh
        psql -c "UPDATE jobs SET status = 'retrying' WHERE id = 1"
        """
    assert text_hits(TEXT, script) == [(2, FORBIDDEN_ALIAS), (2, UNKNOWN_STATUS)]
