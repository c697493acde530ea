"""schemathesis' own command line against a running `serve`: every check, every phase.

`schemathesis run URL --checks all` generates requests from the OpenAPI document (examples,
coverage of boundaries, fuzzing) as the demo's user with their bearer token, over the demo
catalog and a query that takes any text, and, following the document's links, stateful
sequences over the API; deterministically, so that the same commit gets the same answer every
run (`./scripts/fuzz` hunts with random seeds outside CI, and what it finds becomes a case of
`test_schema_agreement.py`). Two runs as the demo's operator work the operator-only routes,
which refuse the user: fuzzing beside the user's run, and the stateful phase on a service of
its own whose announcements go to a receiver that refuses them, so that they settle as soon as
the service has tried them. It fails when an answer is a 5xx, is undocumented
or off its schema, when the schema accepts what the service refuses or the reverse, when
`Allow` does not list a path's methods, or when a stateful phase did not reach an operation
that takes the bearer token (the user's: each one a user may call; the operator's: each one;
`schemathesis_hooks.py` keeps their scenarios replayable, and records what they sent). The
number of examples comes from $REPORTEXPORT_EXAMPLES (the CI profile bounds it).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.effects.receiver import Receiver, running_receiver
from tests.helpers import EXAMPLES, serving_url, start_serve, tail

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
# ./scripts/fuzz sets a random seed; the suite generates deterministically.
SEED = os.environ.get("REPORTEXPORT_FUZZ_SEED")
GENERATION = ["--seed", SEED] if SEED else ["--generation-deterministic"]
CONFIG = Path(__file__).with_name("schemathesis.toml")
HOOKS = Path(__file__).with_name("schemathesis_hooks.py")
PHASE_TITLES = {"examples": "Examples", "coverage": "Coverage", "fuzzing": "Fuzzing",
                "stateful": "Stateful"}  # fmt: skip
# 4 min alone on a 2-core machine (2026-12-05); beside the rest of the suite's workers it took
# more than 15 min in a CI run, which its first bound (900 s) cut short.
TIMEOUT = 2400
# Re-driving an announcement given up: the whole announcement, or one destination of it.
REDRIVES = ("POST /api/side-effects/{job_id}/{effect}/redrive",
            "POST /api/deliveries/{delivery_id}/redrive")  # fmt: skip


# A saved query that takes any text: the parameters most likely to hold what a store refuses.
FREE_TEXT = """
[queries.products_named]
title = "Products whose name holds a word"
source = "demo"
sql = "SELECT * FROM products WHERE name LIKE '%' || :term || '%' ORDER BY product_id"
parameters.term = { type = "string", max_length = 200, description = "any text" }
"""


@contextlib.contextmanager
def serving(home: Path, settings: dict[str, str]) -> Iterator[tuple[str, dict[str, str]]]:
    """`serve` over the demo and a free-text query, with `settings` besides the limits; its URL
    and the demo people's tokens."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTEXPORT_")}
    # Limits high enough that a fuzzer's thousand exports are not refused for their number.
    env.update(REPORTEXPORT_HOME=str(home), REPORTEXPORT_MAX_ACTIVE_EXPORTS="1000000",
               REPORTEXPORT_MAX_EXPORTS_PER_MINUTE="1000000",
               REPORTEXPORT_MAX_SCHEDULES="1000000", **settings)  # fmt: skip
    demo = subprocess.run([sys.executable, "-m", "reportexport", "demo", "--rows", "2000"],
                          env=env, check=True, capture_output=True, text=True)  # fmt: skip
    tokens = dict(re.findall(r"created \w+ '(\w+)'; token \(shown once\): (\S+)", demo.stdout))
    assert {"demo", "operator"} <= set(tokens), demo.stdout
    # Addresses, so that asking for an e-mail (`notify`, a job's or every export's) is done:
    # without one it is refused with 422, which a fuzzer reads as a valid request rejected.
    for person in ("demo", "operator"):
        address = ["users", "email", person, f"{person}@example.com"]
        subprocess.run([sys.executable, "-m", "reportexport", *address],
                       env=env, check=True, capture_output=True)  # fmt: skip
    with open(home / "catalog.toml", "a") as catalog:
        catalog.write(FREE_TEXT)
    log = home.parent / "serve.log"
    server = start_serve(["--grace-seconds", "1"], env=env, log=log)
    try:
        base = serving_url(server, log)
        yield base, tokens
    finally:
        server.terminate()
        try:
            # grace_seconds 1 and one delivery in flight at most: it stops in seconds.
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            pytest.fail(f"serve did not stop within 60 s of SIGTERM:\n{tail(log)}")
    assert "Traceback" not in log.read_text()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """The service the fuzzers work: a chat host, so that the document's chat channel URLs name
    one the service takes."""
    home = tmp_path_factory.mktemp("schemathesis") / "var"
    with serving(home, {"REPORTEXPORT_CHAT_HOSTS": "hooks.example.com"}) as served:
        yield served


