"""The saved-query catalog: a versioned TOML file that operators edit.

    version = 1

    [sources.demo]
    url = "duckdb:///demo.duckdb"      # relative to this file; also postgresql://, sqlite:///
    max_concurrent = 2                 # exports running against this source at once
    statement_timeout_seconds = 300

    [queries.orders_by_day]
    title = "Orders of one day"
    source = "demo"
    sql = "SELECT * FROM orders WHERE order_date = :day"
    parameters.day = { type = "date", min = "2020-01-01" }
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

from reportexport.csvformat import CsvOptionError, CsvOptions
from reportexport.parameters import TYPES, ParameterError, ParamSpec, check_rules, coerce
from reportexport.sqlparams import parameter_names

CATALOG_VERSION = 1
_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
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
    sources: dict[str, SourceConfig] = {}
    for name, body in _table(document, "sources", problems).items():
        source = _source(name, body, path.parent, problems)
        if source is not None:
            sources[name] = source
    queries: dict[str, SavedQuery] = {}
    for name, body in _table(document, "queries", problems).items():
        query = _query(name, body, sources, problems)
        if query is not None:
            queries[name] = query
    if problems:
        raise CatalogError(str(path), problems)
    return Catalog(path=path, sources=sources, queries=queries)


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
    unknown = set(body) - {"url", "max_concurrent", "statement_timeout_seconds", "memory_limit"}
    if unknown:
        problems.append(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    try:
        return SourceConfig(
            name=name,
            url=_resolve_file_url(url, base),
            max_concurrent=int(body.get("max_concurrent", 2)),
            statement_timeout_seconds=float(body.get("statement_timeout_seconds", 300)),
            memory_limit=str(body.get("memory_limit", "256MB")),
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
    name: str, body: Any, sources: Mapping[str, SourceConfig], problems: list[str]
) -> SavedQuery | None:
    where = f"queries.{name}"
    if not _NAME.fullmatch(name) or not isinstance(body, dict):
        problems.append(f"{where}: a saved query is a table with a lower-case name")
        return None
    allowed = {"title", "description", "source", "sql", "parameters", "csv", "limits"}
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
    return SavedQuery(
        name=name,
        title=str(body.get("title", name)),
        description=str(body.get("description", "")),
        source=str(source),
        sql=sql,
        parameters=specs,
        csv=csv,
        limits=limits,
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
            )
        except TypeError as exc:
            problems.append(f"{here}: {exc}")
            continue
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


def _as_text_if_date(value: Any) -> Any:
    # TOML has native dates; parameters take ISO text as a form would send it.
    return value.isoformat() if hasattr(value, "isoformat") else value
