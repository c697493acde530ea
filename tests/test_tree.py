"""What every tracked file of the repository keeps to, whatever reads it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A merge that was committed half done: git's own markers at the start of a line.
CONFLICT = re.compile(r"^(?:<{7} |={7}$|>{7} )", re.M)


def tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")  # fmt: skip
    return [ROOT / name for name in listed if name and (ROOT / name).is_file()]


def test_no_tracked_file_holds_a_merge_conflict() -> None:
    found = []
    for path in tracked_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for match in CONFLICT.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(ROOT)}:{line}")
    assert found == []
