"""SQL read statement by statement: status changes, inserted jobs, CASE, enums and IN lists.

Runs over .sql files, SQL held in Python strings and SQL quoted in other text (Markdown,
shell scripts). A regular-expression reading, not a parser: it understands the forms a
status takes in SQL, and a statement it cannot read yields nothing.

- `UPDATE <table> SET status = <to>[, change_actor = <actor>] ... WHERE ... status = <from>`
  (or `status IN (<froms>)`): every (from, to) a declared edge, the actor its own
  (`undeclared-edge`, `wrong-actor`); a side held in a parameter is left out. Such an `UPDATE`
  that takes a parameter or an interpolated value (the program's write, not a statement a
  person types with literal ids) and never compares the current status (`status = ...`,
  `status IN (...)`, in its WHERE or a CTE that picks the rows) is a blind write
  (`no-source-state`);
- `INSERT INTO jobs (..., status) VALUES (..., <literal>)` or `SELECT ..., <literal>` (each
  select list a UNION joins, whatever follows it: FROM, WHERE, RETURNING, ON CONFLICT...; past
  a WITH, the SELECT after the common table expressions): only the initial state
  (`not-initial`); the literal may be cast or named (`'queued'::job_status AS status`);
- `CASE ... END` whose results are given to a status (`SET status = CASE`, `status := CASE`,
  `CASE ... END AS status`) or whose `WHEN`s compare one (`CASE status WHEN`): states only;
  results given to an actor: actors only;
- `CREATE TYPE ... AS ENUM (...)`, `ALTER TYPE ... ADD VALUE`, and an `IN (...)` list that
  mixes states with other status words (`states-invented`).

Statements end at a `;` outside strings; a dollar-quoted body (`$$ ... $$`, `$fn$ ... $fn$`:
a PL/pgSQL function, a DO block) holds statements of its own, each read on its own, as the
function's SQL (its parameters are plain names, so a status write there that names no source
state is a blind write). A move's source is what its own `WHERE` (or the common table
expressions before it) says the row is in, else unknown: never the statements around it nor
a function's control flow. A `CASE` given to the status is one move per branch with a literal
result, from the states its `WHEN` names (`CASE status WHEN ...`, `WHEN status = ...`), else
the `WHERE`'s; a branch that keeps the status (`ELSE status`) moves nothing.

A clause is read item by item: string literals (`''` escapes a quote) and double-quoted
identifiers are skipped whole when brackets are matched and lists split on commas, so a
bracket, a comma or a `status = ` inside one moves nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from frozen_lifecycle.gate.lexicon import (
    NO_SOURCE_STATE,
    NOT_INITIAL,
    STATES_INVENTED,
    STATUS_COLUMN,
    WRONG_ACTOR,
    Hit,
    Lexicon,
    LineOf,
    invented_hits,
    lines_of,
    status_hit,
)

_FLAGS = re.I | re.S
_COMMENT_OR_QUOTE = re.compile(r"'(?:[^']|'')*'|--[^\n]*|/\*.*?\*/", re.S)
# A statement ends at a `;` outside strings; a dollar-quoted body (`$$ ... $$`, `$fn$ ... $fn$`:
# a PL/pgSQL function, a DO block) holds statements of its own, read one by one.
_SPLIT = re.compile(r"'(?:[^']|'')*'|(\$(?:[A-Za-z_]\w*)?\$)(.*?)\1|;", re.S)
# What a statement in a body may start with before its SQL: control flow, not a CTE.
_BODY_PREFIX = re.compile(r"\s*WITH\b", re.I)
_QUOTED = re.compile(r"'((?:[^']|'')*)'")
_UPDATE = re.compile(
    r"\bUPDATE\s+(?:ONLY\s+)?([\w.\"]+)(?:\s+(?:AS\s+)?(?!SET\b)\w+)?\s+SET\b", _FLAGS
)
# A string literal ('' escapes a quote) or a double-quoted identifier ("" escapes one; on one
# line and without a single quote, so that the closing quote of a shell's `psql -c "..."` never
# pairs with a later one): skipped whole when brackets are matched and commas split on.
_LITERAL = r"'(?:[^']|'')*'|\"(?:[^\"\n']|\"\")*\""
_CLAUSE_END = re.compile(_LITERAL + r"|\b(?:WHERE|RETURNING|FROM)\b|[()]", re.I)
# Where the select list of an INSERT ... SELECT ends.
_SELECT_END = re.compile(
    _LITERAL + r"|\b(?:FROM|WHERE|RETURNING|UNION|INTERSECT|EXCEPT|GROUP|HAVING|WINDOW|ORDER"
    r"|LIMIT|OFFSET|FETCH|ON\s+CONFLICT)\b|[()]",
    re.I,
)
# Past a select list: the next set operation (or the statement's end at depth 0).
_SET_OPERATION = re.compile(
    _LITERAL + r"|\b(?:UNION|INTERSECT|EXCEPT|RETURNING|ON\s+CONFLICT)\b|[()]", re.I
)
_UNION_SELECT = re.compile(r"UNION(?:\s+(?:ALL|DISTINCT))?\s+SELECT\b", re.I)
_TOP_SELECT = re.compile(_LITERAL + r"|\bSELECT\b|[()]", re.I)
_QUANTIFIER = re.compile(r"\s*\b(?:ALL|DISTINCT)\b", re.I)
_ITEM_TOKEN = re.compile(_LITERAL + r"|[(),]")
_ROW_OPEN = re.compile(r"\s*\(")
_ROW_COMMA = re.compile(r"\s*,")
_SET_ACTOR = re.compile(r"(?:\w+\.)?\"?(?:change_)?actor\"?\s*=\s*'([^']*)'", re.I)
# Any comparison that names the state a row is in: with a literal, a list or a parameter.
# A bind parameter, or a value interpolated into a Python string (NUL), marks the program's SQL.
_PARAMETER = re.compile(r"(?<![:\w]):[A-Za-z_]\w*|%\(\w+\)s|%s|\$\d+|\?|\x00")
# The table, its column list (a quoted name may hold a comma or a bracket) and what follows.
_INSERT = re.compile(
    r"\bINSERT\s+INTO\s+([\w.\"]+)\s*\(((?:\"[^\"\n]*\"|[^)\"])*)\)\s*"
    r"(?:(VALUES)|(WITH)|(SELECT))\b",
    _FLAGS,
)
# A literal item: a string, perhaps cast (`'queued'::job_status`) or named (`'queued' AS status`).
_LITERAL_ITEM = re.compile(
    r"'((?:[^']|'')*)'(?:\s*::\s*[\w.\"]+)?(?:\s+(?:AS\s+)?(?:\w+|\"[^\"]*\"))?", re.I
)
_CASE_OR_END = re.compile(r"\b(CASE|END)\b", re.I)
_CASE_TOKEN = re.compile(_LITERAL + r"|\b(?:CASE|WHEN|THEN|ELSE|END)\b|[()]", re.I)
_WITH = re.compile(r"\bWITH\b", re.I)
_OPEN_BRACKETS = re.compile(r"[(\s]*")
_WHEN_LITERAL = re.compile(r"\bWHEN\s+'([^']*)'", re.I)
_RESULT_LITERAL = re.compile(r"\b(?:THEN|ELSE)\s+'([^']*)'", re.I)
_TARGET_BEFORE = re.compile(
    r"(?<![\w.])(?:\w+\.)?\"?((?:\w+_)?(?:status|actor))\"?\s*(?::=|=)\s*\(?\s*$", re.I
)
_TARGET_AFTER = re.compile(r"\s*\)?\s*(?:AS\s+)?\"?((?:\w+_)?(?:status|actor))\b", re.I)
_ENUM = re.compile(r"\bCREATE\s+TYPE\s+([\w.\"]+)\s+AS\s+ENUM\s*\(([^)]*)\)", _FLAGS)
_ADD_VALUE = re.compile(
    r"\bALTER\s+TYPE\s+([\w.\"]+)\s+ADD\s+VALUE\s+(?:IF\s+NOT\s+EXISTS\s+)?'([^']*)'", _FLAGS
)
_IN_LIST = re.compile(
    r"(?<![\w.])((?:\w+\.)?\w+)\s+(?:NOT\s+)?IN\s*\(\s*('(?:[^']|'')*'(?:\s*,\s*'(?:[^']|'')*')*)\s*\)",
    re.I,
)
_STATUS_OPERAND = re.compile(r"(?:\w+\.)?(?:\w+_)?status", re.I)
# The tables a statement writes (not a trigger's `UPDATE OF`, an upsert's `DO UPDATE SET`).
_WRITTEN = re.compile(
    r"\b(?:UPDATE\s+(?:ONLY\s+)?|INSERT\s+INTO\s+)(?!(?:SET|OF|ON)\b)([\w.\"]+)", re.I
)
_SQLISH = re.compile(r"\b(?:UPDATE|INSERT|CASE|ENUM|ALTER\s+TYPE|IN\s*\()", re.I)


def looks_like_sql(text: str) -> bool:
    return _SQLISH.search(text) is not None


@dataclass(frozen=True)
class _Column:
    """How SQL names the job's status column: `status` unless the configuration names others
    (`status-columns`); a CASE's subject may be prefixed (`CASE job_status WHEN`)."""

    set: re.Pattern[str]  # what the SET list gives it
    where_eq: re.Pattern[str]  # the state a WHERE names, `= '<literal>'`
    where_in: re.Pattern[str]  # or `IN ('<literal>', ...)`
    guard: re.Pattern[str]  # any comparison of it: with a literal, a list or a parameter
    subject: re.Pattern[str]  # `CASE status WHEN`

    @classmethod
    def of(cls, columns: tuple[str, ...]) -> _Column:
        name = "|".join(re.escape(column) for column in columns)
        return cls(
            set=re.compile(rf"(?:\w+\.)?\"?(?:{name})\"?\s*=\s*", re.I),
            where_eq=re.compile(rf"(?<![\w.])(?:\w+\.)?(?:{name})\s*=\s*'([^']*)'", re.I),
            where_in=re.compile(
                rf"(?<![\w.])(?:\w+\.)?(?:{name})\s+(NOT\s+)?IN\s*\(([^)]*)\)", re.I
            ),
            guard=re.compile(rf"(?<![\w.])(?:\w+\.)?\"?(?:{name})\"?\s*(?:=|IN\b|=\s*ANY\b)", re.I),
            subject=re.compile(rf"\s*(?:\w+\.)?(?:\w+_)?(?:{name})\s+WHEN\b", re.I),
        )


