"""Small Markdown pieces the reference pages are written with."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

NOTICE = (
    "<!-- Written by `python -m tools.docs` from {source}; edit the code, then run it again. -->"
)


def code(text: str) -> str:
    """`text` as a code span, fenced with more backticks than it holds in a row."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return f"{fence}{padded}{fence}"


def cell(text: str) -> str:
    """Text that stays inside one table cell: no line breaks, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def sentence(text: str | None) -> str:
    """A help text as a sentence of a page: its first letter up, a full stop at its end."""
    text = " ".join((text or "").split())
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?", ":")) else text + "."
