"""Files and file regions generated from the fixture, and the means to check or rewrite them.

A lifecycle change is a fixture edit in a commit of its own that carries nothing but what this
registry regenerates (`reportexport generate`); the gate compares every artifact with what the
fixture generates now. Later layers add their artifacts to `ARTIFACTS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from reportexport.graph import Graph
from reportexport.graph_sql import (
    POSTGRES_PATH,
    SQLITE_PATH,
    postgres_graph_sql,
    sqlite_graph_sql,
)
from reportexport.render import render_mermaid, render_table
from reportexport.typed_names import TYPED_NAMES_PATH, render_typed_names

Render = Callable[[Graph], str]


@dataclass(frozen=True, kw_only=True)
class Region:
    """Generated text between `<!-- BEGIN GENERATED: name -->` and its END marker in a file."""

    path: str
    name: str
    render: Render


@dataclass(frozen=True, kw_only=True)
class GeneratedFile:
    """A whole file generated from the fixture."""

    path: str
    render: Render


Artifact = Region | GeneratedFile


@dataclass(frozen=True, kw_only=True)
class Drift:
    path: str
    line: int
    message: str


class MissingRegionError(ValueError):
    pass


def _fenced_mermaid(graph: Graph) -> str:
    return "```mermaid\n" + render_mermaid(graph) + "```\n"


ARTIFACTS: list[Artifact] = [
    Region(path="README.md", name="graph-table", render=render_table),
    Region(path="README.md", name="graph-mermaid", render=_fenced_mermaid),
    GeneratedFile(path=SQLITE_PATH, render=sqlite_graph_sql),
    GeneratedFile(path=POSTGRES_PATH, render=postgres_graph_sql),
    GeneratedFile(path=TYPED_NAMES_PATH, render=render_typed_names),
]


def _region_pattern(name: str) -> re.Pattern[str]:
    escaped = re.escape(name)
    return re.compile(
        rf"(<!-- BEGIN GENERATED: {escaped} -->\n)(.*?)(<!-- END GENERATED: {escaped} -->)", re.S
    )


def region_body(text: str, name: str) -> tuple[str, int] | None:
    """The text inside a marked region and the line its body starts on, or None."""
    match = _region_pattern(name).search(text)
    if match is None:
        return None
    return match.group(2), text.count("\n", 0, match.start(2)) + 1


def splice_region(text: str, name: str, body: str) -> str:
    pattern = _region_pattern(name)
    if not pattern.search(text):
        raise MissingRegionError(f"no region {name!r}: add its BEGIN and END GENERATED markers")
    return pattern.sub(lambda m: m.group(1) + body + m.group(3), text, count=1)


def blank_regions(text: str) -> str:
    """The text with every generated region emptied: what a person wrote around them."""
    for artifact in ARTIFACTS:
        if isinstance(artifact, Region):
            pattern = _region_pattern(artifact.name)
            text = pattern.sub(lambda m: m.group(1) + m.group(3), text)
    return text


def artifact_paths() -> set[str]:
    return {artifact.path for artifact in ARTIFACTS}


def drift(graph: Graph, read: Callable[[str], str | None]) -> Iterator[Drift]:
    """Every artifact whose text differs from what `graph` generates.

    `read` returns a file's text by repository path, or None where the file does not exist
    (a repository that copies the gate need not have every artifact).
    """
    for artifact in ARTIFACTS:
        text = read(artifact.path)
        if text is None:
            continue
        want = artifact.render(graph)
        if isinstance(artifact, GeneratedFile):
            if text != want:
                yield Drift(
                    path=artifact.path,
                    line=_first_difference(text, want),
                    message="differs from what the fixture generates; run `reportexport generate`",
                )
            continue
        found = region_body(text, artifact.name)
        if found is None:
            continue
        body, start = found
        if body != want:
            yield Drift(
                path=artifact.path,
                line=start + _first_difference(body, want) - 1,
                message=f"region {artifact.name!r} differs from what the fixture generates; "
                "run `reportexport generate`",
            )


def write(graph: Graph, root: Path) -> list[str]:
    """Regenerate every artifact under `root`; returns the paths that changed."""
    changed = []
    for artifact in ARTIFACTS:
        target = root / artifact.path
        if isinstance(artifact, GeneratedFile):
            old = target.read_text(encoding="utf-8") if target.exists() else None
            new = artifact.render(graph)
            target.parent.mkdir(parents=True, exist_ok=True)
        else:
            if not target.exists():
                continue
            old = target.read_text(encoding="utf-8")
            new = splice_region(old, artifact.name, artifact.render(graph))
        if new != old:
            target.write_text(new, encoding="utf-8")
            changed.append(artifact.path)
    return changed


def _first_difference(have: str, want: str) -> int:
    for number, (a, b) in enumerate(zip(have.splitlines(), want.splitlines(), strict=False), 1):
        if a != b:
            return number
    return min(len(have.splitlines()), len(want.splitlines())) + 1
