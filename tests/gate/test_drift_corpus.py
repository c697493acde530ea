"""Every drifting patch of the corpus is caught by its checker; no benign one is flagged.

One session measures the whole corpus (see `drift_corpus`): a copy of the tree per patch, the
gate on each, mypy once over every patched module, the contract tests on patched lifecycle
modules and, where it exists, `db check --behaviour`. docs/explanation/measurements.md shows the
figures; set REPORTEXPORT_WRITE_CORPUS_FIGURES=1 to rewrite them there after changing the corpus.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.gate import drift_corpus
from tests.gate.drift_corpus import KINDS, Measured, Patch
from tests.helpers import REPO_ROOT

PATCHES = drift_corpus.load()
DRIFTING = [p for p in PATCHES if p.drifting]
BENIGN = [p for p in PATCHES if not p.drifting]


@pytest.fixture(scope="session")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Measured:
    return drift_corpus.measure(tmp_path_factory.mktemp("corpus"), PATCHES)


def test_the_corpus_holds_every_kind_of_drift_and_enough_benign_patches() -> None:
    assert len(DRIFTING) >= 60
    assert len(BENIGN) >= 20
    assert {p.kind for p in DRIFTING} == set(KINDS)


def test_the_unpatched_copy_passes_the_gate(measured: Measured) -> None:
    assert measured.base_findings["gate"] == []


@pytest.mark.parametrize("patch", DRIFTING, ids=lambda p: p.name)
def test_a_drifting_patch_is_caught_by_its_checker(measured: Measured, patch: Patch) -> None:
    assert patch.checker is not None
    if patch.checker == "db" and not measured.db_available:
        pytest.skip("`reportexport db check --behaviour` is not in this tree yet")
    ran = measured.found[patch.name]
    assert patch.checker in ran, f"{patch.checker} does not apply to {patch.paths}"
    assert ran[patch.checker], f"{patch.name} ({patch.why}) passed {patch.checker}: {ran}"


@pytest.mark.parametrize("patch", BENIGN, ids=lambda p: p.name)
def test_a_benign_patch_is_flagged_by_no_checker(measured: Measured, patch: Patch) -> None:
    flagged = {checker: lines for checker, lines in measured.found[patch.name].items() if lines}
    assert flagged == {}


def test_the_docs_show_the_corpus_figures(measured: Measured) -> None:
    page_path: Path = REPO_ROOT / "docs" / "explanation" / "measurements.md"
    page = page_path.read_text(encoding="utf-8")
    table = drift_corpus.figures(measured)
    if os.environ.get("REPORTEXPORT_WRITE_CORPUS_FIGURES") == "1":
        page_path.write_text(drift_corpus.with_figures(page, table), encoding="utf-8")
        page = page_path.read_text(encoding="utf-8")
    assert drift_corpus.readme_figures(page) == table, (
        "the corpus figures of docs/explanation/measurements.md are out of date; "
        "rerun with REPORTEXPORT_WRITE_CORPUS_FIGURES=1"
    )
