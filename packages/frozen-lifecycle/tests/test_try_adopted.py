"""tools/try_adopted.py reproduces the README's "Tried on two public job queues" from the
README itself: its pinned commits and its tables. Offline, these check that the script reads
every row of both tables, that the figures the section states agree with them, and how it
compares findings. The sdist ships tools/ too, so these run from it as well."""

from __future__ import annotations

import importlib.util
import re
import sys
from types import ModuleType

import pytest

from conftest import REPOSITORIES, TOOLKIT_ROOT

SCRIPT = TOOLKIT_ROOT / "tools" / "try_adopted.py"


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("try_adopted", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_readme_names_each_adopted_repository_and_its_commit(tool: ModuleType) -> None:
    repos = tool.read_readme(tool.README.read_text(encoding="utf-8"))
    assert [(r.name, r.commit) for r in repos] == [
        ("procrastinate", "f099a753"),
        ("rq", "aa666a8a"),
    ]
    folders = sorted(p.name for p in (REPOSITORIES / "adopted").iterdir() if p.is_dir())
    assert sorted(r.name for r in repos) == folders == sorted(tool.URLS)
    notes = (REPOSITORIES / "adopted" / "README.md").read_text(encoding="utf-8")
    for repo in repos:
        assert f"{repo.name} at {repo.commit}" in notes


def test_the_tables_agree_with_the_figures_the_section_states(tool: ModuleType) -> None:
    text = tool.README.read_text(encoding="utf-8")
    repos = tool.read_readme(text)
    section = text[text.index(tool.SECTION) :]
    section = section[: section.index("\n## ")]
    stated = [
        (int(n), int(true))
        for n, true in re.findall(r"^(\d+) findings?, (\d+) true\.", section, re.MULTILINE)
    ]
    counted = [(len(r.expected), sum(v.startswith("true") for _, v in r.expected)) for r in repos]
    assert stated == counted
    total = sum(n for n, _ in counted)
    true = sum(t for _, t in counted)
    assert f"Together: {total} findings, {true} true" in section
    for repo in repos:
        for finding, verdict in repo.expected:
            assert re.match(r"^[\w./-]+:\d+: [a-z-]+: ", finding), finding
            assert re.match(r"^(true|false)\b", verdict), verdict


def test_a_row_naming_several_lines_gives_a_finding_for_each(tool: ModuleType) -> None:
    cell = "`tests/t.py:179`, `:557: unknown-status: 'finished' passed as status=`"
    assert tool.row_findings(cell) == [
        "tests/t.py:179: unknown-status: 'finished' passed as status=",
        "tests/t.py:557: unknown-status: 'finished' passed as status=",
    ]


def test_findings_are_matched_new_or_missing(tool: ModuleType) -> None:
    expected = [
        ("a.sql:3: undeclared-edge: failed -> todo", "true: the retry"),
        ("b.py:1: x: y", "true"),
    ]
    found = [
        "a.sql:3: undeclared-edge: failed -> todo is not an edge of the fixture",
        "c.py:2: z: w",
    ]
    assert list(tool.compare(expected, found)) == [
        ("true", found[0]),
        ("new", "c.py:2: z: w"),
        ("missing", "b.py:1: x: y"),
    ]
    # a prefix ends at a word: `failed -> todo` does not match `failed -> todos`
    assert next(tool.compare(expected[:1], [expected[0][0] + "s"]))[0] == "new"
