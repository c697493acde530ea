"""What a job store has installed: its guards, triggers, constraints, indexes, columns and graph
rows, as the database itself prints them, and how two such inventories differ.

`db upgrade` builds the expected inventory by applying every migration and the graph SQL to a
scratch copy (a throwaway in-memory SQLite database; a PostgreSQL schema inside a transaction
that is rolled back), so both sides are printed by the same database in its own form. It
records the expected inventory's digest and the digest of the program's scripts (its
migrations and graph SQL). Every process compares, when it starts, the installed inventory
with the recorded digest and its own scripts with the recorded ones, which costs a few catalog
reads; `db check` builds the expected inventory afresh and trusts nothing recorded. A lax guard
a migration left behind, a hand edit in a shell, or a database upgraded by a program with other
scripts shows up as a named difference.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Definitions:
    """Each installed object by kind and name (`trigger jobs.jobs_status_guard`) and its text."""

    items: Mapping[str, str]

    @property
    def digest(self) -> str:
        canonical = json.dumps(sorted(self.items.items()), separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def differences(self, expected: Definitions) -> list[str]:
        """One line per object that is missing, unexpected or not as expected."""
        lines = []
        for name in sorted(expected.items.keys() | self.items.keys()):
            have, want = self.items.get(name), expected.items.get(name)
            if have == want:
                continue
            if have is None:
                lines.append(f"{name} is missing")
            elif want is None:
                lines.append(f"{name} is not part of the schema (an addition by hand?)")
            else:
                lines.append(f"{name} differs from what `db upgrade` installs")
        return lines


def normalized(text: str, schema: str | None = None) -> str:
    """The text with its schema's name taken out (a scratch schema reads like the real one)."""
    if schema:
        text = re.sub(rf"\b{re.escape(schema)}\.", "", text)
        text = text.replace(f"'{schema}'", "'<schema>'").replace(f'"{schema}"', '"<schema>"')
    return text.strip()


def graph_rows(rows: Mapping[str, list[tuple[object, ...]]]) -> dict[str, str]:
    """The graph tables' contents as inventory items: what the guards read."""
    return {
        f"rows {table}": json.dumps(sorted(map(list, found)), default=str)
        for table, found in rows.items()
    }


GRAPH_TABLES = {
    "job_states": "SELECT status, is_initial, is_terminal, position FROM job_states",
    "job_transitions": "SELECT from_status, to_status, actor FROM job_transitions",
    "job_state_effects": "SELECT status, effect, position FROM job_state_effects",
}


# Bump when the way an inventory is read changes: the digests recorded before no longer compare.
INVENTORY_FORMAT = 2


def program_digest(scripts: Sequence[str]) -> str:
    """The digest of what a program installs (its migrations, then its graph SQL) and of how it
    reads an inventory back: two programs with equal digests expect the same inventory."""
    digest = hashlib.sha256(f"inventory {INVENTORY_FORMAT}\n".encode())
    for script in scripts:
        encoded = script.encode("utf-8")
        digest.update(f"{len(encoded)}\n".encode())
        digest.update(encoded)
    return digest.hexdigest()
