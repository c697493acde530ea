"""Which files the gate reads, what kind of text each holds, and how it names them.

In a git checkout the files are those git lists (tracked, and new ones not ignored), so what
.gitignore leaves out (databases, mutation runs, caches) costs nothing; elsewhere the tree is
walked, without the tool and cache directories below.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

PYTHON = "python"
SQL = "sql"
TEMPLATE = "template"  # HTML and Jinja, with their scripts
SCRIPT = "script"  # JavaScript and TypeScript
YAML = "yaml"
JSON = "json"
MARKDOWN = "markdown"
TEXT = "text"  # TOML, INI, shell, CSS, plain text: the quoted-token and status rules only

_SUFFIXES = {
    PYTHON: (".py", ".pyi"),
    SQL: (".sql",),
    TEMPLATE: (".html", ".htm", ".jinja", ".jinja2", ".j2", ".vue", ".svelte"),
    SCRIPT: (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts"),
    YAML: (".yaml", ".yml"),
    JSON: (".json",),
    MARKDOWN: (".md", ".markdown"),
    TEXT: (".toml", ".ini", ".cfg", ".txt", ".css", ".sh", ".bash", ".zsh", ".env", ".conf"),
}
KINDS = {suffix: kind for kind, suffixes in _SUFFIXES.items() for suffix in suffixes}
SKIPPED_DIRS = frozenset(
    {
        "__pycache__",
        "node_modules",
        ".venv",
        "venv",
        ".git",
        ".hg",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
        ".import_linter_cache",
        ".schemathesis",
        ".mutate",
        "mutants",
        "htmlcov",
        ".tox",
        ".nox",
        ".eggs",
        "site-packages",
        ".frozen-lifecycle",  # the toolkit's own copy that `init --install path` writes
    }
)
# Build output at the root of the repository holds copies of the sources; var/ local data.
SKIPPED_AT_ROOT = frozenset({"build", "dist", "var"})
MAX_BYTES = 1_000_000
_SHEBANG = re.compile(rb"#![^\n]*\b(?:sh|bash|zsh|python3?|node)\b")


def is_test_file(name: str) -> bool:
    """A file of a test suite: under a `tests` or `test` directory, or named as pytest finds
    tests (`test_*.py`, `*_test.py`, `conftest.py`)."""
    *folders, file_name = name.split("/")
    return (
        any(folder in ("tests", "test") for folder in folders)
        or file_name.startswith("test_")
        or file_name.endswith("_test.py")
        or file_name == "conftest.py"
    )


def kind_of(path: Path) -> str | None:
    """The kind of text a file holds; an executable script without a suffix by its shebang."""
    kind = KINDS.get(path.suffix.lower())
    if kind is not None or path.suffix:
        return kind
    try:
        with path.open("rb") as handle:
            head = handle.read(80)
    except OSError:
        return None
    if not _SHEBANG.match(head):
        return None
    return PYTHON if b"python" in head.split(b"\n", 1)[0] else TEXT


def iter_sources(
    root: Path, paths: Sequence[Path], excluded: re.Pattern[str] | None, skip: set[str]
) -> Iterator[tuple[Path, str, str]]:
    """(path, name relative to root, kind) of every file the gate reads, in a stable order.

    Excluded directories are never entered, so a large excluded tree costs nothing; `skip`
    names files (relative to root) never to read, such as the fixture itself.
    """
    seen: set[str] = set()
    listed = git_listing(root)
    for path in paths:
        found = (
            _walk(root, path, excluded) if listed is None else _listed(root, path, listed, excluded)
        )
        for candidate, name in found:
            if name in skip or name in seen:
                continue
            seen.add(name)
            kind = kind_of(candidate)
            if kind is None:
                continue
            try:
                if candidate.stat().st_size > MAX_BYTES:
                    continue
            except OSError:
                continue
            yield candidate, name, kind


def git_listing(root: Path) -> list[str] | None:
    """The files of the git checkout `root` is in (relative to root, in the order a walk
    yields them and without the skipped directories), or None outside a checkout or without
    git."""
    resolved = root.resolve()
    if not any((folder / ".git").exists() for folder in (resolved, *resolved.parents)):
        return None
    import subprocess  # only here: most of the gate never runs a process

    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    if done.returncode != 0:
        return None
    names = {name for name in done.stdout.decode("utf-8", "surrogateescape").split("\0") if name}
    return sorted((n for n in names if not _skipped(n)), key=_walk_order)


def _skipped(name: str) -> bool:
    *folders, _ = name.split("/")
    return bool(folders) and (
        folders[0] in SKIPPED_AT_ROOT
        or any(f in SKIPPED_DIRS or f.endswith(".egg-info") for f in folders)
    )


def _walk_order(name: str) -> tuple[tuple[int, str], ...]:
    """A folder's files before its subfolders, each by name, as `os.walk` sorted gives them."""
    *folders, file_name = name.split("/")
    return (*((1, folder) for folder in folders), (0, file_name))


def _listed(
    root: Path, start: Path, listed: list[str], excluded: re.Pattern[str] | None
) -> Iterator[tuple[Path, str]]:
    top = display(start, root)
    if start.is_file():
        if not _is_excluded(top, excluded):
            yield start, top
        return
    prefix = "" if top in ("", ".") else top + "/"
    for name in listed:
        if name.startswith(prefix) and not _is_excluded(name, excluded):
            path = root / name
            if path.is_file():  # a tracked file deleted in the work tree is not read
                yield path, name


def _walk(root: Path, start: Path, excluded: re.Pattern[str] | None) -> Iterator[tuple[Path, str]]:
    top = display(start, root)
    if start.is_file():
        if not _is_excluded(top, excluded):
            yield start, top
        return
    prefix = "" if top in ("", ".") else top + "/"
    for folder, dirs, files in os.walk(start):
        relative = os.path.relpath(folder, start).replace(os.sep, "/")
        here = prefix if relative == "." else prefix + relative + "/"
        dirs[:] = [
            name
            for name in sorted(dirs)
            if name not in SKIPPED_DIRS
            and not (here == "" and name in SKIPPED_AT_ROOT)
            and not name.endswith(".egg-info")
            and not _is_excluded(here + name, excluded)
        ]
        for name in sorted(files):
            if not _is_excluded(here + name, excluded):
                yield Path(folder) / name, here + name


def _is_excluded(name: str, excluded: re.Pattern[str] | None) -> bool:
    return excluded is not None and excluded.fullmatch(name) is not None


def display(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()
