"""Which files the gate reads, and how it names them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

PYTHON_SUFFIXES = frozenset({".py", ".pyi"})
TEXT_SUFFIXES = frozenset(
    {
        ".sql", ".html", ".htm", ".jinja", ".jinja2", ".j2", ".js", ".mjs", ".ts", ".css",
        ".yaml", ".yml", ".toml", ".json", ".txt", ".md", ".ini", ".cfg",
    }
)  # fmt: skip
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", ".venv", "venv", ".git", ".mypy_cache"})


def iter_sources(paths: Sequence[Path], exclude: set[Path]) -> Iterator[Path]:
    """Python and text files under `paths`, in a stable order, without `exclude`."""
    for path in paths:
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        for candidate in candidates:
            if not candidate.is_file() or candidate.resolve() in exclude:
                continue
            if any(part in SKIPPED_DIRS for part in candidate.parts):
                continue
            if candidate.suffix in PYTHON_SUFFIXES | TEXT_SUFFIXES:
                yield candidate


def display(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()
