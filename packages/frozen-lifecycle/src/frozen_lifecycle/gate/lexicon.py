"""The fixture's words as the rules use them, and what one file's rules found.

Every rule reports a `Hit` (line, code, message); a file's hits and the facts the whole-tree
checks need (a STATES definition, side-effect handlers registered) make its `Facts`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace

from frozen_lifecycle.graph import Graph

FORBIDDEN_ALIAS = "forbidden-alias"
UNKNOWN_STATUS = "unknown-status"
STATES_INVENTED = "states-invented"
UNDECLARED_EDGE = "undeclared-edge"
WRONG_ACTOR = "wrong-actor"
NOT_INITIAL = "not-initial"
NO_SOURCE_STATE = "no-source-state"

# Words that name a status in most systems; with words ending -ed or -ing, what makes a
# collection that also holds a fixture state a collection of states.
# One string, not a collection of words: a fixture may well have any of these as a state.
_STATUS_WORDS = """new active inactive open closed waiting ready idle ok complete completed finished
started stopped paused blocked expired archived aborted cancelled scheduled in_progress
processing stalled stuck success failure unknown timeout timed_out retry initial created deleted
rejected accepted submitted draft hold on_hold skipped killed dead lost"""
STATUS_WORDS = frozenset(_STATUS_WORDS.split())
_PARTICIPLE = re.compile(r"[a-z]+(?:ed|ing)")  # one word: "lease_expired" is a reason
# A name that holds a job status: status, to_status, job_state ... (compared by last name).
STATUS_NAME = re.compile(r"(?:[a-z0-9]+_)*(?:status|state)")
# Names a value is assigned or passed under: the status family only (`state` is too common).
STATUS_KEY = re.compile(r"(?:[a-z0-9]+_)*status")
# A collection or class named for states: STATES, ACTIVE_STATES, job_statuses, JobStates (a
# class name is matched lower-cased too: jobstates) ...
STATES_NAME = re.compile(
    r"(?:[A-Za-z0-9]+_)*[A-Za-z0-9]*(?:states|statuses|States|Statuses|STATES|STATUSES)"
)


# The typed names `frozen-lifecycle generate --typed-names` writes, and the usual enum names.
STATUS_TYPES = frozenset({"Status", "TerminalStatus", "JobStatus", "JobState"})
ACTOR_TYPES = frozenset({"Actor"})
_TARGETS_TYPE = re.compile(r"From[A-Z]\w*By[A-Z]\w*")
# Where no job model, status column or job table is configured, they are guessed by name: a
# class whose name ends in Job (ExportJob, job_models.Job), the `status` column, a table named
# jobs, job or *_jobs.
JOB_MODEL = re.compile(r"(?:[\w.]*\.)?[A-Z]\w*Job\b")
STATUS_COLUMN = "status"
JOBS_TABLE = re.compile(r"(?:\w+\.)?\"?(?:jobs?|\w+_jobs)\"?", re.I)

# The line an offset of a text is on.
LineOf = Callable[[int], int]
_NEWLINE = re.compile("\n")


def lines_of(text: str, first_line: int = 1) -> LineOf:
    """Line numbers of offsets in `text`, whose first line is `first_line` (computed once)."""
    newlines: list[int] = []

    def line_of(offset: int) -> int:
        if not newlines and "\n" in text:
            newlines.extend(match.start() for match in _NEWLINE.finditer(text))
        return first_line + bisect.bisect_left(newlines, offset)

    return line_of


@dataclass(frozen=True)
class Hit:
    line: int
    code: str
    message: str


@dataclass
class Facts:
    """What the rules found in one file."""

    hits: list[Hit] = field(default_factory=list)
    states_defined: bool = False
    # Side-effect handlers registered: (name, line) in any form the rules understand.
    handlers: list[tuple[str, int]] = field(default_factory=list)


@dataclass(frozen=True)
class Lexicon:
    states: frozenset[str]
    ordered_states: tuple[str, ...]
    initial: str
    terminal: frozenset[str]
    aliases: tuple[str, ...]
    actors: frozenset[str]
    effects: frozenset[str]
    ordered_effects: tuple[str, ...]
    edges: Mapping[tuple[str, str], str]
    # The actor of a move that names none (`apply_transition(job, to)`); None: unknown.
    default_actor: str | None = None
    # The names of the types whose values are the states, and the actors (the typed names a
    # repository generates, its status enum): a type built from them adds no other word.
    status_types: frozenset[str] = STATUS_TYPES
    actor_types: frozenset[str] = ACTOR_TYPES
    # The configured carriers of the lifecycle (Carriers.status_types); None: none configured,
    # and every construct that holds a state beside other words is judged.
    carriers: frozenset[str] | None = None
    holders: Mapping[str, str] = field(default_factory=dict)
    moves: Mapping[str, str] = field(default_factory=dict)
    # What the job is in the repository's code and SQL (Carriers.job_models, status_columns,
    # job_tables); empty: guessed by name (JOB_MODEL, STATUS_COLUMN, JOBS_TABLE).
    job_models: frozenset[str] = frozenset()
    status_columns: tuple[str, ...] = ()
    job_tables: frozenset[str] = frozenset()

    @property
    def columns(self) -> tuple[str, ...]:
        """The job's status columns: the configured ones, else `status`."""
        return self.status_columns or (STATUS_COLUMN,)

    def is_job_model(self, name: str) -> bool:
        """Whether a class of that name (`ExportJob`, `models.ExportJob`) is the job's model."""
        if self.job_models:
            return name.rpartition(".")[2] in self.job_models
        return JOB_MODEL.fullmatch(name) is not None

    def is_job_table(self, name: str) -> bool:
        """Whether a SQL table of that name (`jobs`, `public."jobs"`) holds the jobs."""
        if self.job_tables:
            return _bare_table(name) in self.job_tables
        return JOBS_TABLE.fullmatch(name) is not None

    def is_status_type(self, name: str) -> bool:
        return name in self.status_types or _TARGETS_TYPE.fullmatch(name) is not None

    @property
    def by_carriers(self) -> bool:
        """Whether the repository named what carries its lifecycle: then only that is judged
        as a construct of states."""
        return self.carriers is not None

    def carries(self, name: str) -> bool:
        """Whether a construct of that name (an enum, a SQL type) holds the job's states."""
        bare = name.rpartition(".")[2].strip('"')
        return self.carriers is None or bare in self.carriers

    def with_carriers(
        self, status_types: Iterable[str], holders: Mapping[str, str], moves: Mapping[str, str]
    ) -> Lexicon:
        types = frozenset(status_types)
        return replace(
            self,
            status_types=self.status_types | types,
            carriers=types if (types or holders or moves) else None,
            holders=dict(holders),
            moves=dict(moves),
        )

    def with_jobs(
        self, job_models: Iterable[str], status_columns: Iterable[str], job_tables: Iterable[str]
    ) -> Lexicon:
        return replace(
            self,
            job_models=frozenset(job_models),
            status_columns=tuple(status_columns),
            job_tables=frozenset(_bare_table(table) for table in job_tables),
        )

    @classmethod
    def of(cls, graph: Graph) -> Lexicon:
        return cls(
            states=frozenset(graph.states),
            ordered_states=graph.states,
            initial=graph.initial,
            terminal=frozenset(graph.terminal),
            aliases=graph.forbidden_aliases,
            actors=frozenset(graph.actors),
            effects=frozenset(graph.effect_names),
            ordered_effects=graph.effect_names,
            edges={(e.from_status, e.to_status): e.actor for e in graph.transitions},
            default_actor=graph.default_actor,
        )

    def status_like(self, word: str) -> bool:
        """A word that reads as a status, and is neither an actor nor a side effect."""
        if word in self.actors or word in self.effects:
            return False
        return word in self.aliases or word in STATUS_WORDS or bool(_PARTICIPLE.fullmatch(word))

    def invented(self, words: Iterable[str], *, strict: bool) -> list[str]:
        """The words of a collection that holds states but are not states.

        A collection holds states when one of its words is a state; `strict` (a Literal, an
        enum, something named for states) then refuses every other word. Otherwise only words
        that read as statuses are refused (a tuple may pair a state with something else); and
        beside a single state, only a forbidden alias or a common status word: one word shared
        with another vocabulary (a schedule's `paused` beside its `firing` and `ended`) makes
        no collection of states.
        """
        listed = list(words)
        held = {word for word in listed if word in self.states}
        if not held:
            return []
        lone = not strict and len(held) < 2
        return [
            word
            for word in dict.fromkeys(listed)
            if word not in self.states
            and (strict or (self.status_word(word) if lone else self.status_like(word)))
        ]

    def status_word(self, word: str) -> bool:
        """A forbidden alias or a common status word (not any participle)."""
        if word in self.actors or word in self.effects:
            return False
        return word in self.aliases or word in STATUS_WORDS

    def missing(self, words: Collection[str]) -> list[str]:
        return [state for state in self.ordered_states if state not in words]

    def move_problems(
        self,
        froms: Collection[str] | None,
        tos: Collection[str] | None,
        actor: str | None,
    ) -> Iterator[tuple[str, str]]:
        """(code, message) for a status change that is no declared edge, or not its actor's.

        `froms`/`tos` are the literal statuses on each side (None where the code holds a
        parameter); words that are not states are left to the vocabulary rules.
        """
        if actor == "":
            actor = None  # no actor named: the database refuses it, the vocabulary is silent
        if actor is not None and actor not in self.actors:
            yield WRONG_ACTOR, f"{actor!r} is not an actor of the fixture"
            actor = None
        known_from = [s for s in froms if s in self.states] if froms is not None else None
        known_to = [s for s in tos if s in self.states] if tos is not None else None
        if known_from and known_to:
            for source in known_from:
                for target in known_to:
                    if source == target:
                        continue
                    declared = self.edges.get((source, target))
                    if declared is None:
                        yield UNDECLARED_EDGE, f"{source} -> {target} is not an edge of the fixture"
                    elif actor is not None and actor != declared:
                        yield (
                            WRONG_ACTOR,
                            f"{source} -> {target} belongs to actor {declared}, not {actor}",
                        )
        elif known_to and froms is None:
            for target in known_to:
                actors = {a for (_, t), a in self.edges.items() if t == target}
                if not actors:
                    yield UNDECLARED_EDGE, f"no edge of the fixture leads to {target}"
                elif actor is not None and actor not in actors:
                    yield (
                        WRONG_ACTOR,
                        f"every edge into {target} belongs to {', '.join(sorted(actors))}, "
                        f"not {actor}",
                    )
        elif known_from and tos is None:
            for source in known_from:
                actors = {a for (f, _), a in self.edges.items() if f == source}
                if not actors:
                    yield UNDECLARED_EDGE, f"{source} is terminal: no edge of the fixture leaves it"
                elif actor is not None and actor not in actors:
                    yield (
                        WRONG_ACTOR,
                        f"every edge from {source} belongs to {', '.join(sorted(actors))}, "
                        f"not {actor}",
                    )


def _bare_table(name: str) -> str:
    """A table's name without its schema and quotes: `public."Tasks"` -> `tasks`."""
    return name.rpartition(".")[2].strip('"').lower()


def status_hit(line: int, value: str, how: str) -> Hit:
    return Hit(line, UNKNOWN_STATUS, f"{value!r} {how} is not a state in the fixture")


def alias_hit(line: int, alias: str) -> Hit:
    return Hit(line, FORBIDDEN_ALIAS, f'"{alias}" is a forbidden status alias')


def invented_hits(line: int, words: Iterable[str], what: str) -> Iterator[Hit]:
    for word in words:
        yield Hit(line, STATES_INVENTED, f"{what} names {word!r}, not a state in the fixture")
