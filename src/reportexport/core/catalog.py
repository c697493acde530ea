"""The saved-query catalog: a versioned TOML file that operators edit.

    version = 1

    [access]
    default = ["everyone"]             # who may run a query whose source names no one

    [sources.demo]
    url = "duckdb:///demo.duckdb"      # relative to this file; also postgresql://, sqlite:///
    max_concurrent = 2                 # exports running against this source at once
    statement_timeout_seconds = 300
    access = ["everyone"]              # who may run its queries (see core.access)

    [queries.orders_by_day]
    title = "Orders of one day"
    source = "demo"
    sql = "SELECT * FROM orders WHERE order_date = :day"
    parameters.day = { type = "date", min = "2020-01-01" }
    access = ["sales"]                 # and who among those the source admits
    csv = { delimiter = ";", bom = true }
    limits = { max_rows = 1_000_000 }

A job snapshots what it needs (SQL, parameter types, CSV options, limits, content hash), so a
later edit of this file never changes what a queued job runs or what an old job means.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reportexport.core.access import EVERYONE, QueryAccess, query_access
from reportexport.core.csvformat import CsvOptionError, CsvOptions
from reportexport.core.parameters import TYPES, ParameterError, ParamSpec, check_rules, coerce
from reportexport.core.sqlparams import parameter_names

CATALOG_VERSION = 1
_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
# A group's name (also in the job store, and mapped from an identity provider's groups).
GROUP_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
# A person's attribute, which a parameter may be bound to (`bind = "country"`).
ATTRIBUTE_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
BINDABLE_TYPES = ("string", "enum")
SOURCE_SCHEMES = ("duckdb:", "postgresql:", "postgres:", "sqlite:")


class CatalogError(ValueError):
    def __init__(self, path: str, problems: list[str]) -> None:
        super().__init__(f"{path}: " + "; ".join(problems))
        self.path = path
        self.problems = problems


@dataclass(frozen=True, kw_only=True)
class SourceConfig:
    name: str
    url: str
    max_concurrent: int = 2
    statement_timeout_seconds: float = 300.0
    memory_limit: str = "256MB"
    access: tuple[str, ...] | None = None  # None: the catalog's default


@dataclass(frozen=True, kw_only=True)
class Limits:
    max_rows: int | None = None
    max_bytes: int | None = None
    max_seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass(frozen=True, kw_only=True)
class SavedQuery:
    name: str
    title: str
    description: str
    source: str
    sql: str
    parameters: Mapping[str, ParamSpec]
    csv: CsvOptions
    limits: Limits
    access: QueryAccess

    @property
    def content_hash(self) -> str:
        """SHA-256 of everything that decides what an export of this query contains."""
        body = {
            "sql": self.sql,
            "source": self.source,
            "parameters": [spec.describe() for spec in self.parameters.values()],
            "csv": self.csv.to_json(),
            "limits": self.limits.to_json(),
        }
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class Catalog:
    path: Path
    sources: Mapping[str, SourceConfig]
    queries: Mapping[str, SavedQuery] = field(default_factory=dict)
    default_access: tuple[str, ...] | None = None  # [access] default; None: everyone


def load_catalog(path: str | Path) -> Catalog:
    catalog_path = Path(path)
    try:
        document = tomllib.loads(catalog_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(str(catalog_path), [f"not valid TOML: {exc}"]) from None
    return parse_catalog(document, catalog_path)


def parse_catalog(document: Mapping[str, Any], path: Path) -> Catalog:
    problems: list[str] = []
    if document.get("version") != CATALOG_VERSION:
        problems.append(f"version must be {CATALOG_VERSION}, not {document.get('version')!r}")
    default_access = _catalog_access(_table(document, "access", problems), problems)
    sources: dict[str, SourceConfig] = {}
    for name, body in _table(document, "sources", problems).items():
        source = _source(name, body, path.parent, problems)
        if source is not None:
            sources[name] = source
    queries: dict[str, SavedQuery] = {}
    for name, body in _table(document, "queries", problems).items():
        query = _query(name, body, sources, default_access, problems)
        if query is not None:
            queries[name] = query
    if problems:
        raise CatalogError(str(path), problems)
    return Catalog(path=path, sources=sources, queries=queries, default_access=default_access)


def _catalog_access(body: dict[str, Any], problems: list[str]) -> tuple[str, ...] | None:
    unknown = set(body) - {"default"}
    if unknown:
        problems.append(f"access: unknown key(s) {', '.join(sorted(unknown))}")
    if "default" not in body:
        return None
    return _groups("access.default", body["default"], problems)


def _groups(where: str, value: Any, problems: list[str]) -> tuple[str, ...] | None:
    """An access rule: a list of group names, or the word everyone."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        problems.append(f'{where}: a list of group names, or ["{EVERYONE}"]')
        return None
    wrong = [item for item in value if not GROUP_NAME.fullmatch(item)]
    if wrong:
        problems.append(
            f"{where}: {', '.join(repr(w) for w in wrong)} is not a group name (lower-case "
            "letters, digits and . _ -)"
        )
        return None
    return tuple(dict.fromkeys(value))


