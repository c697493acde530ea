"""Named parameters (`:name`) in operator-written SQL, found without touching the SQL's text.

The SQL is split into literal text and parameter names; each source then binds the values
natively (DuckDB `$name`, SQLite `:name`) or passes them through the driver's typed literal
adaptation where a bulk path takes no bind parameters (PostgreSQL's COPY). Values are never
formatted into the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Quoted strings, quoted identifiers, comments and `::` casts are skipped as a whole, so a
# colon inside them is never taken for a parameter.
_TOKENS = re.compile(
    r"""
      (?P<skip>'(?:[^']|'')*'        # 'string'
        | "(?:[^"]|"")*"             # "identifier"
        | --[^\n]*                   # -- comment
        | /\*.*?\*/                  # /* comment */
        | ::                         # cast
      )
    | (?<![:\w]):(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.X | re.S,
)


@dataclass(frozen=True)
class Param:
    name: str


Segment = str | Param


def split_sql(sql: str) -> list[Segment]:
    """Literal text and `Param`s, in order; joining the text around them gives the SQL back."""
    segments: list[Segment] = []
    position = 0
    for match in _TOKENS.finditer(sql):
        if match.group("name") is None:
            continue
        segments.append(sql[position : match.start()])
        segments.append(Param(match.group("name")))
        position = match.end()
    segments.append(sql[position:])
    return [s for s in segments if s != ""]


def parameter_names(sql: str) -> list[str]:
    """Each parameter the SQL names, once, in order of first use."""
    return list(dict.fromkeys(s.name for s in split_sql(sql) if isinstance(s, Param)))


def render(sql: str, placeholder: str) -> str:
    """The SQL with each `:name` replaced by `placeholder.format(name=...)` (e.g. '$' + name)."""
    return "".join(
        placeholder.format(name=s.name) if isinstance(s, Param) else s for s in split_sql(sql)
    )
