"""SQL read as the database reads it: the statements of a dollar-quoted body one by one, a
CASE given to the status as one move per branch (a branch that keeps the status is none), and
a move's source taken from its own WHERE, else unknown (never from the statements around it).

Each case is what the SQL rules alone report, (line, code, message); the old reading's
mistake is named where the case was written for one.
"""

from __future__ import annotations

import textwrap

import pytest
from snippets import LEXICON

from frozen_lifecycle.gate.lexicon import NO_SOURCE_STATE, UNDECLARED_EDGE
from frozen_lifecycle.gate.sql import SqlRules

BLIND = (
    "no source state: the status is set with no `status = ...` in the WHERE naming the state "
    "the row must be in (a blind write)"
)


def hits(source: str) -> list[tuple[int, str, str]]:
    text = textwrap.dedent(source).lstrip("\n")
    return sorted({(h.line, h.code, h.message) for h in SqlRules(LEXICON).check(text)})


CASES = {
    # One statement once: the second UPDATE's move back to the start was never read.
    "two UPDATEs in a PL/pgSQL body": (
        """
        CREATE FUNCTION retry_job(job_id bigint) RETURNS void LANGUAGE plpgsql AS $$
        BEGIN
            IF aborted THEN
                UPDATE jobs SET status = 'failed', change_actor = 'worker'
                 WHERE id = job_id AND status = 'running';
            ELSE
                UPDATE jobs SET status = 'queued'
                 WHERE id = job_id AND status IN ('running', 'failed');
            END IF;
        END;
        $$;
        """,
        [
            (7, UNDECLARED_EDGE, "failed -> queued is not an edge of the fixture"),
            (7, UNDECLARED_EDGE, "running -> queued is not an edge of the fixture"),
        ],
    ),
    "a named dollar tag, and a DO block": (
        """
        DO $body$
        BEGIN
            UPDATE jobs SET status = 'running', change_actor = 'worker' WHERE status = 'queued';
            UPDATE jobs SET status = 'running', change_actor = 'worker' WHERE status = 'failed';
        END
        $body$;
        """,
        [(4, UNDECLARED_EDGE, "failed -> running is not an edge of the fixture")],
    ),
    "a body after a statement outside one, and one after it": (
        """
        UPDATE jobs SET status = 'failed', change_actor = 'worker' WHERE status = 'running';
        CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $$
            UPDATE jobs SET status = 'running', change_actor = 'worker' WHERE status = 'succeeded'
        $$;
        UPDATE jobs SET status = 'canceled', change_actor = 'user' WHERE status = 'queued';
        """,
        [(3, UNDECLARED_EDGE, "succeeded -> running is not an edge of the fixture")],
    ),
    # The earlier SELECT's `status = 'running'` was taken as the UPDATE's source.
    "a source not in its WHERE is unknown, not the statement before": (
        """
        CREATE FUNCTION fail_job(job_id bigint) RETURNS void LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM 1 FROM jobs WHERE id = job_id AND status = 'running';
            UPDATE jobs SET status = 'failed', change_actor = 'worker' WHERE id = job_id;
        END;
        $$;
        """,
        [(4, NO_SOURCE_STATE, BLIND)],
    ),
    "control flow before an UPDATE is not its WHERE": (
        """
        CREATE FUNCTION f(job_id bigint, current_state text) RETURNS void AS $$
        BEGIN
            IF status = 'running' THEN
                UPDATE jobs SET status = 'queued' WHERE id = job_id AND status = 'failed';
            END IF;
        END;
        $$ LANGUAGE plpgsql;
        """,
        [(4, UNDECLARED_EDGE, "failed -> queued is not an edge of the fixture")],
    ),
    "a CTE before the UPDATE still names its rows": (
        """
        WITH picked AS (SELECT id FROM jobs WHERE status = 'succeeded' LIMIT 1)
        UPDATE jobs SET status = 'running', change_actor = 'worker'
          FROM picked WHERE jobs.id = picked.id;
        """,
        [(2, UNDECLARED_EDGE, "succeeded -> running is not an edge of the fixture")],
    ),
    # Each branch was crossed with every source of the WHERE: queued -> failed.
    "a CASE on the status moves only the state its WHEN names": (
        """
        UPDATE jobs
           SET status = CASE status WHEN 'running' THEN 'failed' ELSE status END,
               change_actor = 'worker'
         WHERE status IN ('queued', 'running');
        """,
        [],
    ),
    "a CASE on the status: a branch's own move is judged": (
        """
        UPDATE jobs
           SET status = CASE status WHEN 'queued' THEN 'failed' ELSE status END
         WHERE status IN ('queued', 'running');
        """,
        [(2, UNDECLARED_EDGE, "queued -> failed is not an edge of the fixture")],
    ),
    "a searched CASE whose WHEN names the state": (
        """
        UPDATE jobs
           SET status = CASE WHEN status = 'running' THEN 'failed' ELSE status END,
               change_actor = 'worker'
         WHERE status IN ('queued', 'running');
        """,
        [],
    ),
    "an ELSE with a word moves the states the WHENs left": (
        """
        UPDATE jobs
           SET status = CASE status WHEN 'running' THEN 'failed' ELSE 'succeeded' END,
               change_actor = 'worker'
         WHERE status IN ('queued', 'running');
        """,
        [(2, UNDECLARED_EDGE, "queued -> succeeded is not an edge of the fixture")],
    ),
    "a searched CASE that names no state takes the WHERE's": (
        """
        UPDATE jobs SET status = CASE WHEN late THEN 'failed' ELSE 'succeeded' END,
               change_actor = 'worker'
         WHERE status = 'queued';
        """,
        [
            (1, UNDECLARED_EDGE, "queued -> failed is not an edge of the fixture"),
            (1, UNDECLARED_EDGE, "queued -> succeeded is not an edge of the fixture"),
        ],
    ),
    "a CASE in a function's body, with the status kept": (
        """
        CREATE FUNCTION cancel(job_id bigint) RETURNS bigint LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE jobs
               SET abort_requested = true,
                   status = CASE status WHEN 'running' THEN 'failed' ELSE status END,
                   change_actor = 'worker'
             WHERE id = job_id AND status IN ('queued', 'running');
            RETURN job_id;
        END;
        $$;
        """,
        [],
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_sql_is_read_statement_by_statement(case: str) -> None:
    source, expected = CASES[case]
    assert hits(source) == expected


def test_a_dollar_quoted_string_without_sql_gives_nothing() -> None:
    assert hits("SELECT $$status = 'paused'; UPDATE nothing$$;") == []


def test_a_positional_parameter_is_no_dollar_quote() -> None:
    source = (
        "UPDATE jobs SET status = $1 WHERE id = $2;\n"
        "UPDATE jobs SET status = 'queued' WHERE status = 'failed';"
    )
    assert hits(source) == [
        (1, NO_SOURCE_STATE, BLIND),
        (2, UNDECLARED_EDGE, "failed -> queued is not an edge of the fixture"),
    ]
