"""The one backoff: waits that double up to a ceiling, with jitter within its bounds; and no
other part of the program doubles its own waits."""

from __future__ import annotations

import random
import re
from itertools import islice
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from reportexport.core.retry import Backoff

SOURCE = Path(__file__).resolve().parents[1] / "src" / "reportexport"


def test_waits_double_up_to_the_ceiling() -> None:
    assert list(islice(Backoff(first=0.2, ceiling=2.0).waits(), 6)) == [
        0.2, 0.4, 0.8, 1.6, 2.0, 2.0
    ]  # fmt: skip


@given(
    first=st.floats(0.001, 100),
    factor=st.floats(1, 1000),
    failures=st.integers(1, 10_000),
    low=st.floats(0.1, 1.0),
    spread=st.floats(0, 1.0),
    seed=st.integers(0, 2**32),
)
def test_a_wait_stays_within_its_jittered_ceiling(
    first: float, factor: float, failures: int, low: float, spread: float, seed: int
) -> None:
    backoff = Backoff(first=first, ceiling=first * factor, jitter=(low, low + spread))
    wait = backoff.wait(failures, random.Random(seed))
    plain = Backoff(first=first, ceiling=first * factor).wait(failures)
    assert first <= plain <= first * factor
    assert plain * low <= wait <= plain * (low + spread) * (1 + 1e-12)
    assert plain >= Backoff(first=first, ceiling=first * factor).wait(max(1, failures - 1))


def test_no_part_doubles_its_own_waits() -> None:
    doubling = re.compile(r"(\*=\s*2\b|\*\s*2\s*[,)]|\b2(\.0)?\s*\*\*)")
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        if path.relative_to(SOURCE).as_posix() == "core/retry.py":
            continue  # the helper itself; pacing's probes too take their waits from it
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if doubling.search(line) and ("delay" in line or "wait" in line or "pause" in line):
                found.append(f"{path.relative_to(SOURCE)}:{number}: {line.strip()}")
    assert found == []
