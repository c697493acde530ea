"""SQL generated from the job status graph: what each database holds of the fixture.

Pure functions of the graph (standard library only), so the gate can regenerate and compare
committed copies without importing a database driver. Applying the text is idempotent: a
migrator runs it whenever the database's recorded fingerprint differs from the fixture's
(`reportexport db upgrade` does), or a team pastes `frozen-lifecycle sql` into a migration.

The guards expect these tables (the README of this package lists their columns): `jobs` with
`status` and the change intent `change_actor`, `change_person`, `change_reason`,
`change_worker`, `updated_at` and `finished_at`; `job_history`; `job_side_effects`; and the
graph's own `job_states`, `job_transitions`, `job_state_effects`, which the text refills.
"""

from __future__ import annotations

from collections.abc import Iterable

from frozen_lifecycle.graph import Graph
from frozen_lifecycle.provenance import DEFAULT_PROVENANCE, Provenance

DIALECTS = ("postgresql", "sqlite")
HEADER = "-- Generated from {fixture} by `{command}`: do not edit.\n-- fingerprint: {fingerprint}\n"
SQLITE_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"


def q(value: str) -> str:
    """A SQL string literal. Fixture names are validated plain lower-case words already."""
    return "'" + value.replace("'", "''") + "'"


def in_list(values: Iterable[str]) -> str:
    return "(" + ", ".join(q(v) for v in values) + ")"


def graph_rows(graph: Graph, *, true: str, false: str) -> list[str]:
    """Statements that refill the three graph tables from the fixture."""
    states = ",\n  ".join(
        f"({q(s)}, {true if s == graph.initial else false}, "
        f"{true if graph.is_terminal(s) else false}, {i})"
        for i, s in enumerate(graph.states)
    )
    edges = ",\n  ".join(
        f"({q(e.from_status)}, {q(e.to_status)}, {q(e.actor)})" for e in graph.transitions
    )
    effects = ",\n  ".join(
        f"({q(state)}, {q(effect)}, {i})"
        for state, names in graph.side_effects.items()
        for i, effect in enumerate(names)
    )
    statements = [
        "DELETE FROM job_state_effects;",
        "DELETE FROM job_transitions;",
        "DELETE FROM job_states;",
        f"INSERT INTO job_states (status, is_initial, is_terminal, position) VALUES\n  {states};",
        f"INSERT INTO job_transitions (from_status, to_status, actor) VALUES\n  {edges};",
    ]
    if effects:
        statements.append(
            f"INSERT INTO job_state_effects (status, effect, position) VALUES\n  {effects};"
        )
    return statements


def _header(graph: Graph, provenance: Provenance) -> str:
    return HEADER.format(
        fixture=provenance.fixture, command=provenance.command, fingerprint=graph.fingerprint
    )


def postgres_graph_sql(
    graph: Graph, *, provenance: Provenance = DEFAULT_PROVENANCE, notify_channel: str | None = None
) -> str:
    """Graph tables, status and actor constraints, and the guard function and its trigger.

    With `notify_channel`, the guard also sends `NOTIFY channel, '<id> <status>'` for each
    change no worker made (a person's cancel), so workers can listen for it.
    """
    terminal = in_list(graph.terminal)
    parts = [
        _header(graph, provenance),
        *graph_rows(graph, true="true", false="false"),
        "",
        "ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_status_is_a_state;",
        f"ALTER TABLE jobs ADD CONSTRAINT jobs_status_is_a_state\n"
        f"  CHECK (status IN {in_list(graph.states)});",
        "ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_finished_exactly_when_terminal;",
        f"ALTER TABLE jobs ADD CONSTRAINT jobs_finished_exactly_when_terminal\n"
        f"  CHECK ((status IN {terminal}) = (finished_at IS NOT NULL));",
        f"ALTER TABLE jobs ALTER COLUMN status SET DEFAULT {q(graph.initial)};",
        "",
        _queue_index(graph),
        "",
        _postgres_guard(graph, notify_channel),
    ]
    return "\n".join(parts) + "\n"


