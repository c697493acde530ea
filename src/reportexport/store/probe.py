"""The behaviour probe: does the live database enforce the fixture's graph?

Inside a transaction that is always rolled back, the probe tries every (from, to, actor) move
over every state, a word that is not a state and actors that are none or unknown (an invented
word, every actor word the installed guard compares with or the history holds, and the names a
lax guard most often admits: `frozen_lifecycle.outside_actors`), and compares
what the database accepts with what the **fixture** declares, not with what the SQL generator
wrote: a generator that emits a weaker guard is caught here. For each move it accepts it checks
the history row, the side-effect rows of a terminal state and `finished_at`; for each it refuses,
that the refusal carries the graph's code. Then the refusals the tables owe: history is
append-only, jobs and side-effect rows are never deleted, a job starts in the initial state, a
side-effect row is one per job and effect and names an effect of its state.

SQL is written with literals the probe makes itself (fixture names, the probe's own words and
integer ids), so one text serves every dialect.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from frozen_lifecycle.graph import Graph
from frozen_lifecycle.outside_actors import GUARD_DEFINITIONS, HISTORY_ACTORS, outside_actors
from frozen_lifecycle.sql import q
from reportexport.core.job_status import TransitionError, check_transition

NOT_A_STATE = "probe_not_a_state"
NOT_AN_ACTOR = "probe_not_an_actor"

Run = Callable[[str], Sequence[Sequence[Any]]]


@dataclass
class ProbeReport:
    moves: int = 0
    refusals: int = 0
    findings: list[str] = field(default_factory=list)


class Probe:
    """Drives `run` (one SQL statement at a time, inside a transaction the caller rolls back)."""

    def __init__(self, graph: Graph, run: Run, *, truncate: bool) -> None:
        self.graph = graph
        self.run = run
        self.truncate = truncate
        self.report = ProbeReport()

    def everything(self) -> ProbeReport:
        actors: list[str | None] = [*self.graph.actors, None, NOT_AN_ACTOR]
        actors += self._outside_actors()
        targets = [*self.graph.states, NOT_A_STATE]
        paths = self._paths()
        for source in self.graph.states:
            if source not in paths:
                self._find(f"{source!r} cannot be reached from {self.graph.initial!r}")
                continue
            for target, actor in itertools.product(targets, actors):
                if target != source:
                    self._move(paths[source], source, target, actor)
        self._stray_intent(paths)
        self._table_refusals(paths)
        return self.report

    # -- moves ------------------------------------------------------------------------------

    def _move(
        self, path: list[tuple[str, str]], source: str, target: str, actor: str | None
    ) -> None:
        self.report.moves += 1
        label = f"{source} -> {target} by {actor or 'no actor'}"
        with self._savepoint():
            job = self._job_at(path)
            if job is None:
                self._find(f"{label}: the declared path to {source!r} was refused")
                return
            before = self._counts(job)
            error = self._try(
                # gate: allow no-source-state -- a blind move on purpose: the guard judges it
                f"UPDATE jobs SET status = {q(target)}, change_actor = {_text(actor)} "
                f"WHERE id = {job}"
            )
            status = self._one(f"SELECT status FROM jobs WHERE id = {job}")
            declared = self.graph.edge(source, target)
            allowed = declared is not None and actor == declared.actor
            if error is None and status == target:
                if not allowed:
                    self._find(f"{label}: accepted, the fixture does not allow it")
                else:
                    self._accepted(job, label, source, target, actor, before)
            elif allowed:
                self._find(f"{label}: refused ({error}), the fixture declares it")
            else:
                self.report.refusals += 1
                self._refused_with_the_graphs_code(label, source, target, actor, error or "")
                if self._counts(job) != before:
                    self._find(f"{label}: refused, yet history or side-effect rows were written")

    def _accepted(
        self,
        job: int,
        label: str,
        source: str,
        target: str,
        actor: str | None,
        before: tuple[int, int],
    ) -> None:
        history = self._rows(
            f"SELECT from_status, to_status, actor FROM job_history WHERE job_id = {job} "
            "ORDER BY id"
        )
        if len(history) != before[0] + 1 or tuple(history[-1]) != (source, target, actor):
            self._find(f"{label}: accepted without exactly one history row ({source}, {target})")
        effects = sorted(
            str(row[0])
            for row in self._rows(
                f"SELECT effect FROM job_side_effects WHERE job_id = {job} AND status = {q(target)}"
            )
        )
        wanted = sorted(self.graph.side_effects.get(target, ()))
        if effects != wanted:
            self._find(f"{label}: side-effect rows {effects}, the fixture's are {wanted}")
        finished = self._one(f"SELECT finished_at FROM jobs WHERE id = {job}") is not None
        if finished != self.graph.is_terminal(target):
            self._find(f"{label}: finished_at is {'set' if finished else 'empty'}")
        intent = self._one(f"SELECT change_actor FROM jobs WHERE id = {job}")
        if intent is not None:
            self._find(f"{label}: the change's actor stays on the row for the next change")

    def _refused_with_the_graphs_code(
        self, label: str, source: str, target: str, actor: str | None, error: str
    ) -> None:
        try:
            check_transition(source, target, actor or "", graph=self.graph)
        except TransitionError as expected:
            code = expected.code
            # SQLite's RAISE takes a fixed text: an unknown word reads "(not a state)".
            readable = code.replace(NOT_A_STATE, "(not a state)")
            if actor is not None and actor not in self.graph.actors:
                readable = readable.replace(f"actor:{actor}", "actor:(not an actor)")
            if code not in error and readable not in error:
                self._find(f"{label}: refused with {error!r}, the fixture's code is {code!r}")

    def _stray_intent(self, paths: dict[str, list[tuple[str, str]]]) -> None:
        """An actor named without a status change is cleared: no later change inherits it."""
        initial = self.graph.initial
        for edge in self.graph.transitions:
            if edge.from_status != initial or edge.from_status not in paths:
                continue
            with self._savepoint():
                job = self._job_at(paths[initial])
                if job is None:
                    return
                self._try(f"UPDATE jobs SET change_actor = {q(edge.actor)} WHERE id = {job}")
                # gate: allow no-source-state -- a blind move on purpose: the guard judges it
                error = self._try(f"UPDATE jobs SET status = {q(edge.to_status)} WHERE id = {job}")
                if error is None:
                    self._find(
                        f"{edge.from_status} -> {edge.to_status}: accepted without naming an "
                        "actor, after an actor was set alone before"
                    )
            return

    def _outside_actors(self) -> list[str]:
        """Actor words beyond the fixture's: the installed guard's, the history's, plausible."""
        definitions = [str(row[0]) for query in GUARD_DEFINITIONS for row in self._answer(query)]
        history = [row[0] for row in self._answer(HISTORY_ACTORS)]
        return list(outside_actors(self.graph, definitions, history))

    def _answer(self, statement: str) -> Sequence[Sequence[Any]]:
        """The rows of a query another dialect may not understand: none where it fails."""
        name = f"probe_try_{next(_Savepoint.names)}"
        self.run(f"SAVEPOINT {name}")
        try:
            rows = self.run(statement)
        except Exception:  # a catalog of another dialect: nothing to read there
            self.run(f"ROLLBACK TO SAVEPOINT {name}")
            rows = []
        self.run(f"RELEASE SAVEPOINT {name}")
        return rows

    # -- the tables' own refusals -----------------------------------------------------------

    def _table_refusals(self, paths: dict[str, list[tuple[str, str]]]) -> None:
        terminal = next((s for s in self.graph.terminal if self.graph.side_effects.get(s)), None)
        for other in self.graph.states:
            if other != self.graph.initial:
                self._refuses(
                    f"a job created as {other!r}",
                    "INSERT INTO jobs (owner, saved_query, query_sql, query_hash, status) "
                    f"VALUES ('probe', 'probe', 'SELECT 1', 'probe', {q(other)})",
                )
        if terminal is None or terminal not in paths:
            return
        effect = self.graph.side_effects[terminal][0]
        with self._savepoint():
            job = self._job_at(paths[terminal])
            if job is None:
                return
            for what, statement in (
                ("changing history", f"UPDATE job_history SET reason = 'x' WHERE job_id = {job}"),
                ("deleting history", f"DELETE FROM job_history WHERE job_id = {job}"),
                ("deleting a job", f"DELETE FROM jobs WHERE id = {job}"),
                (
                    "deleting a side-effect row",
                    f"DELETE FROM job_side_effects WHERE job_id = {job}",
                ),
                (
                    "renaming a side-effect row's effect",
                    f"UPDATE job_side_effects SET effect = 'probe_effect' WHERE job_id = {job}",
                ),
                (
                    "a second row for one job and effect",
                    "INSERT INTO job_side_effects (job_id, status, effect) "
                    f"VALUES ({job}, {q(terminal)}, {q(effect)})",
                ),
                (
                    "a side-effect row its state does not declare",
                    "INSERT INTO job_side_effects (job_id, status, effect) "
                    f"VALUES ({job}, {q(self.graph.initial)}, 'probe_effect')",
                ),
            ):
                self._refuses(what, statement)
            if self.truncate:
                for table in ("job_history", "jobs", "job_side_effects"):
                    self._refuses(f"truncating {table}", f"TRUNCATE {table} CASCADE")

    def _refuses(self, what: str, statement: str) -> None:
        self.report.refusals += 1
        with self._savepoint():
            if self._try(statement) is None:
                self._find(f"{what}: accepted, the tables must refuse it")

    # -- helpers ----------------------------------------------------------------------------

    def _paths(self) -> dict[str, list[tuple[str, str]]]:
        """For each state, the declared moves (target, actor) that reach it from initial."""
        paths: dict[str, list[tuple[str, str]]] = {self.graph.initial: []}
        queue = deque([self.graph.initial])
        while queue:
            current = queue.popleft()
            for edge in self.graph.transitions:
                if edge.from_status == current and edge.to_status not in paths:
                    paths[edge.to_status] = [*paths[current], (edge.to_status, edge.actor)]
                    queue.append(edge.to_status)
        return paths

    def _job_at(self, path: list[tuple[str, str]]) -> int | None:
        rows = self._rows(
            "INSERT INTO jobs (owner, saved_query, query_sql, query_hash, status) "
            f"VALUES ('probe', 'probe', 'SELECT 1', 'probe', {q(self.graph.initial)}) "
            "RETURNING id"
        )
        job = int(rows[0][0])
        for target, actor in path:
            error = self._try(
                # gate: allow no-source-state -- a blind move on purpose: the guard judges it
                f"UPDATE jobs SET status = {q(target)}, change_actor = {q(actor)} WHERE id = {job}"
            )
            if error is not None:
                return None
        return job

    def _counts(self, job: int) -> tuple[int, int]:
        history = self._one(f"SELECT count(*) FROM job_history WHERE job_id = {job}")
        effects = self._one(f"SELECT count(*) FROM job_side_effects WHERE job_id = {job}")
        return int(history), int(effects)

    def _try(self, statement: str) -> str | None:
        """Run one statement: None when it took effect, or why it was refused (and then it
        left no trace, the transaction usable)."""
        name = f"probe_try_{next(_Savepoint.names)}"
        self.run(f"SAVEPOINT {name}")
        try:
            self.run(statement)
        except Exception as exc:
            self.run(f"ROLLBACK TO SAVEPOINT {name}")
            self.run(f"RELEASE SAVEPOINT {name}")
            return " ".join(str(exc).split())[:200]
        self.run(f"RELEASE SAVEPOINT {name}")
        return None

    def _rows(self, statement: str) -> Sequence[Sequence[Any]]:
        return self.run(statement)

    def _one(self, statement: str) -> Any:
        return self.run(statement)[0][0]

    def _savepoint(self) -> _Savepoint:
        return _Savepoint(self.run)

    def _find(self, finding: str) -> None:
        self.report.findings.append(finding)


class _Savepoint:
    """SAVEPOINT ... ROLLBACK TO: whatever happens inside leaves the transaction as it was."""

    names = itertools.count()

    def __init__(self, run: Run) -> None:
        self.run = run
        self.name = f"probe_{next(self.names)}"

    def __enter__(self) -> None:
        self.run(f"SAVEPOINT {self.name}")

    def __exit__(self, *exc: object) -> None:
        self.run(f"ROLLBACK TO SAVEPOINT {self.name}")
        self.run(f"RELEASE SAVEPOINT {self.name}")


def _text(value: str | None) -> str:
    return "NULL" if value is None else q(value)
