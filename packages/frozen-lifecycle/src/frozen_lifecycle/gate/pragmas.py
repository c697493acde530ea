"""Deliberate exceptions: a line pragma that names the codes it waives and says why.

The pragma is a comment holding `gate: allow <code>[, <code>] -- <reason>`, in any comment
form: `#` (Python, YAML, TOML, shell), `--` (SQL), `//` and `/* */` (JS), `<!-- -->` (HTML,
Markdown), `{# #}` (Jinja). A pragma at the end of a line waives that line; a pragma on a line
of its own waives the next line. A pragma without a reason waives nothing and is a finding
itself (`pragma-reason`), as is one that waives nothing (`pragma-unused`); a quoted forbidden
alias under the strict paths (`src/` by default) is never waived.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from frozen_lifecycle.gate.findings import Finding
from frozen_lifecycle.gate.sources import JSON, MARKDOWN, PYTHON, SCRIPT, SQL, TEMPLATE, TEXT, YAML

PRAGMA_REASON = "pragma-reason"
PRAGMA_UNUSED = "pragma-unused"
# The comment forms each kind of file may carry a pragma in (Markdown: HTML comments only, so
# the examples in its code blocks are not pragmas).
_OPENERS = {
    PYTHON: r"#|--",
    SQL: r"--|/\*",
    TEMPLATE: r"<!--|\{#|//|/\*",
    SCRIPT: r"//|/\*",
    YAML: r"#",
    JSON: r"(?!)",
    MARKDOWN: r"<!--",
    TEXT: r"#|--|//",
}
_PRAGMAS = {
    kind: re.compile(r"(?:" + openers + r")\s*gate:\s*allow\b(?P<body>.*)$")
    for kind, openers in _OPENERS.items()
}
_CLOSERS = re.compile(r"-->|#\}|\*/")
_CODES = re.compile(r"[a-z][a-z0-9-]*[a-z0-9]")


@dataclass(frozen=True, kw_only=True)
class Pragma:
    path: str
    line: int  # where the pragma is written
    target: int  # the line it waives
    codes: tuple[str, ...]
    reason: str


@dataclass(frozen=True, kw_only=True)
class Waived:
    finding: Finding
    reason: str

    def text(self) -> str:
        return f"{self.finding.path}:{self.finding.line}: {self.finding.code} -- {self.reason}"


def find_pragmas(path: str, text: str, kind: str = TEXT) -> Iterator[Pragma | Finding]:
    """The pragmas of a file, and a finding for each one without a reason."""
    if "gate:" not in text:
        return
    pattern = _PRAGMAS.get(kind, _PRAGMAS[TEXT])
    for number, line in enumerate(text.splitlines(), 1):
        if "gate:" not in line:
            continue
        match = pattern.search(line)
        if match is None:
            continue
        body = _CLOSERS.split(match["body"], maxsplit=1)[0]
        codes_part, _, reason = body.partition(" -- ")
        codes = tuple(_CODES.findall(codes_part))
        reason = reason.strip()
        if not codes or not reason:
            yield Finding(
                path=path,
                line=number,
                code=PRAGMA_REASON,
                message="a gate pragma names the codes it allows and why: "
                "`gate: allow <code> -- <reason>`",
            )
            continue
        alone = line[: match.start()].strip() == ""
        target = number + 1 if alone else number
        yield Pragma(path=path, line=number, target=target, codes=codes, reason=reason)


def apply_pragmas(
    findings: Iterable[Finding], pragmas: Sequence[Pragma], is_strict: StrictRule
) -> tuple[list[Finding], list[Waived]]:
    """The findings left once the pragmas waived theirs, the waived ones with their reasons,
    and a finding for each pragma that waived nothing."""
    by_line: dict[tuple[str, int], list[Pragma]] = {}
    for pragma in pragmas:
        by_line.setdefault((pragma.path, pragma.target), []).append(pragma)
    kept: list[Finding] = []
    waived: list[Waived] = []
    used: set[Pragma] = set()
    for finding in findings:
        candidates = by_line.get((finding.path, finding.line), [])
        chosen = next((p for p in candidates if finding.code in p.codes), None)
        if chosen is None:
            kept.append(finding)
        elif is_strict(finding):
            used.add(chosen)
            kept.append(
                Finding(
                    path=finding.path,
                    line=finding.line,
                    code=finding.code,
                    message=finding.message + " (no pragma waives this here)",
                )
            )
        else:
            used.add(chosen)
            waived.append(Waived(finding=finding, reason=chosen.reason))
    for pragma in pragmas:
        if pragma not in used:
            kept.append(
                Finding(
                    path=pragma.path,
                    line=pragma.line,
                    code=PRAGMA_UNUSED,
                    message=f"the pragma allows {', '.join(pragma.codes)} but line "
                    f"{pragma.target} has no such finding",
                )
            )
    return kept, waived


class StrictRule:
    """Whether a finding is one no pragma may waive."""

    def __init__(self, codes: Iterable[str], paths: re.Pattern[str] | None) -> None:
        self.codes = frozenset(codes)
        self.paths = paths

    def __call__(self, finding: Finding) -> bool:
        return (
            finding.code in self.codes
            and self.paths is not None
            and self.paths.fullmatch(finding.path) is not None
        )
