"""Files and file regions generated from the fixture, and the means to check or rewrite them.

A lifecycle change is a fixture edit in a commit of its own that carries nothing but what this
module regenerates (`frozen-lifecycle generate`); the gate compares every artifact with what
the fixture generates now. Which artifacts a repository keeps is its configuration's
(`Targets`): the decision table and diagram in README regions, and, where it names them, the
typed names and the SQL guards of either dialect.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from frozen_lifecycle.graph import Graph
from frozen_lifecycle.provenance import DEFAULT_PROVENANCE, Provenance
from frozen_lifecycle.render import render_mermaid, render_table
from frozen_lifecycle.sql import postgres_graph_sql, sqlite_graph_sql
from frozen_lifecycle.typed_names import render_typed_names

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


REGIONS: tuple[tuple[str, Render], ...] = (
    ("graph-table", render_table),
    ("graph-mermaid", _fenced_mermaid),
)
REGION_NAMES = tuple(name for name, _ in REGIONS)


@dataclass(frozen=True, kw_only=True)
class Targets:
    """What a repository keeps generated from its fixture, by path from its root."""

    regions: tuple[str, ...] = ("README.md",)
    typed_names: str | None = None
    sqlite_guards: str | None = None
    postgresql_guards: str | None = None
    notify_channel: str | None = None
    provenance: Provenance = DEFAULT_PROVENANCE


DEFAULT_TARGETS = Targets()


def artifacts(targets: Targets = DEFAULT_TARGETS) -> list[Artifact]:
    """The regions of each region file, then the generated files the targets name."""
    found: list[Artifact] = [
        Region(path=path, name=name, render=render)
        for path in targets.regions
        for name, render in REGIONS
    ]
    provenance = targets.provenance
    files: list[tuple[str | None, Render]] = [
        (targets.sqlite_guards, functools.partial(sqlite_graph_sql, provenance=provenance)),
        (
            targets.postgresql_guards,
            functools.partial(
                postgres_graph_sql, provenance=provenance, notify_channel=targets.notify_channel
            ),
        ),
        (targets.typed_names, functools.partial(render_typed_names, provenance=provenance)),
    ]
    found += [GeneratedFile(path=path, render=render) for path, render in files if path]
    return found


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
    for name in REGION_NAMES:
        text = _region_pattern(name).sub(lambda m: m.group(1) + m.group(3), text)
    return text


def artifact_paths(kept: Sequence[Artifact]) -> set[str]:
    return {artifact.path for artifact in kept}


def drift(
    graph: Graph,
    read: Callable[[str], str | None],
    kept: Sequence[Artifact],
    *,
    command: str = DEFAULT_PROVENANCE.command,
) -> Iterator[Drift]:
    """Every artifact whose text differs from what `graph` generates.

    `read` returns a file's text by repository path, or None where the file does not exist
    (a commit from before a file was generated has nothing to compare); a file without the
    markers of a region has nothing to compare either.
    """
    for artifact in kept:
        text = read(artifact.path)
        if text is None:
            continue
        want = artifact.render(graph)
        if isinstance(artifact, GeneratedFile):
            if text != want:
                yield Drift(
                    path=artifact.path,
                    line=_first_difference(text, want),
                    message=f"differs from what the fixture generates; run `{command}`",
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
                f"run `{command}`",
            )


def write(graph: Graph, root: Path, kept: Sequence[Artifact]) -> list[str]:
    """Regenerate every artifact under `root`; returns the paths that changed.

    A region file that does not exist, or lacks a region's markers, is left as it is.
    """
    changed = []
    for artifact in kept:
        target = root / artifact.path
        if isinstance(artifact, GeneratedFile):
            old = target.read_text(encoding="utf-8") if target.exists() else None
            new = artifact.render(graph)
            target.parent.mkdir(parents=True, exist_ok=True)
        else:
            if not target.exists():
                continue
            old = target.read_text(encoding="utf-8")
            if region_body(old, artifact.name) is None:
                continue
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
