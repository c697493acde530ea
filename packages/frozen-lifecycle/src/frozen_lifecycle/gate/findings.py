"""What the gate reports, and the three ways it prints it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

FIXTURE_INVALID = "fixture-invalid"


@dataclass(frozen=True, kw_only=True, order=True)
class Finding:
    path: str
    line: int
    code: str
    message: str

    def text(self) -> str:
        return f"{self.path}:{self.line}: {self.code}: {self.message}"


GITHUB_ANNOTATION = "::error file={path},line={line},title={code}::{message}"


def render(findings: Sequence[Finding], style: str) -> str:
    if style == "json":
        return json.dumps([asdict(f) for f in findings], indent=2) + "\n"
    if style == "github":
        lines = [GITHUB_ANNOTATION.format(**asdict(f)) for f in findings]
    else:
        lines = [f.text() for f in findings]
    return "".join(line + "\n" for line in lines)