@pytest.fixture
def quiet_service(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], str]]:
    """A service of its own for the operator's stateful phase, and a receiver on loopback that
    refuses every delivery (503): the hooks point every destination the phase registers there,
    and the service tries each once, so each announcement settles (given up) within a second
    of its job's end instead of waiting on unresolvable names."""
    home = tmp_path / "var"
    home.parent.mkdir(exist_ok=True)
    with running_receiver(RefusingReceiver()) as receiver:
        settings = {"REPORTEXPORT_CHAT_HOSTS": "127.0.0.1",
                    "REPORTEXPORT_WEBHOOKS_ALLOW_PRIVATE": "true",
                    "REPORTEXPORT_EFFECTS_MAX_ATTEMPTS": "1"}  # fmt: skip
        with serving(home, settings) as (base, tokens):
            yield base, tokens, receiver.url.removesuffix("/hooks")


class RefusingReceiver(Receiver):
    def answer(self) -> tuple[int, dict[str, str], float]:
        return 503, {}, 0.0


def schemathesis(
    base: str, token: str, phases: str, directory: Path, destination: str = "",
    paths: str | None = None,
) -> tuple[str, dict[str, Counter[int]]]:  # fmt: skip
    """Run schemathesis with `token`'s bearer (on the operations whose path matches `paths`,
    or all); its report, and the operations the stateful phase sent a request to, each with
    the statuses it was answered and how often."""
    calls = directory / "stateful.jsonl"
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "schemathesis_hooks",
           "PYTHONPATH": str(HOOKS.parent), "REPORTEXPORT_STATEFUL_LOG": str(calls),
           "REPORTEXPORT_STATEFUL_DESTINATION": destination,
           "REPORTEXPORT_STATEFUL_SERVICE": base, "REPORTEXPORT_STATEFUL_TOKEN": token}  # fmt: skip
    done = subprocess.run(
        [str(SCHEMATHESIS), "--config-file", str(CONFIG), "run", f"{base}/openapi.json",
         "--checks", "all", *GENERATION,
         "--header", f"Authorization: Bearer {token}", "--max-examples", str(EXAMPLES),
         "--workers", "1", "--phases", phases,
         *(["--include-path-regex", paths] if paths else []),
         "--report", "ndjson", "--report-dir", str(directory)],
        capture_output=True, text=True, timeout=TIMEOUT, check=False, env=env,
        cwd=directory,  # its .schemathesis cache (crash reports) stays out of the repository
    )  # fmt: skip
    report = done.stdout + done.stderr
    assert done.returncode == 0, report[report.find("FAILURES") :][:12000]
    for phase in phases.split(","):
        assert f"✅ {PHASE_TITLES[phase]}" in report, report[-3000:]
    reached: dict[str, Counter[int]] = {}
    for line in calls.read_text().splitlines() if calls.exists() else ():
        call = json.loads(line)
        reached.setdefault(call["operation"], Counter())[call["status"]] += 1
    return report, reached


def operations_where(base: str, holds: Callable[[dict[str, Any]], bool]) -> set[str]:
    """The document's operations ("METHOD /path") for which `holds(operation)` is true."""
    document = httpx.get(f"{base}/openapi.json", timeout=30).json()
    return {
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if holds(operation)
    }


def bearer_operations(base: str) -> set[str]:
    """The operations whose document asks for the bearer token."""
    return operations_where(
        base,
        lambda operation: any("bearer" in need for need in operation.get("security", [])),
    )


def operators_operations(base: str) -> set[str]:
    """The operations the document says are for operators (their description says so first)."""
    return operations_where(
        base, lambda operation: operation.get("description", "").startswith("Operators:")
    )


