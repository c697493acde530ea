"""Where the gate looks: `[tool.reportexport.gate]` in pyproject.toml, or a small gate.toml.

```toml
[tool.reportexport.gate]          # in gate.toml: the same keys at the top level
paths = ["."]                     # what to check (default: the whole repository)
exclude = ["db/migrations/0001_*.sql"]   # added to the default excludes
strict = ["src/**"]               # where a quoted forbidden alias cannot be waived
graph = "contracts/job-status-graph.json"
typed-names = "src/mypackage/lifecycle.py"   # kept equal to `reportexport generate --typed-names`
```

Patterns are paths relative to the root with `*` (within a name), `**` (any depth) and `?`;
a pattern also matches everything under a directory it matches.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The drift corpus and the contract tests' mutants hold drift on purpose, as data.
DEFAULT_EXCLUDES = ("tests/**/corpus/**", "tests/contract/mutants/**")
DEFAULT_STRICT = ("src/**",)
CONFIG_FILES = ("pyproject.toml", "gate.toml")
_KEYS = frozenset({"paths", "exclude", "strict", "graph", "typed-names"})


class ConfigError(ValueError):
    pass


@dataclass(frozen=True, kw_only=True)
class Config:
    paths: tuple[str, ...] = (".",)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    strict: tuple[str, ...] = DEFAULT_STRICT
    graph: str | None = None
    typed_names: str | None = None
    source: str | None = None


def load_config(root: Path) -> Config:
    """The first of pyproject.toml's `[tool.reportexport.gate]` and gate.toml found in root."""
    for name in CONFIG_FILES:
        path = root / name
        if not path.is_file():
            continue
        try:
            document = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{name}: {exc}") from None
        table = (
            document if name == "gate.toml" else _table(document, ("tool", "reportexport", "gate"))
        )
        if table is None:
            continue
        return _config(table, name)
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
    graph, typed_names = table.get("graph"), table.get("typed-names")
    for key, value in (("graph", graph), ("typed-names", typed_names)):
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{source}: {key} must be a path")
    return Config(
        paths=_strings(table, "paths", source) or (".",),
        exclude=DEFAULT_EXCLUDES + _strings(table, "exclude", source),
        strict=_strings(table, "strict", source) if "strict" in table else DEFAULT_STRICT,
        graph=graph,
        typed_names=typed_names,
        source=source,
    )


def _strings(table: dict[str, Any], key: str, source: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{source}: {key} must be a list of strings")
    return tuple(value)


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
