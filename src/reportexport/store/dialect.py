"""Named queries written once and rendered for each database.

`sql/queries.sql` holds every query the store runs, each a block headed `-- name --` and a
one-line description; the role method that runs it names it, so grep leads from Python to SQL
and back. The text is portable SQL with `:name` parameters and a few macros for what the two
databases spell differently:

- `{now}`: SQLite `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`, PostgreSQL `clock_timestamp()`;
- `{now_plus(:p)}`: now plus `:p` seconds (SQLite: a '+N seconds' modifier);
- `{seconds_between(a, b)}`: `a - b` in seconds (julianday on SQLite, epoch on PostgreSQL);
- `{names(:p)}`: the names in `:p` as a subquery (a JSON array's values; a `text[]`'s);
- `{ids(:p)}`: the same of ids (`Codec.names` of their digits), compared as integers;
- `{skip_locked}`: PostgreSQL's `FOR UPDATE SKIP LOCKED`; nothing on SQLite (one writer);
- `{skip_locked_of(t)}`: the same, locking the rows of table alias `t` of a join only;
- `{indexed_by(name)}`: SQLite's `INDEXED BY name`, for a partial index its planner would pass
  over without statistics; nothing on PostgreSQL, whose planner has them.

Every query is portable so: one text, one place to change it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

_HEADER = re.compile(r"^-- ([a-z_]+) --$", re.M)
_QUOTED = re.compile(r"('(?:[^']|'')*')")
_MACRO = re.compile(r"\{([a-z_]+)(?:\(([^{}()]*(?:\([^{}()]*\)[^{}()]*)*)\))?\}")
_PARAMETER = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")
DIALECTS = ("sqlite", "postgres")

SQLITE_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"


@dataclass(frozen=True)
class Dialect:
    name: str
    macros: dict[str, Callable[[list[str]], str]]
    named_parameter: Callable[[str], str]

    def render(self, text: str) -> str:
        """Portable text to this database's SQL: macros expanded, parameters in its style."""
        previous = None
        while previous != text:  # macros may nest: {seconds_between({now}, seen_at)}
            previous, text = text, _MACRO.sub(self._expand, text)
        parts = _QUOTED.split(text)
        for index in range(0, len(parts), 2):  # outside quotes only
            parts[index] = _PARAMETER.sub(lambda m: self.named_parameter(m.group(1)), parts[index])
        return "".join(parts)

    def _expand(self, match: re.Match[str]) -> str:
        name, arguments = match.group(1), match.group(2)
        if name not in self.macros:
            raise ValueError(f"unknown SQL macro {{{name}}}")
        return self.macros[name](_split(arguments) if arguments else [])


def _split(arguments: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in arguments:
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current += char
    parts.append(current.strip())
    return parts


SQLITE = Dialect(
    name="sqlite",
    macros={
        "now": lambda _: SQLITE_NOW,
        "now_plus": lambda a: f"strftime('%Y-%m-%dT%H:%M:%fZ', 'now', {a[0]})",
        "seconds_between": lambda a: f"((julianday({a[0]}) - julianday({a[1]})) * 86400)",
        "names": lambda a: f"(SELECT value FROM json_each({a[0]}))",
        "ids": lambda a: f"(SELECT value FROM json_each({a[0]}))",
        "skip_locked": lambda _: "",
        "skip_locked_of": lambda _: "",
        "indexed_by": lambda a: f"INDEXED BY {a[0]}",
    },
    named_parameter=lambda name: f":{name}",
)

POSTGRES = Dialect(
    name="postgres",
    macros={
        "now": lambda _: "clock_timestamp()",
        "now_plus": lambda a: f"(clock_timestamp() + make_interval(secs => {a[0]}))",
        "seconds_between": lambda a: f"extract(epoch FROM ({a[0]}) - ({a[1]}))",
        "names": lambda a: f"(SELECT unnest(CAST({a[0]} AS text[])))",
        "ids": lambda a: f"(SELECT unnest(CAST({a[0]} AS bigint[])))",
        "skip_locked": lambda _: "FOR UPDATE SKIP LOCKED",
        "skip_locked_of": lambda a: f"FOR UPDATE OF {a[0]} SKIP LOCKED",
        "indexed_by": lambda _: "",
    },
    named_parameter=lambda name: f"%({name})s",
)


def dialect(name: str) -> Dialect:
    return {"sqlite": SQLITE, "postgres": POSTGRES}[name]


def parse_queries(text: str, *, origin: str) -> dict[str, str]:
    parts = _HEADER.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"{origin}: query {name!r} defined twice")
        # Comment lines are for people reading the file (and may hold an apostrophe).
        lines = [line for line in body.splitlines() if not line.lstrip().startswith("--")]
        queries[name] = "\n".join(lines).strip()
    return queries


@functools.cache
def load_queries(name: str) -> dict[str, str]:
    """Every named query, ready for the database `name`'s driver."""
    text = resources.files(__package__).joinpath("sql", "queries.sql").read_text("utf-8")
    target = dialect(name)
    rendered = {
        query: target.render(body)
        for query, body in parse_queries(text, origin="sql/queries.sql").items()
    }
    if name == "postgres":  # psycopg reads % as the start of a placeholder
        rendered = {query: _percent_escaped(body) for query, body in rendered.items()}
    return rendered


def _percent_escaped(text: str) -> str:
    """`%` doubled except in `%(name)s` placeholders."""
    return re.sub(r"%(?!\([a-z_][a-z0-9_]*\)s)", "%%", text)


def migration_files(name: str) -> list[tuple[int, str, str]]:
    """(version, name, sql) of every migration of the database `name`, in order."""
    folder = resources.files(__package__).joinpath("migrations", name)
    found = []
    for entry in folder.iterdir():
        match = re.fullmatch(r"(\d{4})_([a-z0-9_]+)\.sql", entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort()
    versions = [version for version, _, _ in found]
    if versions != list(range(1, len(found) + 1)):
        raise ValueError(f"{name} migrations are not numbered 1..n: {versions}")
    return found