_STATUS = _Column.of((STATUS_COLUMN,))


def writes_elsewhere(text: str, lexicon: Lexicon) -> Callable[[int], bool] | None:
    """With job tables configured, whether an offset of `text` lies in a statement that writes
    only other tables (an `UPDATE` or `INSERT` of a schedule's row, whose status is not a
    job's); None without them."""
    if not lexicon.job_tables:
        return None
    statements = [
        (statement.start, statement.start + len(statement.text), _elsewhere(statement, lexicon))
        for statement in _statements(_blank_comments(text))
    ]

    def elsewhere(offset: int) -> bool:
        # The innermost statement that holds the offset decides: a body's statement lies in
        # the one that holds the body, and starts after it.
        held = [(start, other) for start, end, other in statements if start <= offset < end]
        return bool(held) and max(held)[1]

    return elsewhere


def _elsewhere(statement: _Statement, lexicon: Lexicon) -> bool:
    """Whether the statement writes tables, none of them a job table (job tables configured)."""
    if not lexicon.job_tables:
        return False
    written = _WRITTEN.findall(_blank_strings(statement.text))
    return bool(written) and not any(lexicon.is_job_table(table) for table in written)


@dataclass(frozen=True)
class _Statement:
    start: int
    text: str
    # Inside a dollar-quoted body: a function's SQL, whose parameters are plain names.
    in_body: bool = False


