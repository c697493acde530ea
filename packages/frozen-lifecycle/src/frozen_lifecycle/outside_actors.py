"""Actor words beyond the fixture's, for a behaviour probe of a live database to try.

A guard that admits one actor more than the fixture (an `operator` who may reopen a finished
job, a `system` account) passes a probe that tries only the fixture's actors, none and one
invented word. So a probe also tries every actor word the installed guard compares an actor
with, every actor the history table has recorded, and the names such a guard most often
admits (`PLAUSIBLE`), on every state: any move one of them makes is a move the fixture does
not allow.

The queries below read what a probe needs, one per dialect: run each, and keep what the one
that answers returns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from frozen_lifecycle.graph import Graph

PLAUSIBLE = ("operator", "admin", "system")

# The definitions of the triggers on `jobs` (SQLite) and of the functions they run (PostgreSQL).
GUARD_DEFINITIONS = (
    "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'jobs'",
    "SELECT pg_get_functiondef(t.tgfoid) FROM pg_trigger t "
    "JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relname = 'jobs' AND NOT t.tgisinternal",
)
HISTORY_ACTORS = "SELECT DISTINCT actor FROM job_history WHERE actor IS NOT NULL"

_WORD = r"'([A-Za-z_][A-Za-z0-9_]*)'"
# An actor column compared with a word: `change_actor = 'x'`, `IS NOT 'x'`, `IS DISTINCT FROM`.
_COMPARED = re.compile(
    r"actor\w*\s*(?:=|<>|!=|\bIS\s+(?:NOT\s+)?(?:DISTINCT\s+FROM\s+)?)\s*" + _WORD, re.I
)
# ... or with a list of words, or by a CASE on it.
_LISTED = re.compile(r"actor\w*\s+(?:NOT\s+)?IN\s*\(([^)]*)\)", re.I)
_CASE_ON = re.compile(r"\bCASE\s+[\w.]*actor\w*\s+((?:WHEN\s+" + _WORD + r"[^;]*?)+)\bEND", re.I)
_QUOTED = re.compile(_WORD)


def guard_actor_words(definitions: Iterable[str]) -> list[str]:
    """The words an installed guard compares an actor with, in the order it names them."""
    words: list[str] = []
    for text in definitions:
        words += _COMPARED.findall(text)
        for listed in _LISTED.finditer(text):
            words += _QUOTED.findall(listed.group(1))
        for case in _CASE_ON.finditer(text):
            words += re.findall(r"\bWHEN\s+" + _WORD, case.group(1), re.I)
    return words


def outside_actors(
    graph: Graph, definitions: Iterable[str] = (), history: Iterable[object] = ()
) -> tuple[str, ...]:
    """The actor words to try beyond the fixture's: the guard's, the history's, then the
    plausible ones, each once, none of them a word of the fixture."""
    known = {*graph.actors, *graph.states, *graph.effect_names}
    found = [*guard_actor_words(definitions), *(str(a) for a in history if a), *PLAUSIBLE]
    return tuple(word for word in dict.fromkeys(found) if word and word not in known)
