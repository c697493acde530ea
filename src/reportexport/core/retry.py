"""Waiting between tries, written once: a wait that doubles after each failure up to a ceiling.

Every part that tries again takes its waits from a `Backoff`: the worker ending a job, renewing
a lease or deleting an object, the migrator waiting for a lock, the long-running loops, the live
pages' reads and the side effects' retries. Jitter (a factor drawn between two bounds) keeps many
processes from trying in step.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

# 2 ** 64 times any first wait is past every ceiling; larger exponents would overflow a float.
_MAX_DOUBLINGS = 64


@dataclass(frozen=True)
class Backoff:
    first: float
    ceiling: float
    jitter: tuple[float, float] = (1.0, 1.0)

    def wait(self, failures: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after `failures` failures in a row (1 for the first): `first`,
        doubled each time, at most `ceiling`, times a factor drawn from `jitter`."""
        doublings = min(max(0, failures - 1), _MAX_DOUBLINGS)
        wait = min(self.ceiling, self.first * 2.0**doublings)
        low, high = self.jitter
        if (low, high) == (1.0, 1.0):
            return wait
        return wait * (rng or random).uniform(low, high)

    def waits(self, rng: random.Random | None = None) -> Iterator[float]:
        """The waits after the first, second, ... failure, without end."""
        failures = 0
        while True:
            failures += 1
            yield self.wait(failures, rng)
