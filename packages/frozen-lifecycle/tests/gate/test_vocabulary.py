"""The vocabulary rules of the gate, one behaviour per test."""

from __future__ import annotations

import ast
import textwrap

import pytest

from conftest import STARTER_FIXTURE
from frozen_lifecycle.gate.lexicon import FORBIDDEN_ALIAS, UNKNOWN_STATUS, Lexicon
from frozen_lifecycle.gate.python_rules import PythonRules
from frozen_lifecycle.gate.sources import TEXT
from frozen_lifecycle.gate.text_rules import TextRules
from frozen_lifecycle.graph import load_graph

GRAPH = load_graph(STARTER_FIXTURE)
LEXICON = Lexicon.of(GRAPH)


def python_hits(source: str) -> list[tuple[int, str]]:
    text = textwrap.dedent(source)
    facts = PythonRules(LEXICON).check(ast.parse(text), text)
    return sorted((hit.line, hit.code) for hit in facts.hits)


def text_hits(text: str, kind: str = TEXT) -> list[tuple[int, str]]:
    return sorted((hit.line, hit.code) for hit in TextRules(LEXICON).check(kind, text).hits)


@pytest.mark.parametrize("alias", GRAPH.forbidden_aliases)
def test_a_quoted_alias_is_found_with_either_quote(alias: str) -> None:
    assert python_hits(f"x = \"{alias}\"\ny = '{alias}'\n") == [
        (1, FORBIDDEN_ALIAS),
        (2, FORBIDDEN_ALIAS),
    ]


@pytest.mark.parametrize(
    "source",
    [
        'name = "emit_done_webhook"',
        'logger = "uvicorn.error"',
        'label = "Done"',
        'sentence = "the export is done"',
        "error_code = 42",
        "def done(): pass",
    ],
)
def test_substrings_identifiers_and_other_cases_are_fine(source: str) -> None:
    assert python_hits(source) == []


def test_an_alias_as_an_fstring_part_is_found() -> None:
    assert python_hits('x = f"{prefix}" "done"\n') == [(1, FORBIDDEN_ALIAS)]
    assert python_hits("x = f\"{ 'done' }\"\n") == [(1, FORBIDDEN_ALIAS)]
    assert python_hits('x = f"{count} done"\n') == []


def test_a_quoted_alias_inside_sql_text_is_found_on_its_line() -> None:
    source = '''
    QUERY = """
        SELECT id
        FROM jobs
        WHERE phase = 'retrying'
    """
    '''
    assert python_hits(source) == [(5, FORBIDDEN_ALIAS)]


def test_a_docstring_that_quotes_an_alias_is_found() -> None:
    assert python_hits('def f():\n    """Never \'pending\'."""\n') == [(2, FORBIDDEN_ALIAS)]


@pytest.mark.parametrize(
    "source",
    [
        'if job.status == "archived": pass',
        'if "archived" != job["status"]: pass',
        'ok = row.status in ("queued", "archived")',
        'job.status = "archived"',
        'status: str = "archived"',
        'payload = {"status": "archived"}',
        'store.transition(job_id, to_status="archived")',
        'apply_transition(job, "archived")',
        'can_transition("queued", "archived")',
        "match job.status:\n    case 'archived': pass",
        "SQL = \"UPDATE jobs SET status = 'archived'\"",
        "SQL = \"SELECT 1 FROM jobs j WHERE j.status IN ('queued', 'archived')\"",
        "SQL = \"SELECT 1 WHERE NEW.to_status <> 'archived'\"",
    ],
)
def test_a_status_that_is_not_a_fixture_state_is_found(source: str) -> None:
    assert python_hits(source) == [
        (source.count("\n") + 1 if "match" in source else 1, UNKNOWN_STATUS)
    ]


@pytest.mark.parametrize(
    "source",
    [
        'if job.status == "succeeded": pass',
        'ok = row.status in ("queued", "running")',
        'payload = {"status": "canceled", "healthy": "yes"}',
        'if key == "status": pass',
        'apply_transition(job, "canceled", "user")',
        "SQL = \"UPDATE jobs SET status = 'failed', actor = 'worker'\"",
        'health = {"healthy": True}',
        "http_code = 200",
    ],
)
def test_fixture_states_and_non_status_strings_pass(source: str) -> None:
    assert python_hits(source) == []


def test_text_files_are_scanned_for_quoted_tokens() -> None:
    text = "a\nsource.addEventListener('error', f)\n<div class=\"done\">\nlet t = `cleanup`;\n"
    assert text_hits(text) == [(2, FORBIDDEN_ALIAS), (3, FORBIDDEN_ALIAS), (4, FORBIDDEN_ALIAS)]


def test_sql_files_are_checked_for_status_words() -> None:
    text = "UPDATE jobs\n   SET status = 'archived'\n WHERE status = 'queued';\n"
    assert text_hits(text, "sql") == [(2, UNKNOWN_STATUS)]


def test_prose_in_text_files_is_fine() -> None:
    assert text_hits("<p>Your export is done.</p>\n{{ error_message }}\n") == []
