"""When to try a failed side effect again: exponential backoff with jitter, Retry-After honoured."""

from __future__ import annotations

import random
from dataclasses import dataclass

from reportexport.core.retry import Backoff
from reportexport.core.settings import default


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    max_attempts: int = default("effects_max_attempts")
    base_seconds: float = 5.0
    max_seconds: float = 3600.0

    def delay(self, attempts: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds before attempt `attempts + 1`: between half and all of base * 2^(n-1)."""
        backoff = Backoff(first=self.base_seconds, ceiling=self.max_seconds, jitter=(0.5, 1.0))
        delay = backoff.wait(attempts, rng)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_seconds))
        return delay

    def gives_up(self, attempts: int, redrives: int) -> bool:
        """After `max_attempts` since the last re-drive, the row stays visibly given up."""
        return attempts >= self.max_attempts * (redrives + 1)