class SqlRules:
    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self.column = _STATUS if not lexicon.status_columns else _Column.of(lexicon.columns)

    def check(self, text: str, line_of: LineOf | None = None) -> list[Hit]:
        """The hits of every statement in `text` (offsets to lines by `line_of`)."""
        if not looks_like_sql(text):
            return []
        blanked = _blank_comments(text)
        line_of = line_of or lines_of(text)
        hits: list[Hit] = []
        for statement in _statements(blanked):
            for offset, hit in self._statement(statement):
                hits.append(Hit(line_of(statement.start + offset), hit.code, hit.message))
        return hits

    def _statement(self, statement: _Statement) -> Iterator[tuple[int, Hit]]:
        text = statement.text
        # With job tables configured, a statement that writes only other tables is theirs; a
        # type is the job's by its name (status-types), wherever it is declared.
        ours = not _elsewhere(statement, self.lexicon)
        if ours:
            yield from self._update(text, program=statement.in_body)
            yield from self._insert(text)
            yield from self._cases(text)
        yield from self._enums(text)
        if ours:
            yield from self._in_lists(text)

    # -- UPDATE ... SET status ----------------------------------------------------------------

    def _update(self, text: str, *, program: bool = False) -> Iterator[tuple[int, Hit]]:
        update = _UPDATE.search(text)
        if update is None:
            return
        if self.lexicon.job_tables and not self.lexicon.is_job_table(update.group(1)):
            return  # another table's status: a schedule's, a worker's
        set_start = update.end()
        set_end = _clause_end(text, set_start)
        # The assignments of the SET list, one by one: a status or actor named inside another
        # one's value (a string, a CASE that compares them) is not what the row is given.
        items = _split_items(text, set_start, set_end)
        found = next(
            ((at, target) for at, item in items if (target := self.column.set.match(item))),
            None,
        )
        if found is None:
            return
        target_at, target = found
        actor_match = next((m for _, item in items if (m := _SET_ACTOR.match(item))), None)
        actor = actor_match.group(1) if actor_match else None
        # The rows it moves are those its WHERE names, or the common table expressions it
        # reads; whatever else precedes it (a function's control flow, prose) says nothing of
        # them.
        with_clause = _WITH.search(text, 0, update.start())
        prefix = text[with_clause.start() : update.start()] if with_clause else ""
        guard = prefix + " " + text[set_end:]
        # Searched with its strings blanked, read where it holds them.
        blanked = _blank_strings(guard)
        froms = _source_states(guard, blanked, self.column)
        for sources, targets in _moves(target.string, target.end(), froms, self.column):
            for code, message in self.lexicon.move_problems(sources, targets, actor):
                yield target_at, Hit(0, code, message)
        parameterised = program or _PARAMETER.search(text) is not None
        if parameterised and self.column.guard.search(blanked) is None:
            message = (
                "no source state: the status is set with no `status = ...` in the WHERE "
                "naming the state the row must be in (a blind write)"
            )
            yield target_at, Hit(0, NO_SOURCE_STATE, message)

    # -- INSERT INTO jobs ------------------------------------------------------------------------

    def _insert(self, text: str) -> Iterator[tuple[int, Hit]]:
        for insert in _INSERT.finditer(text):
            if not self.lexicon.is_job_table(insert.group(1)):
                continue
            listed = _split_items(text, insert.start(2), insert.end(2))
            columns = [c.strip('"').lower() for _, c in listed]
            wanted = {column.lower() for column in self.lexicon.columns}
            index = next((i for i, c in enumerate(columns) if c in wanted), None)
            if index is None:
                continue
            if insert.group(3):
                rows = _values_rows(text, insert.end())
            else:
                select = insert.end()
                if insert.group(4):  # WITH ...: the SELECT past the common table expressions
                    select = _clause_end(text, select, _TOP_SELECT)
                    if text[select : select + 6].upper() != "SELECT":
                        continue
                    select += 6
                rows = _select_rows(text, select)
            for row in rows:
                if index < len(row):
                    at, item = row[index]
                    literal = _LITERAL_ITEM.fullmatch(item)
                    if literal is None:
                        continue
                    word = literal.group(1)
                    if word not in self.lexicon.states:
                        yield at, status_hit(0, word, "inserted as a job's status")
                    elif word != self.lexicon.initial:
                        yield (
                            at,
                            Hit(
                                0,
                                NOT_INITIAL,
                                f"a job is created in {self.lexicon.initial!r}, not {word!r}",
                            ),
                        )

    # -- CASE ... END --------------------------------------------------------------------------

    def _cases(self, text: str) -> Iterator[tuple[int, Hit]]:
        for case in _CASE_OR_END.finditer(text):
            if case.group(1).upper() != "CASE":
                continue
            start = case.start()
            end = _matching_end(text, start)
            body = text[start + 4 : end]
            if self.column.subject.match(body):
                for when in _WHEN_LITERAL.finditer(body):
                    if when.group(1) not in self.lexicon.states:
                        at = start + 4 + when.start(1)
                        yield at, status_hit(0, when.group(1), "compared with a status by CASE")
            found = _TARGET_BEFORE.search(text, max(0, start - 80), start)
            if found is None and end + 3 <= len(text):
                found = _TARGET_AFTER.match(text, end + 3)
            if found is None:
                continue
            name = found.group(1).lower()
            for result in _RESULT_LITERAL.finditer(body):
                word = result.group(1)
                at = start + 4 + result.start(1)
                if name.endswith("status") and word not in self.lexicon.states:
                    yield at, status_hit(0, word, f"given to {name} by CASE")
                elif name.endswith("actor") and word not in self.lexicon.actors:
                    yield at, Hit(0, WRONG_ACTOR, f"{word!r} is not an actor of the fixture")

    # -- enums and IN lists ----------------------------------------------------------------------

    def _enums(self, text: str) -> Iterator[tuple[int, Hit]]:
        for enum in _ENUM.finditer(text):
            if not self.lexicon.carries(enum.group(1)):
                continue  # another type (of events, of workers): not the job's states
            words = _QUOTED.findall(enum.group(2))
            bad = self.lexicon.invented(words, strict=True)
            for hit in invented_hits(0, bad, f"the enum type {enum.group(1)}"):
                yield enum.start(), hit
        for added in _ADD_VALUE.finditer(text):
            named = self.lexicon.carries(added.group(1)) if self.lexicon.by_carriers else True
            if (
                named
                and re.search(r"status|state", added.group(1), re.I)
                and (added.group(2) not in self.lexicon.states)
            ):
                message = f"the enum type {added.group(1)} gains {added.group(2)!r}"
                yield added.start(), Hit(0, STATES_INVENTED, message + ", not a state")

    def _in_lists(self, text: str) -> Iterator[tuple[int, Hit]]:
        if self.lexicon.by_carriers:
            return  # a list compared with another column holds no job's state
        for listed in _IN_LIST.finditer(text):
            if _STATUS_OPERAND.fullmatch(listed.group(1)):
                continue  # a status compared with a list: the vocabulary rules read it
            words = _QUOTED.findall(listed.group(2))
            bad = self.lexicon.invented(words, strict=False)
            for hit in invented_hits(0, bad, "a list of states in SQL"):
                yield listed.start(2), hit


