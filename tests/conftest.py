from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO_ROOT = Path(__file__).resolve().parents[1]
# Examples per property-based test over the entry points; .ci/run sets its CI profile, and a
# developer hunting for trouble raises it (REPORTEXPORT_EXAMPLES=1000 ./scripts/test).
EXAMPLES = int(os.environ.get("REPORTEXPORT_EXAMPLES", "50"))
FIXTURE_PATH = REPO_ROOT / "contracts" / "job-status-graph.json"
# The toolkit's source: the gate runs from it with the standard library alone (PYTHONPATH=...).
TOOLKIT_SRC = REPO_ROOT / "packages" / "frozen-lifecycle" / "src"


def gate_environ(*paths: Path) -> dict[str, str]:
    """The environment of a gate run from source: the toolkit (and `paths`) on PYTHONPATH, and
    no variable naming another fixture."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (TOOLKIT_SRC, *paths))}
    env.pop("REPORTEXPORT_GRAPH", None)
    env.pop("FROZEN_LIFECYCLE_GRAPH", None)
    return env


# In CI every property-based test draws the same examples every run (Hypothesis' own `ci`
# profile, registered here so that it does not depend on Hypothesis detecting CI itself): the
# same commit gets the same answer. Hunting with fresh examples is a developer's run.
if os.environ.get("CI"):
    settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True)
    settings.load_profile("ci")

# Under ./scripts/mutate the property-based tests draw the same examples every run and have no
# deadline: a mutant is caught by what a test asserts, never by chance or by a slow trampoline.
if os.environ.get("REPORTEXPORT_MUTATION"):
    settings.register_profile("mutation", derandomize=True, deadline=None, database=None)
    settings.load_profile("mutation")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


def pytest_report_header() -> str:
    from tests.postgres_server import DEFAULT_URL

    explicit = os.environ.get("REPORTEXPORT_TEST_POSTGRES_URL")
    return f"PostgreSQL for tests: {explicit or DEFAULT_URL} (or a throwaway cluster)"
