"""Where a database's schema stands against the migrations and the fixture (no I/O)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from reportexport.store.errors import SchemaMismatchError

SCHEMA_VERSION_KEY = "schema_version"
FINGERPRINT_KEY = "graph_fingerprint"
GRAPH_KEY = "graph_document"
# Which job store this is: the object store it writes into carries the same id, so two job
# stores can never share one object store (the sweeper would delete each other's files).
STORE_ID_KEY = "store_id"
# The digest of the guards, triggers, constraints, indexes, columns and graph rows that the
# migrations and the graph SQL make (see store/definitions.py), recorded by `db upgrade`.
DEFINITIONS_KEY = "definitions_digest"
# The digest of the scripts that made them (the migrations and the graph SQL of the program that
# ran `db upgrade`): a program with other scripts expects another inventory.
PROGRAM_KEY = "program_digest"


def new_store_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True, kw_only=True)
class SchemaStatus:
    version: int
    latest_version: int
    fingerprint: str | None
    fixture_fingerprint: str
    store_id: str | None = None
    definitions_recorded: str | None = None
    definitions_installed: str | None = None
    program_recorded: str | None = None
    program_running: str | None = None

    @property
    def current(self) -> bool:
        return not self.problems()

    def problems(self) -> list[str]:
        found = []
        if self.version == 0:
            found.append("the database has no reportexport schema yet")
        elif self.version < self.latest_version:
            found.append(f"schema version {self.version} is older than {self.latest_version}")
        elif self.version > self.latest_version:
            found.append(
                f"schema version {self.version} is newer than this program's "
                f"{self.latest_version}: upgrade reportexport"
            )
        if self.version and self.fingerprint != self.fixture_fingerprint:
            found.append(
                f"the database holds the job status graph {_short(self.fingerprint)}, "
                f"the fixture is {_short(self.fixture_fingerprint)}"
            )
        elif self.version == self.latest_version and self.program_recorded != self.program_running:
            found.append(
                "the database was upgraded by a reportexport whose migrations or graph SQL "
                f"differ from this one's (scripts {_short(self.program_recorded)}, this program's "
                f"{_short(self.program_running)})"
            )
        elif self.version and self.definitions_installed != self.definitions_recorded:
            found.append(
                "the guards and triggers installed differ from those `db upgrade` installed "
                "(`reportexport db check` names them)"
            )
        return found

    def require_current(self, url: str) -> None:
        problems = self.problems()
        if problems:
            raise SchemaMismatchError(
                "; ".join(problems)
                + f". Run `reportexport db upgrade --database {redact(url)}` first."
            )


def _short(fingerprint: str | None) -> str:
    return fingerprint[:12] if fingerprint else "(none)"


def redact(url: str) -> str:
    """The URL without a password, for messages."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    return f"{scheme}{sep}{userinfo.split(':', 1)[0]}:***@{host}"
