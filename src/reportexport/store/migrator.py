"""Building and checking the schema, once for every backend.

`Schema` applies pending migrations and the graph SQL in one transaction, records what it
installed, reports where a database stands, and runs the behaviour probe. What differs between
databases (how a script runs, how the inventory is read, the scratch copy) is the driver's.
"""

from __future__ import annotations

import json
import time

from frozen_lifecycle.graph import Graph
from reportexport.core.retry import Backoff
from reportexport.store.definitions import Definitions, program_digest
from reportexport.store.dialect import migration_files
from reportexport.store.driver import SchemaDriver
from reportexport.store.errors import StoreError, TransientStoreError
from reportexport.store.guards import GRAPH_SQL
from reportexport.store.probe import Probe, ProbeReport
from reportexport.store.schema import (
    DEFINITIONS_KEY,
    FINGERPRINT_KEY,
    GRAPH_KEY,
    PROGRAM_KEY,
    SCHEMA_VERSION_KEY,
    STORE_ID_KEY,
    SchemaStatus,
    new_store_id,
)

# An upgrade waits for a table lock only briefly (the driver's schema_access), since every
# session that wants the table queues behind a waiting upgrade; then it tries again, after a
# pause that grows and is jittered so that it does not keep arriving with the same worker.
UPGRADE_ATTEMPTS = 30
UPGRADE_BACKOFF = Backoff(first=0.2, ceiling=2.0, jitter=(0.5, 1.5))


class Schema:
    def __init__(self, driver: SchemaDriver, graph: Graph) -> None:
        self.driver = driver
        self.graph = graph

    @property
    def migrations(self) -> list[tuple[int, str, str]]:
        return migration_files(self.driver.dialect)

    def graph_sql(self) -> str:
        return GRAPH_SQL[self.driver.dialect](self.graph)

    def scripts(self, migrations: list[tuple[int, str, str]] | None = None) -> list[str]:
        """What `db upgrade` runs on an empty database: every migration (or those given), then
        the graph SQL."""
        chosen = self.migrations if migrations is None else migrations
        return [*(migration for _, _, migration in chosen), self.graph_sql()]

    def status(self) -> SchemaStatus:
        """Where the database stands: a few catalog reads, nothing built."""
        with self.driver.schema_access(write=False) as access:
            meta = access.meta()
            installed = access.definitions().digest if meta else None
        return SchemaStatus(
            version=int(meta.get(SCHEMA_VERSION_KEY, 0)),
            latest_version=len(self.migrations),
            fingerprint=meta.get(FINGERPRINT_KEY),
            fixture_fingerprint=self.graph.fingerprint,
            store_id=meta.get(STORE_ID_KEY),
            definitions_recorded=meta.get(DEFINITIONS_KEY),
            definitions_installed=installed,
            program_recorded=meta.get(PROGRAM_KEY),
            program_running=program_digest(self.scripts()),
        )

    def drift(self, version: int) -> list[str]:
        """How the installed definitions differ from what this program's migrations up to
        `version` and its graph SQL make on an empty database, built now (nothing recorded
        is trusted)."""
        if not 0 < version <= len(self.migrations):
            return []
        expected = self.expected_definitions(self.migrations[:version])
        return self.installed_definitions().differences(expected)

    def upgrade(self, *, to_version: int | None = None) -> SchemaStatus:
        """Apply pending migrations (up to `to_version`, by default all), and the graph whenever
        the fixture changed or what is installed differs from what the migrations and the graph
        make; one transaction.

        A lock it cannot take at once (a live worker's transaction holds the table) makes it
        roll back and try again, up to UPGRADE_ATTEMPTS times, rather than stall the sessions
        queued behind its own lock request.
        """
        migrations = [m for m in self.migrations if to_version is None or m[0] <= to_version]
        expected = self.expected_definitions(migrations)
        started = time.monotonic()
        for attempt in range(UPGRADE_ATTEMPTS):
            try:
                self._upgrade(migrations, expected)
                break
            except TransientStoreError as exc:
                if attempt == UPGRADE_ATTEMPTS - 1:
                    raise TransientStoreError(
                        f"db upgrade gave up after {UPGRADE_ATTEMPTS} attempts in "
                        f"{time.monotonic() - started:.0f} s, the database unchanged: a lock it "
                        "needs stayed taken (a long transaction on the job tables?) or the "
                        f"database did not answer; the last attempt: {exc}"
                    ) from exc
                time.sleep(UPGRADE_BACKOFF.wait(attempt + 1))
        return self.status()

    def _upgrade(self, migrations: list[tuple[int, str, str]], expected: Definitions) -> None:
        with self.driver.schema_access(write=True) as access:
            meta = access.meta()
            version = int(meta.get(SCHEMA_VERSION_KEY, 0))
            updates: dict[str, str] = {}
            for number, _, migration in migrations:
                if number > version:
                    access.run_script(migration)
                    updates[SCHEMA_VERSION_KEY] = str(number)
            graph_changed = meta.get(FINGERPRINT_KEY) != self.graph.fingerprint
            if graph_changed or access.definitions() != expected:
                access.before_graph()
                access.run_script(self.graph_sql())
            still = access.definitions().differences(expected)
            if still:
                raise StoreError(
                    "the job store holds objects db upgrade cannot make right: " + "; ".join(still)
                )
            updates[FINGERPRINT_KEY] = self.graph.fingerprint
            updates[GRAPH_KEY] = json.dumps(self.graph.document, sort_keys=True)
            updates[DEFINITIONS_KEY] = expected.digest
            updates[PROGRAM_KEY] = program_digest(self.scripts(migrations))
            if STORE_ID_KEY not in meta:
                updates[STORE_ID_KEY] = new_store_id()
            access.set_meta(updates)

    def installed_definitions(self) -> Definitions:
        """The guards, triggers, constraints, indexes, columns and graph rows installed."""
        with self.driver.schema_access(write=False) as access:
            return access.definitions()

    def expected_definitions(
        self, migrations: list[tuple[int, str, str]] | None = None
    ) -> Definitions:
        """The same, as every migration (or those given) and the graph SQL make them on an
        empty database."""
        return self.driver.expected_definitions(self.scripts(migrations))

    def probe(self) -> ProbeReport:
        """Every move and refusal tried on the live database (rolled back), against the graph."""
        with self.driver.rolled_back() as run:
            return Probe(self.graph, run, truncate=self.driver.supports_truncate).everything()

    def grant_service_role(self, role: str) -> bool:
        return self.driver.grant_service_role(role)
