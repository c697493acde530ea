"""The vocabulary rules that read any text: quoted aliases, and status words in SQL and prose.

- `forbidden-alias`: a whole quoted token (in double, single or back quotes) equal to a
  forbidden alias; substrings (`"emit_done_webhook"`) and unquoted prose are fine;
- `unknown-status`: a quoted word compared with a status in SQL (`status = <literal>`,
  `status IN (<literals>)`), `status=<word>` in prose (a log line, a URL) and, outside
  Python, `status="<word>"` (a metric label, a TOML key, an HTML attribute), that is not a
  state;
- `wrong-actor`: a quoted word compared with an actor column (`change_actor = <literal>`)
  that is not an actor of the fixture.

Where the configuration names the job's status columns (`status-columns`), SQL compares
those (and their prefixed forms, `from_state`) instead of `status`; where it names the job's
tables (`job-tables`), a SQL statement that writes only other tables (`UPDATE schedules`,
`INSERT INTO schedules`) is theirs, and its words are not read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from frozen_lifecycle.gate.lexicon import (
    WRONG_ACTOR,
    Hit,
    Lexicon,
    LineOf,
    alias_hit,
    status_hit,
)
from frozen_lifecycle.gate.sql import writes_elsewhere

# `status = 'x'`, `new.status <> 'x'`, `to_status = 'x'` inside SQL (or the configured
# status columns).
_SQL_STATUS_EQ = r"(?<![\w.])(?:\w+\.)?(?:[a-z0-9]+_)*(?:{})\s*(?:=|<>|!=)\s*'([^'\n]*)'"
_SQL_STATUS_IN = r"(?<![\w.])(?:\w+\.)?(?:[a-z0-9]+_)*(?:{})\s+(?:not\s+)?in\s*\(([^)]*)\)"
_SQL_QUOTED = re.compile(r"'([^']*)'")
_SQL_ACTOR_EQ = re.compile(r"(?<![\w.])(?:\w+\.)?(?:change_)?actor\s*(?:=|<>|!=)\s*'([^'\n]*)'")
# `status="x"`: a metric label, a TOML key, a YAML value (not Python: `f(status="x")` is read
# through the AST).
_LABEL = re.compile(r"(?<![\w.\-])(?:[a-z0-9]+_)*status\s*(?:=~?|==|!=)\s*\\?\"([^\"\\\n]*)\\?\"")
# `status=retrying` in prose: a log line's key=value, a query string.
_PROSE = re.compile(r"(?<![\w.\-])(?:[a-z0-9]+_)*status=([a-z][a-z_]*)\b(?![.(\[\w])")

_HitOf = Callable[[re.Match[str]], Hit | None]


def _nowhere(offset: int) -> bool:
    return False


class Vocabulary:
    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        alternatives = "|".join(re.escape(a) for a in lexicon.aliases) or r"(?!)"
        self._quoted_alias = re.compile(rf"(?<![\w])([\"'`])({alternatives})\1(?![\w])")
        columns = "|".join(re.escape(column) for column in lexicon.columns)
        self._sql_status_eq = re.compile(_SQL_STATUS_EQ.format(columns), re.I)
        self._sql_status_in = re.compile(_SQL_STATUS_IN.format(columns), re.I)
        self._column_words = [(c.lower(), c.upper()) for c in lexicon.columns]

    def string_hits(self, value: str, line_of: LineOf, *, aliases: bool = True) -> Iterator[Hit]:
        """What a string holds: quoted aliases, SQL and prose status words. Where carriers are
        configured, prose (a log line's `status=<word>`) names any object's status, and is
        not read."""
        if aliases and ("'" in value or '"' in value or "`" in value):
            yield from self._scan(value, line_of, self._quoted_alias, self._alias)
        if "'" in value:
            yield from self._sql(value, line_of)
        if "status=" in value and not self.lexicon.by_carriers:
            yield from self._scan(value, line_of, _PROSE, self._prose)

    def text_hits(self, text: str, line_of: LineOf, *, aliases: bool = True) -> Iterator[Hit]:
        """What a file that is not Python holds: the above, and `status="<word>"`."""
        yield from self.string_hits(text, line_of, aliases=aliases)
        if "status" in text and '"' in text:
            yield from self._scan(text, line_of, _LABEL, self._label)

    def _sql(self, text: str, line_of: LineOf) -> Iterator[Hit]:
        compared = any(lower in text or upper in text for lower, upper in self._column_words)
        if not compared and "actor" not in text:
            return
        # A statement that writes another table (job tables configured): its words are its own.
        outside = writes_elsewhere(text, self.lexicon) or _nowhere
        if compared:
            yield from self._scan(text, line_of, self._sql_status_eq, self._sql_eq, outside)
            for match in self._sql_status_in.finditer(text):
                if outside(match.start()):
                    continue
                for word in _SQL_QUOTED.findall(match.group(1)):
                    if word not in self.lexicon.states:
                        yield status_hit(line_of(match.start()), word, "in SQL")
        if "actor" in text:
            yield from self._scan(text, line_of, _SQL_ACTOR_EQ, self._actor, outside)

    @staticmethod
    def _scan(
        text: str,
        line_of: LineOf,
        pattern: re.Pattern[str],
        hit: _HitOf,
        outside: Callable[[int], bool] | None = None,
    ) -> Iterator[Hit]:
        """The hits of `pattern`'s matches, but those at an offset `outside` leaves out."""
        for match in pattern.finditer(text):
            if outside is not None and outside(match.start()):
                continue
            result = hit(match)
            if result is not None:
                yield Hit(line_of(match.start()), result.code, result.message)

    def _alias(self, match: re.Match[str]) -> Hit:
        return alias_hit(0, match.group(2))

    def _sql_eq(self, match: re.Match[str]) -> Hit | None:
        word = match.group(1)
        return None if word in self.lexicon.states else status_hit(0, word, "in SQL")

    def _label(self, match: re.Match[str]) -> Hit | None:
        word = match.group(1)
        return None if word in self.lexicon.states else status_hit(0, word, "given to a status")

    def _prose(self, match: re.Match[str]) -> Hit | None:
        word = match.group(1)
        return None if word in self.lexicon.states else status_hit(0, word, "as status= in text")

    def _actor(self, match: re.Match[str]) -> Hit | None:
        word = match.group(1)
        if not word or word in self.lexicon.actors:
            return None
        return Hit(0, WRONG_ACTOR, f"{word!r} is not an actor of the fixture")