def _blank_comments(text: str) -> str:
    """Comments replaced by spaces (newlines kept), so offsets stay those of the text."""

    def blank(match: re.Match[str]) -> str:
        token = match.group(0)
        if token.startswith("'"):
            return token
        return "".join("\n" if char == "\n" else " " for char in token)

    return _COMMENT_OR_QUOTE.sub(blank, text)


def _statements(
    text: str, start: int = 0, end: int | None = None, *, in_body: bool = False
) -> Iterator[_Statement]:
    """The statements of text[start:end], each a `;` apart; the statements of a dollar-quoted
    body are read on their own (after the one that holds it), and are blanked in it."""
    end = len(text) if end is None else end
    bodies: list[tuple[int, int]] = []
    first = start

    def statement(until: int) -> _Statement:
        chunk = text[first:until]
        for body_start, body_end in bodies:
            blank = "".join("\n" if c == "\n" else " " for c in text[body_start:body_end])
            at = body_start - first
            chunk = chunk[:at] + blank + chunk[at + len(blank) :]
        return _Statement(first, chunk, in_body)

    for token in _SPLIT.finditer(text, start, end):
        if token.group(1) is not None:
            bodies.append((token.start(2), token.end(2)))
            continue
        if token.group(0) != ";":
            continue
        yield statement(token.start())
        for body_start, body_end in bodies:
            yield from _statements(text, body_start, body_end, in_body=True)
        bodies = []
        first = token.end()
    if text[first:end].strip():
        yield statement(end)
        for body_start, body_end in bodies:
            yield from _statements(text, body_start, body_end, in_body=True)