def _table(document: Mapping[str, Any], key: str, problems: list[str]) -> dict[str, Any]:
    value = document.get(key, {})
    if not isinstance(value, dict):
        problems.append(f"[{key}] must be a table")
        return {}
    return value


def _source(name: str, body: Any, base: Path, problems: list[str]) -> SourceConfig | None:
    where = f"sources.{name}"
    if not _NAME.fullmatch(name) or not isinstance(body, dict):
        problems.append(f"{where}: a source is a table with a lower-case name")
        return None
    url = body.get("url")
    if not isinstance(url, str) or not url.startswith(SOURCE_SCHEMES):
        problems.append(f"{where}.url: expected duckdb:///, postgresql:// or sqlite:/// URL")
        return None
    unknown = set(body) - {
        "url", "max_concurrent", "statement_timeout_seconds", "memory_limit", "access"
    }  # fmt: skip
    if unknown:
        problems.append(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    access = _groups(f"{where}.access", body["access"], problems) if "access" in body else None
    try:
        return SourceConfig(
            name=name,
            url=_resolve_file_url(url, base),
            max_concurrent=int(body.get("max_concurrent", 2)),
            statement_timeout_seconds=float(body.get("statement_timeout_seconds", 300)),
            memory_limit=str(body.get("memory_limit", "256MB")),
            access=access,
        )
    except (TypeError, ValueError) as exc:
        problems.append(f"{where}: {exc}")
        return None


def _resolve_file_url(url: str, base: Path) -> str:
    """duckdb:///x.duckdb and sqlite:///x.db are relative to the catalog file."""
    for scheme in ("duckdb:///", "sqlite:///"):
        if url.startswith(scheme) and not url.startswith(scheme + "/"):
            return scheme + str((base / url[len(scheme) :]).resolve())
    return url


def _query(
    name: str,
    body: Any,
    sources: Mapping[str, SourceConfig],
    default_access: tuple[str, ...] | None,
    problems: list[str],
) -> SavedQuery | None:
    where = f"queries.{name}"
    if not _NAME.fullmatch(name) or not isinstance(body, dict):
        problems.append(f"{where}: a saved query is a table with a lower-case name")
        return None
    allowed = {"title", "description", "source", "sql", "parameters", "csv", "limits", "access"}
    unknown = set(body) - allowed
    if unknown:
        problems.append(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    sql = body.get("sql")
    if not isinstance(sql, str) or not sql.strip():
        problems.append(f"{where}.sql: required")
        return None
    source = body.get("source")
    if source not in sources:
        problems.append(f"{where}.source: {source!r} is not a source of this catalog")
    specs = _parameters(where, body.get("parameters", {}), problems)
    used = parameter_names(sql)
    for missing in sorted(set(used) - set(specs)):
        problems.append(f"{where}.sql: :{missing} is not declared under parameters")
    for unused in sorted(set(specs) - set(used)):
        problems.append(f"{where}.parameters.{unused}: not used in the SQL")
    try:
        csv = CsvOptions(**body.get("csv", {}))
    except (CsvOptionError, TypeError) as exc:
        problems.append(f"{where}.csv: {exc}")
        csv = CsvOptions()
    try:
        limits = Limits(**body.get("limits", {}))
    except TypeError as exc:
        problems.append(f"{where}.limits: {exc}")
        limits = Limits()
    rule = _groups(f"{where}.access", body["access"], problems) if "access" in body else None
    source_config = sources.get(source) if isinstance(source, str) else None
    access = query_access(
        query_name=name,
        query_rule=rule,
        source_name=str(source),
        source_rule=source_config.access if source_config is not None else None,
        default_rule=default_access,
        bound={spec.name: spec.bind for spec in specs.values() if spec.bind is not None},
    )
    return SavedQuery(
        name=name,
        title=str(body.get("title", name)),
        description=str(body.get("description", "")),
        source=str(source),
        sql=sql,
        parameters=specs,
        csv=csv,
        limits=limits,
        access=access,
    )


def _parameters(where: str, body: Any, problems: list[str]) -> dict[str, ParamSpec]:
    if not isinstance(body, dict):
        problems.append(f"{where}.parameters: must be a table")
        return {}
    specs: dict[str, ParamSpec] = {}
    for name, raw in body.items():
        here = f"{where}.parameters.{name}"
        if not _NAME.fullmatch(name) or not isinstance(raw, dict):
            problems.append(f"{here}: a parameter is a table with a lower-case name")
            continue
        kind = raw.get("type")
        if kind not in TYPES:
            problems.append(f"{here}.type: one of {', '.join(TYPES)}, not {kind!r}")
            continue
        try:
            spec = ParamSpec(
                name=name,
                type=kind,
                required=bool(raw.get("required", "default" not in raw)),
                default=_as_text_if_date(raw.get("default")),
                description=str(raw.get("description", "")),
                min=_as_text_if_date(raw.get("min")),
                max=_as_text_if_date(raw.get("max")),
                min_length=raw.get("min_length"),
                max_length=raw.get("max_length"),
                pattern=raw.get("pattern"),
                choices=tuple(raw.get("choices", ())),
                bind=raw.get("bind"),
            )
        except TypeError as exc:
            problems.append(f"{here}: {exc}")
            continue
        unknown = set(raw) - PARAMETER_KEYS
        if unknown:
            problems.append(f"{here}: unknown key(s) {', '.join(sorted(unknown))}")
        if spec.bind is not None:
            _check_bind(here, spec, raw, problems)
        if kind == "enum" and not spec.choices:
            problems.append(f"{here}.choices: an enum needs its choices")
        try:
            for bound in (spec.min, spec.max):
                if bound is not None:
                    coerce(spec, bound)
            if spec.default is not None:
                check_rules(spec, coerce(spec, spec.default))
        except ParameterError as exc:
            problems.append(f"{here}: {exc.message}")
        specs[name] = spec
    return specs


PARAMETER_KEYS = frozenset({
    "type", "required", "default", "description", "min", "max", "min_length", "max_length",
    "pattern", "choices", "bind",
})  # fmt: skip


def _check_bind(here: str, spec: ParamSpec, raw: Mapping[str, Any], problems: list[str]) -> None:
    """A bound parameter takes an attribute's text, and nothing from the request."""
    if not isinstance(spec.bind, str) or not ATTRIBUTE_NAME.fullmatch(spec.bind):
        problems.append(f"{here}.bind: the name of a person's attribute (lower-case, like country)")
    if spec.type not in BINDABLE_TYPES:
        problems.append(
            f"{here}.bind: only {' and '.join(BINDABLE_TYPES)} parameters take an attribute's "
            f"text, not {spec.type}"
        )
    if "default" in raw or "required" in raw:
        problems.append(f"{here}.bind: a bound parameter takes no default and is always given")


def _as_text_if_date(value: Any) -> Any:
    # TOML has native dates; parameters take ISO text as a form would send it.
    return value.isoformat() if hasattr(value, "isoformat") else value
