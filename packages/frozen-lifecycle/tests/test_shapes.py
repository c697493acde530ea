"""Other repository shapes, each with benign and drifting patches: a job queue with event
enums (Python and PostgreSQL), a scheduler with registries of ended jobs, an ORM model with
a status column beside other models' statuses, and a TypeScript service. Each repository names
what carries its lifecycle (`gate.toml`); each patch says what it does and what the gate makes
of it, a known miss included, and the README's figures are these.

FROZEN_LIFECYCLE_WRITE_FIGURES=1 rewrites the figures in the README after a change.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import TOOLKIT_ROOT
from frozen_lifecycle.gate import check_tree
from frozen_lifecycle.gate.config import load_config
from frozen_lifecycle.graph import load_graph

SHAPES = Path(__file__).with_name("shapes")
FIXTURE = SHAPES / "job-status-graph.json"
SHAPE_TITLES = {
    "queue": "job queue with event enums (Python, PostgreSQL)",
    "scheduler": "scheduler with registries of ended jobs",
    "orm": "ORM model with a status column",
    "service": "TypeScript service",
}
BEGIN, END = "<!-- BEGIN SHAPES FIGURES -->\n", "<!-- END SHAPES FIGURES -->"


@dataclass(frozen=True)
class Patch:
    name: str
    shape: str
    drifting: bool
    expected: str
    why: str
    edits: tuple[dict[str, str], ...]


def load_patches() -> list[Patch]:
    patches = []
    for path in sorted((SHAPES / "patches").glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        patches.append(
            Patch(
                name=path.stem,
                shape=data["shape"],
                drifting=data["drifting"],
                expected=data["expected"],
                why=data["why"],
                edits=tuple(data["edit"]),
            )
        )
    return patches


PATCHES = load_patches()


def shape_copy(shape: str, dest: Path) -> Path:
    shutil.copytree(SHAPES / shape, dest)
    (dest / "contracts").mkdir()
    shutil.copy(FIXTURE, dest / "contracts" / "job-status-graph.json")
    return dest


def apply(root: Path, patch: Patch) -> None:
    for edit in patch.edits:
        target = root / edit["path"]
        if "create" in edit:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(edit["create"])
        elif "append" in edit:
            target.write_text(target.read_text() + edit["append"])
        else:
            text = target.read_text()
            assert text.count(edit["search"]) == 1, f"{patch.name}: {edit['search']!r}"
            target.write_text(text.replace(edit["search"], edit["replace"]))


def findings(root: Path) -> list[str]:
    config = load_config(root)
    fixture = root / "contracts" / "job-status-graph.json"
    found, _ = check_tree(root, load_graph(fixture), fixture, (root,), config)
    return [f.text() for f in sorted(set(found))]


def outcome(found: list[str], drifting: bool) -> str:
    if drifting:
        return "caught" if found else "missed"
    return "flagged" if found else "clean"


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    work = tmp_path_factory.mktemp("shapes")
    results = {}
    for patch in PATCHES:
        root = shape_copy(patch.shape, work / patch.name)
        apply(root, patch)
        results[patch.name] = findings(root)
    return results


@pytest.mark.parametrize("shape", sorted(SHAPE_TITLES))
def test_each_shape_passes_as_it_is(shape: str, tmp_path: Path) -> None:
    assert findings(shape_copy(shape, tmp_path / shape)) == []


def test_the_corpus_holds_every_shape_both_ways() -> None:
    for shape in SHAPE_TITLES:
        kinds = {p.drifting for p in PATCHES if p.shape == shape}
        assert kinds == {True, False}, shape
    assert all(p.expected in ("caught", "missed", "clean", "flagged") for p in PATCHES)


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_each_patch_fares_as_it_says(patch: Patch, measured: dict[str, list[str]]) -> None:
    found = measured[patch.name]
    assert outcome(found, patch.drifting) == patch.expected, (patch.why, found)


def figures(measured: dict[str, list[str]]) -> str:
    rows = ["| shape | drifting | caught | benign | flagged | precision | recall |"]
    rows.append("| --- | --- | --- | --- | --- | --- | --- |")
    totals = [0, 0, 0, 0]
    for shape, title in SHAPE_TITLES.items():
        drifting = [p for p in PATCHES if p.shape == shape and p.drifting]
        benign = [p for p in PATCHES if p.shape == shape and not p.drifting]
        caught = sum(1 for p in drifting if measured[p.name])
        flagged = sum(1 for p in benign if measured[p.name])
        counts = [len(drifting), caught, len(benign), flagged]
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        rows.append(_row(title, *counts))
    rows.append(_row("**all**", *totals))
    return "\n".join(rows) + "\n"


def _row(title: str, drifting: int, caught: int, benign: int, flagged: int) -> str:
    precision = caught / (caught + flagged) if caught + flagged else 1.0
    recall = caught / drifting if drifting else 1.0
    return (
        f"| {title} | {drifting} | {caught} | {benign} | {flagged} "
        f"| {precision:.0%} | {recall:.0%} |"
    )


def test_the_readme_shows_these_figures(measured: dict[str, list[str]]) -> None:
    readme_path = TOOLKIT_ROOT / "README.md"
    readme = readme_path.read_text(encoding="utf-8")
    table = figures(measured)
    start, end = readme.index(BEGIN) + len(BEGIN), readme.index(END)
    if os.environ.get("FROZEN_LIFECYCLE_WRITE_FIGURES") == "1":
        readme_path.write_text(readme[:start] + table + readme[end:], encoding="utf-8")
        readme = readme_path.read_text(encoding="utf-8")
        start, end = readme.index(BEGIN) + len(BEGIN), readme.index(END)
    assert readme[start:end] == table, "rerun with FROZEN_LIFECYCLE_WRITE_FIGURES=1"