def _clause_end(text: str, start: int, pattern: re.Pattern[str] = _CLAUSE_END) -> int:
    """Where the clause that starts at `start` ends: the next of `pattern`'s keywords at
    parenthesis depth 0, or a closing parenthesis that was not opened in it. Strings and
    quoted identifiers are skipped whole."""
    depth = 0
    for match in pattern.finditer(text, start):
        token = match.group(0)
        if token[0] in "'\"":
            continue
        if token == "(":
            depth += 1
        elif token == ")":
            if depth == 0:
                return match.start()
            depth -= 1
        elif depth == 0:
            return match.start()
    return len(text)


def _blank_strings(text: str) -> str:
    """The string literals' contents replaced by spaces, so offsets stay those of the text."""
    return _QUOTED.sub(lambda m: "'" + " " * (len(m.group(0)) - 2) + "'", text)


def _source_states(guard: str, blanked: str, column: _Column = _STATUS) -> list[str] | None:
    """The states a WHERE (or a CTE) says the row is in, by `status = <literal>` or `status IN
    (<literals>)`; None when it says none, and the move's source is unknown."""
    froms: list[str] = [guard[m.start(1) : m.end(1)] for m in column.where_eq.finditer(blanked)]
    for listed in column.where_in.finditer(blanked):
        if not listed.group(1):
            froms += _QUOTED.findall(guard, listed.start(2), listed.end(2))
    return froms or None


