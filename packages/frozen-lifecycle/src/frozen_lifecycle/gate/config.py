"""Where the gate looks and what the repository generates: `[tool.frozen-lifecycle.gate]` in
pyproject.toml, or a small gate.toml.

```toml
[tool.frozen-lifecycle.gate]      # in gate.toml: the same keys at the top level
paths = ["."]                     # what to check (default: the whole repository)
exclude = ["db/migrations/0001_*.sql"]   # added to the default excludes
strict = ["src/**"]               # where a quoted forbidden alias cannot be waived
graph = "contracts/job-status-graph.json"
typed-names = "src/mypackage/lifecycle.py"   # kept equal to `frozen-lifecycle generate`
regions = ["README.md"]           # files whose GENERATED regions are kept (the default)
sqlite-guards = "db/graph.sqlite.sql"        # the SQL guards, kept generated
postgresql-guards = "db/graph.postgresql.sql"
notify-channel = "jobs"           # PostgreSQL guards: NOTIFY a change no worker made
generated-by = "make lifecycle"   # the command generated files name (default below)
status-types = ["JobStatus", "job_status"]  # what carries the states: other enums are not judged
holders = { FinishedRegistry = "finished" }  # classes whose methods act on jobs in one state
moves = { _enqueue_job = "queued" }           # calls that put a job in a state
check-transition = "shop.jobs:check_transition"  # what the contract tests call: (from, to, actor)
create-job = "shop.jobs:create_job"              # create_job(status=...) makes no job elsewhere
job-models = ["ExportJob"]        # the job's model classes (default: a class named *Job)
status-columns = ["status"]       # the job's status column (default: status)
job-tables = ["jobs"]             # the job's SQL tables (default: jobs, job, *_jobs; any UPDATE)
```

Patterns are paths relative to the root with `*` (within a name), `**` (any depth) and `?`;
a pattern also matches everything under a directory it matches. The table
`[tool.reportexport.gate]`, where the gate lived before it was a package of its own, is read
too when the new one is absent.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frozen_lifecycle.generated import Targets
from frozen_lifecycle.graph import DEFAULT_FIXTURE
from frozen_lifecycle.provenance import DEFAULT_COMMAND, Provenance

# The drift corpus and the contract tests' mutants hold drift on purpose, as data.
DEFAULT_EXCLUDES = ("tests/**/corpus/**", "tests/contract/mutants/**")
DEFAULT_STRICT = ("src/**",)
DEFAULT_REGIONS = ("README.md",)
CONFIG_FILES = ("pyproject.toml", "gate.toml")
TABLE = ("tool", "frozen-lifecycle", "gate")
FORMER_TABLE = ("tool", "reportexport", "gate")
_PATHS = ("graph", "typed-names", "sqlite-guards", "postgresql-guards")
_WORDS = ("notify-channel", "generated-by")
# The repository's own functions its contract tests call: `module:function` (or a name of the
# module under contract).
_FUNCTIONS = ("check-transition", "create-job")
_LISTS = ("paths", "exclude", "strict", "regions", "status-types")
# What the job is in the repository's code and SQL (see Carriers): lists of names.
_JOB_NAMES = ("job-models", "status-columns", "job-tables")
_NAME = re.compile(r"[A-Za-z_][\w$]*(?:\.[A-Za-z_][\w$]*)*")
# What carries the lifecycle in a repository (see Carriers), name -> state.
_TABLES = ("holders", "moves")
_KEYS = frozenset((*_PATHS, *_WORDS, *_FUNCTIONS, *_LISTS, *_JOB_NAMES, *_TABLES))


class ConfigError(ValueError):
    pass


@dataclass(frozen=True, kw_only=True)
class Carriers:
    """What carries the job's lifecycle in a repository, when its configuration says.

    `status_types` are the types whose values are the job's states: a Python enum, class or
    `Literal` alias, a SQL enum type. Named, they are the only constructs of states the gate
    judges (each must hold exactly the fixture's states, and counts as the STATES definition);
    other enums, mappings and lists that share words with the states are not findings.
    `holders` are classes whose methods act on jobs in one state (a registry of finished
    jobs); `moves` are calls that put a job in a state (`_enqueue_job` -> the queued state), so
    a holder's method that makes one is a move from the holder's state to the call's.

    `job_models`, `status_columns` and `job_tables` say what the job is: its model classes
    (whose constructors, managers' `create` and status field default make a job in the initial
    state), the column that holds its status, and the SQL tables it lives in (a statement
    that writes only other tables, an `UPDATE` or `INSERT` of a schedule, is not a job's).
    Unset, they are guessed by name: a class named `*Job`, `status`, `jobs` (and any table for
    an `UPDATE`). They do not make the gate read by carriers: that is `configured`.
    """

    status_types: tuple[str, ...] = ()
    holders: tuple[tuple[str, str], ...] = ()
    moves: tuple[tuple[str, str], ...] = ()
    job_models: tuple[str, ...] = ()
    status_columns: tuple[str, ...] = ()
    job_tables: tuple[str, ...] = ()

    @property
    def configured(self) -> bool:
        return bool(self.status_types or self.holders or self.moves)


@dataclass(frozen=True, kw_only=True)
class Config:
    paths: tuple[str, ...] = (".",)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    strict: tuple[str, ...] = DEFAULT_STRICT
    graph: str | None = None
    typed_names: str | None = None
    regions: tuple[str, ...] = DEFAULT_REGIONS
    sqlite_guards: str | None = None
    postgresql_guards: str | None = None
    notify_channel: str | None = None
    generated_by: str = DEFAULT_COMMAND
    check_transition: str | None = None
    create_job: str | None = None
    carriers: Carriers = Carriers()
    source: str | None = None

    def targets(self) -> Targets:
        """What this repository keeps generated from its fixture."""
        return Targets(
            regions=self.regions,
            typed_names=self.typed_names,
            sqlite_guards=self.sqlite_guards,
            postgresql_guards=self.postgresql_guards,
            notify_channel=self.notify_channel,
            provenance=Provenance(fixture=self.graph or DEFAULT_FIXTURE, command=self.generated_by),
        )


def load_config(root: Path) -> Config:
    """The first of pyproject.toml's `[tool.frozen-lifecycle.gate]` (or its former name) and
    gate.toml found in root."""
    for name in CONFIG_FILES:
        path = root / name
        if not path.is_file():
            continue
        try:
            document = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{name}: {exc}") from None
        if name == "gate.toml":
            return _config(document, name)
        table = _table(document, TABLE)
        former = _table(document, FORMER_TABLE)
        if table is not None and former is not None:
            raise ConfigError(
                f"{name}: both [tool.frozen-lifecycle.gate] and [tool.reportexport.gate]; "
                "keep the first"
            )
        if table is None and former is None:
            continue
        return _config(table if table is not None else former or {}, name)
    return Config()


def _table(document: dict[str, Any], keys: Iterable[str]) -> dict[str, Any] | None:
    current: Any = document
    for key in keys:
        if not isinstance(current, dict) or key not in current:
            return None
        current = current[key]
    return current if isinstance(current, dict) else None


def _config(table: dict[str, Any], source: str) -> Config:
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown gate setting(s) {', '.join(unknown)}")
    for key in (*_PATHS, *_WORDS, *_FUNCTIONS):
        value = table.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            what = "a word"
            if key in _PATHS or key in _FUNCTIONS:
                what = "a path" if key in _PATHS else "module:function"
            raise ConfigError(f"{source}: {key} must be {what}")
    return Config(
        paths=_strings(table, "paths", source) or (".",),
        exclude=DEFAULT_EXCLUDES + _strings(table, "exclude", source),
        strict=_strings(table, "strict", source) if "strict" in table else DEFAULT_STRICT,
        graph=table.get("graph"),
        typed_names=table.get("typed-names"),
        regions=_strings(table, "regions", source) if "regions" in table else DEFAULT_REGIONS,
        sqlite_guards=table.get("sqlite-guards"),
        postgresql_guards=table.get("postgresql-guards"),
        notify_channel=table.get("notify-channel"),
        generated_by=table.get("generated-by") or DEFAULT_COMMAND,
        check_transition=table.get("check-transition"),
        create_job=table.get("create-job"),
        carriers=Carriers(
            status_types=_strings(table, "status-types", source),
            holders=_names(table, "holders", source),
            moves=_names(table, "moves", source),
            job_models=_job_names(table, "job-models", source),
            status_columns=_job_names(table, "status-columns", source),
            job_tables=_job_names(table, "job-tables", source),
        ),
        source=source,
    )


def _strings(table: dict[str, Any], key: str, source: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{source}: {key} must be a list of strings")
    return tuple(value)


def _job_names(table: dict[str, Any], key: str, source: str) -> tuple[str, ...]:
    names = _strings(table, key, source)
    if (key in table and not names) or not all(_NAME.fullmatch(name) for name in names):
        raise ConfigError(f"{source}: {key} must be a list of names")
    return names


def _names(table: dict[str, Any], key: str, source: str) -> tuple[tuple[str, str], ...]:
    value = table.get(key, {})
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in value.items()
    ):
        raise ConfigError(f"{source}: {key} must be a table of names and states")
    return tuple(value.items())


def compile_patterns(patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One regular expression matching a relative POSIX path that any pattern matches, or that
    lies under a directory one matches."""
    parts = [_translate(p.strip().strip("/")) for p in patterns if p.strip().strip("/")]
    if not parts:
        return None
    return re.compile("(?:" + "|".join(parts) + ")(?:/.*)?")


def _translate(pattern: str) -> str:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            out.append("[" + pattern[i + 1 : end].replace("!", "^", 1) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)