_PG_GUARD = """\
-- Every status change: a declared edge, its actor, one history row, the side-effect rows of
-- a terminal state, the intent cleared. Generated so that no lookup runs per row.
-- SECURITY DEFINER: a service role needs no INSERT on job_history or job_side_effects.
CREATE OR REPLACE FUNCTION job_status_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    declared_actor text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status IS DISTINCT FROM @INITIAL@ THEN
            RAISE EXCEPTION 'illegal:->%', NEW.status USING ERRCODE = 'check_violation',
                HINT = 'a job is created in the initial state of the graph';
        END IF;
    ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
        IF OLD.status IN @TERMINAL@ THEN
            RAISE EXCEPTION 'terminal:%', OLD.status USING ERRCODE = 'check_violation',
                HINT = 'a job in a terminal state never changes status again';
        END IF;
        declared_actor := CASE
@EDGES@
        END;
        IF declared_actor IS NULL THEN
            RAISE EXCEPTION 'illegal:%->%', OLD.status, NEW.status
                USING ERRCODE = 'check_violation', HINT = 'see SELECT * FROM job_transitions';
        END IF;
        IF NEW.change_actor IS DISTINCT FROM declared_actor THEN
            RAISE EXCEPTION 'actor:%', coalesce(NEW.change_actor, '')
                USING ERRCODE = 'check_violation',
                HINT = format('%s->%s belongs to actor %s: name it with change_actor = %L',
                              OLD.status, NEW.status, declared_actor, declared_actor);
        END IF;
        INSERT INTO job_history (job_id, from_status, to_status, actor, person, reason, worker)
        VALUES (OLD.id, OLD.status, NEW.status, NEW.change_actor, NEW.change_person,
                NEW.change_reason, NEW.change_worker);
        CASE NEW.status
@TERMINALS@
            ELSE NULL;
        END CASE;
        NEW.updated_at := clock_timestamp();
@NOTIFY@    END IF;
    NEW.change_actor := NULL;
    NEW.change_person := NULL;
    NEW.change_reason := NULL;
    NEW.change_worker := NULL;
    RETURN NEW;
END $$;

DROP TRIGGER IF EXISTS jobs_status_guard ON jobs;
CREATE TRIGGER jobs_status_guard
    BEFORE INSERT OR UPDATE OF status, change_actor, change_person, change_reason, change_worker
    ON jobs FOR EACH ROW EXECUTE FUNCTION job_status_guard();
ALTER TABLE jobs ENABLE ALWAYS TRIGGER jobs_status_guard;"""


_PG_NOTIFY = """\
        -- Workers learn of changes they did not make (a person's cancel); NOTIFY serialises
        -- commits, so changes made by workers send none.
        IF NEW.change_worker IS NULL THEN
            PERFORM pg_notify(@CHANNEL@, OLD.id || ' ' || NEW.status);
        END IF;
"""


def _postgres_guard(graph: Graph, notify_channel: str | None) -> str:
    notify = _PG_NOTIFY.replace("@CHANNEL@", q(notify_channel)) if notify_channel else ""
    edges = "\n".join(
        f"            WHEN OLD.status = {q(e.from_status)} AND NEW.status = {q(e.to_status)}"
        f" THEN {q(e.actor)}"
        for e in graph.transitions
    )
    terminals = []
    for state in graph.terminal:
        terminals.append(f"            WHEN {q(state)} THEN")
        terminals.append("                NEW.finished_at := clock_timestamp();")
        effects = graph.side_effects.get(state, ())
        if effects:
            rows = ", ".join(f"(OLD.id, {q(state)}, {q(effect)})" for effect in effects)
            terminals.append(
                f"                INSERT INTO job_side_effects (job_id, status, effect)\n"
                f"                VALUES {rows};"
            )
    return (
        _PG_GUARD.replace("@INITIAL@", q(graph.initial))
        .replace("@TERMINAL@", in_list(graph.terminal))
        .replace("@EDGES@", edges)
        .replace("@TERMINALS@", "\n".join(terminals))
        .replace("@NOTIFY@", notify)
    )


def sqlite_graph_sql(graph: Graph, *, provenance: Provenance = DEFAULT_PROVENANCE) -> str:
    """Graph tables and the guard triggers.

    SQLite's RAISE takes a literal message only, so every error the graph can produce is
    spelled out here, one CASE branch per (state) or (from, to) or (edge, actor).
    """
    parts = [
        _header(graph, provenance),
        *graph_rows(graph, true="1", false="0"),
        "",
        _queue_index(graph),
        "",
        "DROP TRIGGER IF EXISTS jobs_insert_guard;",
        _sqlite_insert_guard(graph),
        "DROP TRIGGER IF EXISTS jobs_status_guard;",
        _sqlite_status_guard(graph),
        "DROP TRIGGER IF EXISTS jobs_status_recorded;",
        _sqlite_status_recorded(graph),
        *_sqlite_effect_triggers(graph),
    ]
    return "\n".join(parts) + "\n"


def _queue_index(graph: Graph) -> str:
    """Claims scan only the jobs still in the initial state, oldest first."""
    return (
        "DROP INDEX IF EXISTS jobs_waiting;\n"
        f"CREATE INDEX jobs_waiting ON jobs (id) WHERE status = {q(graph.initial)};"
    )