Move = tuple[list[str] | None, list[str] | None]


def _moves(assigned: str, at: int, froms: list[str] | None, column: _Column) -> list[Move]:
    """The (sources, targets) the value given to the status at `assigned[at:]` makes: a
    literal is one move from the WHERE's states; a CASE one per branch with a literal result,
    from the states its WHEN names (`CASE status WHEN <a> THEN <b>`, `WHEN status = <a>`)
    or else the WHERE's, and a branch that keeps the status (`ELSE status`) none. A value the
    text cannot read (a parameter, an expression) is a move to an unknown state."""
    if assigned.startswith("'", at):
        literal = _QUOTED.match(assigned, at)
        return [(froms, [literal.group(1)] if literal else None)]
    if assigned[at : at + 4].upper() == "CASE":
        return _case_moves(assigned, at, froms, column)
    bracketed = _OPEN_BRACKETS.match(assigned, at)
    if bracketed is not None and assigned[bracketed.end() : bracketed.end() + 4].upper() == "CASE":
        return _case_moves(assigned, bracketed.end(), froms, column)
    return [(froms, None)]


def _case_moves(text: str, start: int, froms: list[str] | None, column: _Column) -> list[Move]:
    end = _matching_end(text, start)
    subject = column.subject.match(text, start + 4) is not None
    moves: list[Move] = []
    named: list[str] = []
    for condition, result_at, result_end in _case_branches(text, start, end):
        if condition is None:  # ELSE: whatever the WHENs did not name
            sources = [s for s in froms if s not in named] if froms is not None else None
            if froms is not None and not sources:
                continue
        elif subject:
            sources = _QUOTED.findall(condition)
            named += sources
        else:
            blanked = _blank_strings(condition)
            sources = _source_states(condition, blanked, column)
            if sources is None:
                sources = froms
            else:
                named += sources
        moves += _branch_moves(text[result_at:result_end], sources, column)
    return moves


