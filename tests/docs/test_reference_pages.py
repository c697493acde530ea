"""The reference pages are the code's: each generated page equals what the code generates now,
and covers every setting and every command."""

from __future__ import annotations

import dataclasses
import re

import pytest
from tools.docs import exporter, reference

from tests.helpers import REPO_ROOT


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return reference.pages()


def test_every_generated_page_is_committed_as_the_code_generates_it(
    pages: dict[str, str],
) -> None:
    stale = [
        path
        for path, text in pages.items()
        if not (REPO_ROOT / path).is_file() or (REPO_ROOT / path).read_text("utf-8") != text
    ]
    assert stale == [], "run `python -m tools.docs` (or ./scripts/docs) and commit the pages"


def test_the_settings_page_names_every_setting_and_its_variable(pages: dict[str, str]) -> None:
    page = pages["docs/reference/settings.md"]
    for spec in dataclasses.fields(exporter.settings.Settings):
        variable = exporter.settings.environment_name(spec.name)
        assert f"| `{spec.name}` | `{variable}` |" in page


def test_the_command_line_page_has_a_section_for_every_command(pages: dict[str, str]) -> None:
    page = pages["docs/reference/cli.md"]
    for words in [
        ("export",),
        ("db", "upgrade"),
        ("schedules", "preview"),
        ("users", "revoke-token"),
        ("effects", "given-up"),
        ("gate",),
    ]:
        assert f"## reportexport {' '.join(words)} {{#{'-'.join(words)}}}" in page
    sections = page.count("\n## reportexport ")
    assert sections == page.count("\n| [`"), "each command in the summary has its section"


def test_the_http_page_has_every_operation_of_the_document(pages: dict[str, str]) -> None:
    document = reference.openapi_document()
    page = pages["docs/reference/http-api.md"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            assert f"{{#{operation['operationId']}}}" in page
            assert f"`{method.upper()} {path}`" in page


def test_the_alert_rules_name_only_metrics_the_service_exposes(pages: dict[str, str]) -> None:
    rules = (REPO_ROOT / "docs" / "how-to" / "operators" / "monitor.md").read_text("utf-8")
    named = set(re.findall(r"\b(reportexport_\w+)\b", rules))
    exposed = set(re.findall(r"`(reportexport_\w+)`", pages["docs/reference/metrics.md"]))
    assert named, "the page holds alert rules"
    assert named - exposed == set()