def _sqlite_effect_triggers(graph: Graph) -> list[str]:
    """One trigger per terminal state with side effects, writing its rows in fixture order."""
    statements = ["DROP TRIGGER IF EXISTS " + _effects_trigger(s) + ";" for s in graph.states]
    for state, effects in graph.side_effects.items():
        if not effects:
            continue
        rows = ",\n         ".join(f"(NEW.id, {q(state)}, {q(effect)})" for effect in effects)
        statements.append(
            f"CREATE TRIGGER {_effects_trigger(state)} AFTER UPDATE OF status ON jobs\n"
            f"WHEN NEW.status = {q(state)} AND OLD.status IS NOT {q(state)}\n"
            "BEGIN\n"
            "  INSERT INTO job_side_effects (job_id, status, effect)\n"
            f"  VALUES {rows};\n"
            "END;"
        )
    return statements


# Every SQLite trigger named so belongs to the graph: `db upgrade` drops those of states that
# left the fixture.
SQLITE_EFFECTS_TRIGGER_PREFIX = "jobs_side_effects_of_"


def _effects_trigger(state: str) -> str:
    return SQLITE_EFFECTS_TRIGGER_PREFIX + state


def _raise(message: str) -> str:
    return f"RAISE(ABORT, {q(message)})"


def _sqlite_insert_guard(graph: Graph) -> str:
    branches = [
        f"    WHEN {q(s)} THEN {_raise(f'illegal:->{s}')}"
        for s in graph.states
        if s != graph.initial
    ]
    return (
        "CREATE TRIGGER jobs_insert_guard BEFORE INSERT ON jobs\n"
        f"WHEN NEW.status IS NOT {q(graph.initial)}\n"
        "BEGIN\n"
        "  SELECT CASE NEW.status\n"
        + "".join(b + "\n" for b in branches)
        + f"    ELSE {_raise('illegal:->(not a state)')}\n"
        "  END;\n"
        "END;"
    )


def _sqlite_status_guard(graph: Graph) -> str:
    # A legal (from, to, actor) stops the CASE at once; only illegal changes go further.
    branches = [
        f"    WHEN OLD.status = {q(e.from_status)} AND NEW.status = {q(e.to_status)}"
        f" AND NEW.change_actor = {q(e.actor)} THEN NULL"
        for e in graph.transitions
    ]
    branches += [
        f"    WHEN OLD.status = {q(s)} THEN {_raise(f'terminal:{s}')}" for s in graph.terminal
    ]
    for source in graph.states:
        if graph.is_terminal(source):
            continue
        targets = [e.to_status for e in graph.transitions if e.from_status == source]
        branches.append(
            f"    WHEN OLD.status = {q(source)} AND NEW.status NOT IN {in_list(graph.states)}"
            f" THEN {_raise(f'illegal:{source}->(not a state)')}"
        )
        branches += [
            f"    WHEN OLD.status = {q(source)} AND NEW.status = {q(target)}"
            f" THEN {_raise(f'illegal:{source}->{target}')}"
            for target in graph.states
            if target != source and target not in targets
        ]
    for edge in graph.transitions:
        move = f"OLD.status = {q(edge.from_status)} AND NEW.status = {q(edge.to_status)}"
        branches.append(f"    WHEN {move} AND NEW.change_actor IS NULL THEN {_raise('actor:')}")
        branches += [
            f"    WHEN {move} AND NEW.change_actor = {q(actor)} THEN {_raise(f'actor:{actor}')}"
            for actor in graph.actors
            if actor != edge.actor
        ]
        branches.append(
            f"    WHEN {move} AND NEW.change_actor IS NOT {q(edge.actor)}"
            f" THEN {_raise('actor:(not an actor)')}"
        )
    return (
        "CREATE TRIGGER jobs_status_guard BEFORE UPDATE OF status ON jobs\n"
        "WHEN NEW.status IS NOT OLD.status\n"
        "BEGIN\n"
        "  SELECT CASE\n" + "".join(b + "\n" for b in branches) + "  END;\n"
        "END;"
    )


def _sqlite_status_recorded(graph: Graph) -> str:
    return (
        "CREATE TRIGGER jobs_status_recorded AFTER UPDATE OF status ON jobs\n"
        "WHEN NEW.status IS NOT OLD.status\n"
        "BEGIN\n"
        "  INSERT INTO job_history\n"
        "         (job_id, from_status, to_status, actor, person, reason, worker)\n"
        "  VALUES (NEW.id, OLD.status, NEW.status, NEW.change_actor, NEW.change_person,\n"
        "          NEW.change_reason, NEW.change_worker);\n"
        "  UPDATE jobs\n"
        "     SET change_actor = NULL, change_person = NULL, change_reason = NULL,\n"
        "         change_worker = NULL,\n"
        f"         updated_at = {SQLITE_NOW},\n"
        f"         finished_at = CASE WHEN NEW.status IN {in_list(graph.terminal)}\n"
        f"                            THEN {SQLITE_NOW} ELSE NULL END\n"
        "   WHERE id = NEW.id;\n"
        "END;"
    )