def _branch_moves(result: str, sources: list[str] | None, column: _Column) -> list[Move]:
    stripped = result.strip()
    offset = len(result) - len(result.lstrip())
    if stripped.startswith("'"):
        literal = _QUOTED.match(result, offset)
        return [(sources, [literal.group(1)])] if literal else []
    if stripped[:4].upper() == "CASE":
        return _case_moves(result, offset, sources, column)
    return []  # the status itself, another column, a parameter: no word to judge


def _case_branches(text: str, start: int, end: int) -> list[tuple[str | None, int, int]]:
    """The branches of the CASE at text[start:end] (end at its END): (the WHEN condition, or
    None for ELSE; where the result starts; where it ends). Nested CASEs, brackets and
    strings are skipped whole."""
    branches: list[tuple[str | None, int, int]] = []
    depth = 0
    condition: str | None = None
    condition_at = -1
    result_at = -1
    is_else = False

    def close(at: int) -> None:
        if result_at >= 0:
            branches.append((None if is_else else condition, result_at, at))

    for token in _CASE_TOKEN.finditer(text, start + 4, end):
        word = token.group(0)
        if word[0] in "'\"":
            continue
        upper = word.upper()
        if upper in ("(", "CASE"):
            depth += 1
            continue
        if upper in (")", "END"):
            depth -= 1
            continue
        if depth:
            continue
        if upper == "WHEN":
            close(token.start())
            condition_at, result_at, is_else = token.end(), -1, False
        elif upper == "THEN":
            condition = text[condition_at : token.start()] if condition_at >= 0 else ""
            result_at = token.end()
        elif upper == "ELSE":
            close(token.start())
            result_at, is_else = token.end(), True
    close(end)
    return branches


def _matching_end(text: str, start: int) -> int:
    """The offset of the END that closes the CASE at `start` (or the text's end)."""
    depth = 0
    for match in _CASE_OR_END.finditer(text, start):
        if match.group(1).upper() == "CASE":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return match.start()
    return len(text)


def _split_items(text: str, start: int, end: int) -> list[tuple[int, str]]:
    """Top-level comma-separated items of text[start:end], with their offsets."""
    items = []
    depth = 0
    item_start = start
    for match in _ITEM_TOKEN.finditer(text, start, end):
        token = match.group(0)
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
        elif token == "," and depth == 0:
            items.append(_item(text, item_start, match.start()))
            item_start = match.end()
    items.append(_item(text, item_start, end))
    return items


def _item(text: str, start: int, end: int) -> tuple[int, str]:
    raw = text[start:end]
    stripped = raw.strip()
    return start + (len(raw) - len(raw.lstrip())), stripped


def _values_rows(text: str, start: int) -> list[list[tuple[int, str]]]:
    """The rows of a VALUES list: each parenthesised group, split into its items."""
    rows: list[list[tuple[int, str]]] = []
    position = start
    while True:
        match = _ROW_OPEN.match(text, position)
        if match is None:
            return rows
        open_at = match.end() - 1
        depth = 0
        for token in _ITEM_TOKEN.finditer(text, open_at):
            if token.group(0) == "(":
                depth += 1
            elif token.group(0) == ")":
                depth -= 1
                if depth == 0:
                    rows.append(_split_items(text, open_at + 1, token.start()))
                    position = token.end()
                    break
        else:
            return rows
        comma = _ROW_COMMA.match(text, position)
        if comma is None:
            return rows
        position = comma.end()


def _select_rows(text: str, start: int) -> list[list[tuple[int, str]]]:
    """The select lists of an INSERT ... SELECT: the first (from `start`, just past its
    SELECT) and each one joined to it by UNION, split into their items."""
    rows: list[list[tuple[int, str]]] = []
    while True:
        quantifier = _QUANTIFIER.match(text, start)
        if quantifier is not None:
            start = quantifier.end()
        end = _clause_end(text, start, _SELECT_END)
        rows.append(_split_items(text, start, end))
        union = _UNION_SELECT.match(text, _clause_end(text, end, _SET_OPERATION))
        if union is None:
            return rows
        start = union.end()