def test_schemathesis_finds_nothing_with_every_check_and_phase_as_a_user(
    service: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    """Every phase but the stateful one, which runs per area of the API below."""
    base, tokens = service
    started = time.monotonic()
    report, _ = schemathesis(base, tokens["demo"], "examples,coverage,fuzzing", tmp_path)
    tested = re.search(r"Tested: (\d+)", report)
    assert tested is not None
    assert int(tested.group(1)) >= 28, report[-3000:]
    # Its warnings are for people reading the report, not failures: operator-only operations
    # answer this user only 401/403, a low valid-input rate where the coverage phase sends one
    # Idempotency-Key with many bodies (a reused key is a 409 by design), and the text pattern
    # it cannot generate from (no NUL, no lone surrogate, as ECMA-262 reads it);
    # test_schema_agreement.py sends those values itself.
    print(f"schemathesis as a user: {time.monotonic() - started:.0f} s")


def test_schemathesis_as_the_operator_finds_nothing_fuzzing(
    service: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    """The operator-only routes, which refuse the user, worked with generated values."""
    base, tokens = service
    started = time.monotonic()
    schemathesis(base, tokens["operator"], "fuzzing", tmp_path)
    print(f"schemathesis fuzzing as the operator: {time.monotonic() - started:.0f} s")


# The stateful phase follows links at random: an operation a few links deep from where its
# scenarios start gets a share of them that shrinks as the API grows (with every operation in
# one run, one at the end of a chain from a new schedule was reached one to three times, or not
# at all). Run per area of the API, each operation's share is several times larger; each area
# holds the operations its links need (a schedule's chat channels need chat channels).
AREAS = {
    # The audit is linked from what registers webhooks and chat channels.
    "exports and announcements": "^/api/(exports|side-effects|deliveries|downloads|webhooks"
    "|chat-channels|audit|saved-queries|graph)",
    "schedules": "^/api/(schedules|schedule-preview|chat-channels|saved-queries)",
    # A person's access and e-mail preference are linked from an export's answer (its owner).
    "people and access": "^/api/(people|groups|saved-queries|exports$)",
}


def test_the_stateful_areas_hold_every_operation(
    service: tuple[str, dict[str, str]],
) -> None:
    base, _ = service
    paths = [op.split(" ", 1)[1] for op in bearer_operations(base)]
    assert [p for p in paths if not any(re.match(area, p) for area in AREAS.values())] == []


@pytest.mark.parametrize("area", AREAS)
def test_schemathesis_as_a_user_reaches_every_operation_of_theirs_statefully(
    service: tuple[str, dict[str, str]], tmp_path: Path, area: str
) -> None:
    """Every operation a user may call is reached. One the document says is for operators is
    refused to this user whenever it is reached (its links come from answers the user is
    refused, so it is reached rarely or not at all); the operator's stateful run, below, must
    reach each of those."""
    base, tokens = service
    started = time.monotonic()
    paths = AREAS[area]
    _, reached = schemathesis(base, tokens["demo"], "stateful", tmp_path, paths=paths)
    in_area = {op for op in bearer_operations(base) if re.match(paths, op.split(" ", 1)[1])}
    for_operators = operators_operations(base)
    for operation in sorted(in_area - for_operators):
        # What the phase did reach, with how often each status: where a miss comes from.
        assert operation in reached, (operation, reached)
    for operation in sorted(for_operators & set(reached)):
        assert not any(200 <= status < 300 for status in reached[operation]), (
            operation,
            reached[operation],
        )
    print(f"schemathesis statefully as a user, {area}: {time.monotonic() - started:.0f} s")


@pytest.mark.parametrize("area", AREAS)
def test_schemathesis_as_the_operator_reaches_every_operation_statefully(
    quiet_service: tuple[str, dict[str, str], str], tmp_path: Path, area: str
) -> None:
    base, tokens, destination = quiet_service
    started = time.monotonic()
    paths = AREAS[area]
    _, reached = schemathesis(base, tokens["operator"], "stateful", tmp_path, destination, paths)
    wanted = {op for op in bearer_operations(base) if re.match(paths, op.split(" ", 1)[1])}
    assert wanted <= set(reached), sorted(wanted - set(reached))
    # The re-drives met announcements given up (the receiver refuses every delivery), not only
    # ones still being tried.
    for redrive in set(REDRIVES) & wanted:
        assert {200, 204} & set(reached.get(redrive, ())), (redrive, reached.get(redrive))
    print(f"schemathesis statefully as the operator, {area}: {time.monotonic() - started:.0f} s")