def guards_sql(
    graph: Graph,
    dialect: str,
    *,
    provenance: Provenance = DEFAULT_PROVENANCE,
    notify_channel: str | None = None,
) -> str:
    """The guards of one dialect (`postgresql` or `sqlite`)."""
    if dialect == "postgresql":
        return postgres_graph_sql(graph, provenance=provenance, notify_channel=notify_channel)
    if dialect == "sqlite":
        return sqlite_graph_sql(graph, provenance=provenance)
    raise ValueError(f"no guards for dialect {dialect!r}: choose one of {', '.join(DIALECTS)}")


_SQLITE_TABLES = f"""\
-- The tables the guards of `frozen-lifecycle sql --dialect sqlite` expect, at their smallest:
-- add your own columns to jobs, job_history and job_side_effects as you need.
CREATE TABLE IF NOT EXISTS job_states (
  status TEXT PRIMARY KEY,
  is_initial INTEGER NOT NULL,
  is_terminal INTEGER NOT NULL,
  position INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS job_transitions (
  from_status TEXT NOT NULL,
  to_status TEXT NOT NULL,
  actor TEXT NOT NULL,
  PRIMARY KEY (from_status, to_status)
);
CREATE TABLE IF NOT EXISTS job_state_effects (
  status TEXT NOT NULL,
  effect TEXT NOT NULL,
  position INTEGER NOT NULL,
  PRIMARY KEY (status, effect)
);
CREATE TABLE IF NOT EXISTS jobs (
  id INTEGER PRIMARY KEY,
  status TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT ({SQLITE_NOW}),
  updated_at TEXT NOT NULL DEFAULT ({SQLITE_NOW}),
  finished_at TEXT,
  -- The intent of a status change, set in the same UPDATE as the status: the guard records it
  -- in job_history and clears it, so the next change must name its own actor.
  change_actor TEXT,
  change_person TEXT,
  change_reason TEXT,
  change_worker TEXT
);
CREATE TABLE IF NOT EXISTS job_history (
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES jobs (id),
  from_status TEXT NOT NULL,
  to_status TEXT NOT NULL,
  actor TEXT NOT NULL,
  person TEXT,
  reason TEXT,
  worker TEXT,
  at TEXT NOT NULL DEFAULT ({SQLITE_NOW})
);
CREATE TABLE IF NOT EXISTS job_side_effects (
  job_id INTEGER NOT NULL REFERENCES jobs (id),
  status TEXT NOT NULL,
  effect TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT ({SQLITE_NOW}),
  PRIMARY KEY (job_id, effect)
);
"""

_POSTGRES_TABLES = """\
-- The tables the guards of `frozen-lifecycle sql --dialect postgresql` expect, at their
-- smallest: add your own columns to jobs, job_history and job_side_effects as you need.
CREATE TABLE IF NOT EXISTS job_states (
    status      text PRIMARY KEY,
    is_initial  boolean NOT NULL,
    is_terminal boolean NOT NULL,
    position    integer NOT NULL
);
CREATE TABLE IF NOT EXISTS job_transitions (
    from_status text NOT NULL,
    to_status   text NOT NULL,
    actor       text NOT NULL,
    PRIMARY KEY (from_status, to_status)
);
CREATE TABLE IF NOT EXISTS job_state_effects (
    status   text NOT NULL,
    effect   text NOT NULL,
    position integer NOT NULL,
    PRIMARY KEY (status, effect)
);
CREATE TABLE IF NOT EXISTS jobs (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    status        text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at   timestamptz,
    -- The intent of a status change, set in the same UPDATE as the status: the guard records
    -- it in job_history and clears it, so the next change must name its own actor.
    change_actor  text,
    change_person text,
    change_reason text,
    change_worker text
);
CREATE TABLE IF NOT EXISTS job_history (
    job_id      bigint NOT NULL REFERENCES jobs (id),
    id          bigint GENERATED ALWAYS AS IDENTITY,
    from_status text NOT NULL,
    to_status   text NOT NULL,
    actor       text NOT NULL,
    person      text,
    reason      text,
    worker      text,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (job_id, id)
);
CREATE TABLE IF NOT EXISTS job_side_effects (
    job_id     bigint NOT NULL REFERENCES jobs (id),
    status     text NOT NULL,
    effect     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (job_id, effect)
);
"""


def tables_sql(dialect: str) -> str:
    """The smallest tables the guards of `dialect` work on: a start for a team's migration."""
    if dialect == "postgresql":
        return _POSTGRES_TABLES
    if dialect == "sqlite":
        return _SQLITE_TABLES
    raise ValueError(f"no tables for dialect {dialect!r}: choose one of {', '.join(DIALECTS)}")
