"""The worker: claims a queued job, runs it, and records how it ended."""

from __future__ import annotations

from collections.abc import Callable

from shop.job_status import apply_transition


def run(job: dict[str, str], work: Callable[[], bool]) -> dict[str, str]:
    running = apply_transition(job, "running")
    return apply_transition(running, "succeeded" if work() else "failed")
