"""Honest ratios on a shared machine: methods interleaved, a median with its spread.

Running all of method A and then all of method B lets a neighbour's load fall on one side only;
a single ratio from one run of each flips from run to run. Here every repetition runs each
method once, in the same order (A B A B ...), each repetition gives one ratio, and the verdict
is judged on the median of those ratios, printed with the lowest and highest.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Ratio:
    """`value` of A over B per repetition: their median, lowest and highest."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def __str__(self) -> str:
        return f"{self.median:.2f} ({self.low:.2f}-{self.high:.2f}, n={len(self.values)})"


def interleave(
    methods: Mapping[str, Callable[[], float]],
    repetitions: int,
    *,
    progress: Callable[[str, int, float], None] | None = None,
) -> dict[str, list[float]]:
    """Each method's figure (seconds, jobs/s, ...) per repetition, run A B A B ..."""
    figures: dict[str, list[float]] = {name: [] for name in methods}
    for repetition in range(repetitions):
        for name, run in methods.items():
            figure = run()
            figures[name].append(figure)
            if progress is not None:
                progress(name, repetition, figure)
    return figures


def ratio(numerator: list[float], denominator: list[float]) -> Ratio:
    """numerator[i] / denominator[i] for each repetition i."""
    if len(numerator) != len(denominator) or not numerator:
        raise ValueError("a ratio needs the same number of repetitions on both sides")
    return Ratio(tuple(a / b for a, b in zip(numerator, denominator, strict=True)))


def verdict(value: float, op: str | None, target: float | None) -> str:
    if op is None or target is None or value != value:  # NaN: not measured
        return ""
    met = {"<=": value <= target, ">=": value >= target, "<": value < target}[op]
    return "  met" if met else "  MISSED"
