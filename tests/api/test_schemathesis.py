"""schemathesis' own command line against a running `serve`: every check, every phase.

`schemathesis run URL --checks all` generates requests from the OpenAPI document (examples,
coverage of boundaries, fuzzing) and, following the document's links from the operations that
create exports and webhook endpoints, stateful sequences over the whole API; deterministically,
so that the same commit gets the same answer every run (`./scripts/fuzz` hunts with random
seeds, outside CI, and what it finds becomes a case of `test_schema_agreement.py`). It fails when an
answer is a 5xx, is undocumented or off its schema, when the schema accepts what the service
refuses or the reverse, or when `Allow` does not list a path's methods. The number of examples
comes from $REPORTEXPORT_EXAMPLES (the CI profile bounds it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.test_serve import free_port, wait_until_up
from tests.conftest import EXAMPLES

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
# ./scripts/fuzz sets a random seed; the suite generates deterministically.
SEED = os.environ.get("REPORTEXPORT_FUZZ_SEED")
GENERATION = ["--seed", SEED] if SEED else ["--generation-deterministic"]
CONFIG = Path(__file__).with_name("schemathesis.toml")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    home = tmp_path_factory.mktemp("schemathesis") / "var"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTEXPORT_")}
    # Limits high enough that a fuzzer's thousand exports are not refused for their number.
    env.update(REPORTEXPORT_HOME=str(home), REPORTEXPORT_MAX_ACTIVE_EXPORTS="1000000",
               REPORTEXPORT_MAX_EXPORTS_PER_MINUTE="1000000")  # fmt: skip
    log = home.parent / "serve.log"
    with open(log, "wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "reportexport", "serve", "--port", str(port),
             "--demo-rows", "2000", "--grace-seconds", "1"],
            env=env, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_up(base)
        token = re.search(r"created operator 'operator'; token \(shown once\): (\S+)",
                          log.read_text())  # fmt: skip
        assert token is not None, log.read_text()
        yield base, token.group(1)
    finally:
        server.terminate()
        try:
            # grace_seconds 1 and one delivery in flight at most: it stops in seconds.
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            pytest.fail(f"serve did not stop within 60 s of SIGTERM:\n{log.read_text()[-4000:]}")
    assert "Traceback" not in log.read_text()


def test_schemathesis_finds_nothing_with_every_check_and_phase(
    service: tuple[str, str], tmp_path: Path
) -> None:
    base, token = service
    cache = tmp_path
    done = subprocess.run(
        [str(SCHEMATHESIS), "--config-file", str(CONFIG), "run", f"{base}/openapi.json",
         "--checks", "all", *GENERATION,
         "--header", f"Authorization: Bearer {token}", "--max-examples", str(EXAMPLES),
         "--workers", "1", "--phases", "examples,coverage,fuzzing,stateful"],
        capture_output=True, text=True, timeout=900, check=False,
        cwd=cache,  # its .schemathesis cache (crash reports) stays out of the repository
    )  # fmt: skip
    report = done.stdout + done.stderr
    assert done.returncode == 0, report[-6000:]
    assert re.search(r"Tested: (\d+)", report) is not None
    tested = int(re.search(r"Tested: (\d+)", report).group(1))  # type: ignore[union-attr]
    assert tested >= 19, report[-3000:]
    assert "✅ Stateful" in report, report[-3000:]
