"""The tiers of the suite: each directory under tests/ (and the toolkit's own tests) names its
markers and its time budget in its conftest.py as `TIER`; a new test gets its tier's markers the
day it is written. The tests directly under tests/ are the tier named in tests/conftest.py.

Markers (registered in pyproject.toml):
  postgres   uses a PostgreSQL database (set by fixture: postgres_url, a "postgres" backend, ...)
  browser    drives a real Chromium
  processes  starts real processes or servers (`serve`, workers, initdb/pg_ctl, git, builds)
  slow       takes long enough that the quick loop leaves it out

A budget is the sum of the tier's test durations (setup, call and teardown, over every xdist
worker), in seconds. Under CI a tier that takes more than MARGIN times its budget fails the run;
elsewhere it is reported. See docs/explanation/testing.md.
"""

from __future__ import annotations

import importlib
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
TOOLKIT_TESTS = TESTS.parent / "packages" / "frozen-lifecycle" / "tests"
MARGIN = 2.0
# Fixtures that reach a PostgreSQL server (the session's or one the test starts).
POSTGRES_FIXTURES = {"postgres_server", "cluster", "typed_postgres"}
# Session fixtures that build something for tests of several modules: built once, on one worker.
SHARED_BUILDS = {"toolkit_dist"}


@dataclass(frozen=True, eq=False)
class Tier:
    name: str
    budget_seconds: float
    marks: tuple[str, ...] = ()
    # Module file name -> markers of that module alone (on top of the tier's).
    modules: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def marks_of(self, path: Path) -> tuple[str, ...]:
        return self.marks + self.modules.get(path.name, ())


# The toolkit's tests belong to their own distribution, whose conftest cannot name ours.
TOOLKIT = Tier(
    "toolkit package",
    budget_seconds=300,
    modules={
        "test_builds.py": ("processes", "slow"),
        "test_outside_repositories.py": ("processes",),
        "test_standard_library_only.py": ("processes",),
        "test_commands.py": ("processes",),
    },
)


def tier_of(path: Path) -> Tier:
    """The tier of a test file: TIER of its directory's conftest under tests/."""
    if path.is_relative_to(TOOLKIT_TESTS):
        return TOOLKIT
    relative = path.relative_to(TESTS)
    package = "tests" if len(relative.parts) == 1 else f"tests.{relative.parts[0]}"
    tier = getattr(importlib.import_module(f"{package}.conftest"), "TIER", None)
    if not isinstance(tier, Tier):
        raise pytest.UsageError(f"{package}/conftest.py names no TIER: every tier has one")
    return tier


def mark(items: list[pytest.Item]) -> None:
    for item in items:
        for name in tier_of(item.path).marks_of(item.path):
            item.add_marker(name)
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("backend") if callspec else None
        if backend == "postgres" or POSTGRES_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker("postgres")
        group = xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def xdist_group(item: pytest.Item) -> str | None:
    """The group whose tests share one xdist worker, so that a costly fixture is made once: the
    test's module when it uses a fixture of the module's own scope (a server, a cluster) or a
    session fixture defined in the module; the fixture's name for a shared build."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name, defs in info.name2fixturedefs.items():
        fixture = defs[-1]
        in_module = fixture.baseid.endswith(".py")
        if fixture.scope in ("module", "class") or (fixture.scope == "session" and in_module):
            return item.nodeid.split("::", 1)[0]
        if name in SHARED_BUILDS:
            return name
    return None


class Budgets:
    """The seconds each tier took in this run, against its budget."""

    def __init__(self) -> None:
        self.seconds: dict[Tier, float] = defaultdict(float)
        self.tiers: dict[str, Tier] = {}

    def add(self, report: pytest.TestReport, root: Path) -> None:
        path = root / report.nodeid.split("::", 1)[0]
        tier = tier_of(path)
        self.seconds[tier] += report.duration

    def over(self) -> list[str]:
        return [
            f"{tier.name}: {seconds:.0f} s, budget {tier.budget_seconds:.0f} s"
            for tier, seconds in self.seconds.items()
            if seconds > tier.budget_seconds * MARGIN
        ]

    def lines(self) -> list[str]:
        return [
            f"{tier.name:<16} {seconds:7.1f} s of {tier.budget_seconds:5.0f} s"
            + ("  OVER" if seconds > tier.budget_seconds else "")
            for tier, seconds in sorted(self.seconds.items(), key=lambda kv: -kv[1])
        ]


def enforced() -> bool:
    return os.environ.get("CI") == "true"
