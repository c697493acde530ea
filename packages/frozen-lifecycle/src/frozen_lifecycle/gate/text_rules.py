"""The rules over files that are not Python: templates, scripts, YAML, JSON, Markdown, SQL.

Every such file gets the vocabulary rules (quoted aliases, status words in SQL and prose,
`status="x"`) and, where it holds SQL, the SQL rules. Then, by kind:

- templates (Jinja): `{% if job.status == 'x' %}`, `... in ['x', 'y']`, `{% set status = %}`,
  with filters (`|lower`), `.get('status')` and `['status']`; and the script rules below,
  for the scripts a template holds;
- JavaScript and TypeScript: `===` / `!==` / `==`, `[...].includes(status)` (an array
  literal, or a constant array by name), `switch (status) { case 'x': }`, `status: 'x'`,
  `applyTransition(job, 'x', 'a')` and `checkTransition('f', 't', 'a')` against the edges, an
  array that mixes states with other status words; and the case study's STATES definitions:
  `export const STATES = [...]`, `Object.freeze([...])`, a union type or an enum named for a
  status (listed: exactly the fixture's states; derived from the fixture: fine);
- YAML: a status key with a word that is not a state (`status: stalled`), a list (flow or
  block) that mixes states with other status words, or any non-state under a key named for
  states;
- JSON: `"status": "x"`, a JSON Schema `"enum"` holding a state, arrays of states;
- Markdown: a hand-written table outside the generated regions whose status column names a
  word that is not a state, or whose rows name an edge the fixture lacks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from frozen_lifecycle.gate.lexicon import (
    STATES_INVENTED,
    STATES_NAME,
    Facts,
    Hit,
    Lexicon,
    LineOf,
    invented_hits,
    lines_of,
    status_hit,
)
from frozen_lifecycle.gate.sources import JSON, MARKDOWN, SCRIPT, SQL, TEMPLATE, YAML
from frozen_lifecycle.gate.sql import SqlRules, looks_like_sql
from frozen_lifecycle.gate.states import check_words
from frozen_lifecycle.gate.vocabulary import Vocabulary

_NAME = r"(?:(?:\w+_)?(?:status|state)|[a-z][\w$]*(?:Status|State))\b"
_JS_STATUS = (
    r"(?:[\w$]+(?:\?\.|\.))*" + _NAME + r"(?:\s*\(\s*\))?"
    r"(?:\.(?:toLowerCase|toUpperCase|toLocaleLowerCase|trim)\(\s*\))*"
    r"|[\w$.]+\[\s*['\"](?:\w+_)?(?:status|state)['\"]\s*\]"
)
_JINJA_STATUS = (
    r"(?:\w+\.)*(?:\w+_)?(?:status|state)\b(?:\s*\|\s*\w+)*"
    r"|[\w.]+\[\s*['\"](?:\w+_)?(?:status|state)['\"]\s*\](?:\s*\|\s*\w+)*"
    r"|[\w.]+\.get\(\s*['\"](?:\w+_)?(?:status|state)['\"][^)]*\)(?:\s*\|\s*\w+)*"
)
_FOLDED = re.compile(r"lower|upper|LowerCase|UpperCase|title|capitalize")
_WORD = r"(?P<q>[\"'`])(?P<word>[^\"'`\n]*)(?P=q)"
_JS_COMPARE = re.compile(rf"(?P<status>{_JS_STATUS})\s*(?:===?|!==?)\s*{_WORD}")
_JS_COMPARE_REVERSED = re.compile(rf"{_WORD}\s*(?:===?|!==?)\s*(?P<status>{_JS_STATUS})")
_JS_INCLUDES_ARRAY = re.compile(rf"\[([^\[\]]*)\]\s*\.includes\(\s*({_JS_STATUS})\s*\)")
_JS_INCLUDES_NAME = re.compile(rf"([A-Za-z_$][\w$]*)\.includes\(\s*({_JS_STATUS})\s*\)")
_JS_SWITCH = re.compile(rf"\bswitch\s*\(\s*({_JS_STATUS})\s*\)\s*\{{")
_JS_CASE = re.compile(rf"\bcase\s+{_WORD}\s*:")
_JS_KEYED = re.compile(rf"(?<![\w$-])([\"']?)(?:\w+_)?status\1\s*:\s*{_WORD}")
_JS_ARRAY = re.compile(r"\[\s*(?:([\"'])[^\"'\n]*\1\s*,\s*)*([\"'])[^\"'\n]*\2\s*,?\s*\]")
_QUOTED = re.compile(r"([\"'`])([^\"'`\n]*)\1")
_JS_STATES = re.compile(r"\b(?:export\s+)?(?:const|let|var)\s+STATES\b[^=\n]*=")
_TS_UNION = re.compile(
    r"\btype\s+(\w+)\s*=\s*((?:\|\s*)?([\"'])[^\"'\n]*\3(?:\s*\|\s*([\"'])[^\"'\n]*\4)*)"
)
_TS_ENUM = re.compile(r"\benum\s+(\w+)\s*\{([^}]*)\}")
_TS_MEMBER = re.compile(r"=\s*([\"'])([^\"'\n]*)\1")
_STATUS_TYPE = re.compile(r"\w*(?:status|state)\w*", re.I)
_JS_APPLY = re.compile(
    r"\bapplyTransition\(\s*[^,()\"']+?\s*,\s*([\"'])(\w+)\1\s*(?:,\s*([\"'])(\w+)\3\s*)?\)"
)
_JS_CHECK = re.compile(
    r"\bcheckTransition\(\s*([\"'])(\w+)\1\s*,\s*([\"'])(\w+)\3\s*(?:,\s*([\"'])(\w+)\5\s*)?\)"
)
_JINJA_BLOCK = re.compile(r"\{%-?(.*?)-?%\}|\{\{-?(.*?)-?\}\}", re.S)
_JINJA_COMPARE = re.compile(rf"({_JINJA_STATUS})\s*(?:==|!=)\s*([\"'])([^\"'\n]*)\2")
_JINJA_COMPARE_REVERSED = re.compile(rf"([\"'])([^\"'\n]*)\1\s*(?:==|!=)\s*({_JINJA_STATUS})")
_JINJA_IN = re.compile(rf"({_JINJA_STATUS})\s+(?:not\s+)?in\s*[\[(]([^\])]*)[\])]")
_JINJA_SET = re.compile(r"\bset\s+((?:\w+_)?status)\s*=\s*([\"'])([^\"'\n]*)\2")
_YAML_KEY = re.compile(r"^(\s*)(?:-\s+)?([\"']?)([\w.-]+)\2\s*:(?:\s+(.*?))?\s*$")
_YAML_ITEM = re.compile(r"^(\s*)-\s+([\"']?)([\w-]+)\2\s*$")
_YAML_STATUS_KEY = re.compile(r"(?:[\w-]+[_-])?status", re.I)
_YAML_BARE = re.compile(r"([\"']?)([A-Za-z_][\w-]*)\1")
_YAML_CONSTANTS = frozenset({"null", "true", "false", "yes", "no", "on", "off"})
_JSON_ENUM = re.compile(r"\"enum\"\s*:\s*\[([^\]]*)\]")
_REGION = re.compile(
    r"(<!-- BEGIN GENERATED: ([\w-]+) -->\n)(.*?)(<!-- END GENERATED: \2 -->)", re.S
)
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_STATUS_COLUMN = re.compile(
    r"(?:(current|from|old|previous|next|to|new|target)\s+)?(?:job\s+)?(?:status|state)(?:es)?"
)
_TABLE_WORD = re.compile(r"[a-z][a-z0-9_]*")
_NOT_A_STATE_CELL = frozenset({"reject", "none", "any", "n/a"})


class TextRules:
    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self.vocabulary = Vocabulary(lexicon)
        self.sql = SqlRules(lexicon)

    def check(self, kind: str, text: str) -> Facts:
        facts = Facts()
        lines = lines_of(text)
        # Where carriers are configured, a script's quoted alias is judged where it reaches a
        # job's status (compared, switched on, keyed), not as any string of the script.
        aliases = not (self.lexicon.by_carriers and kind in (SCRIPT, TEMPLATE))
        hits = list(self.vocabulary.text_hits(text, lines, aliases=aliases))
        if kind == SQL or looks_like_sql(text):
            hits += self.sql.check(text, lines)
        taken: set[int] = set()  # arrays read as statuses or as STATES
        if kind == TEMPLATE:
            hits += self._jinja(text, lines, taken)
        if kind in (TEMPLATE, SCRIPT):
            hits += self._script(text, lines, facts, taken)
        elif kind == JSON:
            hits += self._keyed(text, lines)
            hits += self._json_enums(text, lines)
            hits += self._arrays(text, lines, set())
        elif kind == YAML:
            hits += self._yaml(text)
        elif kind == MARKDOWN:
            hits += self._tables(text)
        seen: set[Hit] = set()
        for hit in hits:
            if hit not in seen:
                seen.add(hit)
                facts.hits.append(hit)
        return facts

    # -- status words compared, listed, keyed ---------------------------------------------------

    def _of_a_job(self, expression: str) -> bool:
        """With carriers configured, a status is a job's when its expression names a job or a
        configured carrier (`job.status`, `jobStatus`), not any object's (`worker.status`)."""
        if not self.lexicon.by_carriers:
            return True
        lowered = expression.lower()
        carriers = {
            name.lower() for name in (*(self.lexicon.carriers or ()), *self.lexicon.holders)
        }
        return "job" in lowered or any(name in lowered for name in carriers)

    def _compared(self, line: int, word: str, expression: str) -> Iterator[Hit]:
        if not self._of_a_job(expression):
            return
        folded = _FOLDED.search(expression) is not None
        if (word.lower() if folded else word) not in self.lexicon.states:
            yield status_hit(line, word, "compared with a status")

    def _jinja(self, text: str, lines: LineOf, taken: set[int]) -> Iterator[Hit]:
        for block in _JINJA_BLOCK.finditer(text):
            body = block.group(1) if block.group(1) is not None else block.group(2)
            start = block.start(1) if block.group(1) is not None else block.start(2)
            for match in _JINJA_COMPARE.finditer(body):
                yield from self._compared(lines(start + match.start()), match[3], match[1])
            for match in _JINJA_COMPARE_REVERSED.finditer(body):
                yield from self._compared(lines(start + match.start()), match[2], match[3])
            for match in _JINJA_IN.finditer(body):
                taken.add(start + match.start(2) - 1)
                for _, word in _QUOTED.findall(match[2]):
                    yield from self._compared(lines(start + match.start()), word, match[1])
            for match in _JINJA_SET.finditer(body):
                if match[3] not in self.lexicon.states:
                    yield status_hit(lines(start + match.start()), match[3], "set as a status")

    def _script(self, text: str, lines: LineOf, facts: Facts, taken: set[int]) -> Iterator[Hit]:
        for pattern in (_JS_COMPARE, _JS_COMPARE_REVERSED):
            for match in pattern.finditer(text):
                yield from self._compared(lines(match.start()), match["word"], match["status"])
        for match in _JS_INCLUDES_ARRAY.finditer(text):
            taken.add(match.start())
            for _, word in _QUOTED.findall(match[1]):
                yield from self._compared(lines(match.start()), word, match[2])
        for match in _JS_INCLUDES_NAME.finditer(text):
            for word, at in self._js_constant(text, match[1], taken):
                yield from self._compared(lines(at), word, match[2])
        for match in _JS_SWITCH.finditer(text):
            block = text[match.end() : _closing_brace(text, match.end())]
            for case in _JS_CASE.finditer(block):
                at = lines(match.end() + case.start())
                yield from self._compared(at, case["word"], match[1])
        yield from self._keyed(text, lines)
        yield from self._transitions(text, lines)
        yield from self._states_definitions(text, lines, facts, taken)
        yield from self._arrays(text, lines, taken)

    def _js_constant(self, text: str, name: str, taken: set[int]) -> Iterator[tuple[str, int]]:
        pattern = rf"\b(?:const|let|var)\s+{re.escape(name)}\s*=\s*(?:Object\.freeze\()?\["
        found = re.search(pattern, text)
        if found is None:
            return
        start = found.end() - 1
        taken.add(start)
        end = text.find("]", start)
        for match in _QUOTED.finditer(text, start, end if end > 0 else len(text)):
            yield match[2], match.start()

    def _keyed(self, text: str, lines: LineOf) -> Iterator[Hit]:
        for match in _JS_KEYED.finditer(text):
            if not self._of_a_job(match.group(0).partition(":")[0]):
                continue
            if match["word"] not in self.lexicon.states:
                yield status_hit(lines(match.start()), match["word"], "keyed as a status")

    def _transitions(self, text: str, lines: LineOf) -> Iterator[Hit]:
        for match in _JS_APPLY.finditer(text):
            actor = match[4] or self.lexicon.default_actor  # the case study's `worker`
            for code, message in self.lexicon.move_problems(None, [match[2]], actor):
                yield Hit(lines(match.start()), code, message)
        for match in _JS_CHECK.finditer(text):
            for code, message in self.lexicon.move_problems([match[2]], [match[4]], match[6]):
                yield Hit(lines(match.start()), code, message)

    # -- the case study's STATES, and arrays of states -------------------------------------------

    def _states_definitions(
        self, text: str, lines: LineOf, facts: Facts, taken: set[int]
    ) -> Iterator[Hit]:
        states = self.lexicon.ordered_states
        for match in _JS_STATES.finditer(text):
            facts.states_defined = True
            end = _expression_end(text, match.end())
            bracket = text.find("[", match.end(), end)
            if bracket >= 0:
                taken.add(bracket)
            words = [m[2] for m in _QUOTED.finditer(text, match.end(), end)]
            line = lines(match.start())
            if "..." in text[match.end() : end]:  # derived, perhaps with words added
                yield from check_words(words, line, states, missing=False)
            elif words:  # listed by hand
                yield from check_words(words, line, states)
        for match in _TS_UNION.finditer(text):
            words = [m[2] for m in _QUOTED.finditer(match[2])]
            yield from self._type_words(match[1], words, lines(match.start()), facts, "type")
        for match in _TS_ENUM.finditer(text):
            words = [m[2] for m in _TS_MEMBER.finditer(match[2])]
            yield from self._type_words(match[1], words, lines(match.start()), facts, "enum")

    def _type_words(
        self, name: str, words: list[str], line: int, facts: Facts, kind: str
    ) -> Iterator[Hit]:
        if self.lexicon.by_carriers and not self.lexicon.carries(name):
            return
        if _STATUS_TYPE.fullmatch(name) and any(w in self.lexicon.states for w in words):
            facts.states_defined = True
            missing = self.lexicon.missing(words)
            if missing:
                message = f"the {kind} {name} lacks fixture state(s) {', '.join(sorted(missing))}"
                yield Hit(line, "states-drift", message)
        bad = self.lexicon.invented(words, strict=True)
        yield from invented_hits(line, bad, f"the {kind} {name}")

    def _arrays(self, text: str, lines: LineOf, taken: set[int]) -> Iterator[Hit]:
        if self.lexicon.by_carriers:
            return  # an array not named for states holds no job's state
        for match in _JS_ARRAY.finditer(text):
            if match.start() in taken:
                continue
            words = [m[2] for m in _QUOTED.finditer(match[0])]
            if len(words) >= 2:
                bad = self.lexicon.invented(words, strict=False)
                yield from invented_hits(lines(match.start()), bad, "an array of states")

    def _json_enums(self, text: str, lines: LineOf) -> Iterator[Hit]:
        if self.lexicon.by_carriers:
            return
        for match in _JSON_ENUM.finditer(text):
            words = [m[2] for m in _QUOTED.finditer(match[1])]
            bad = self.lexicon.invented(words, strict=True)
            yield from invented_hits(lines(match.start()), bad, "a JSON Schema enum")

    # -- YAML ----------------------------------------------------------------------------------

    def _yaml(self, text: str) -> Iterator[Hit]:
        rows = text.split("\n")
        for index, raw in enumerate(rows):
            line = _strip_yaml_comment(raw)
            match = _YAML_KEY.match(line)
            if match is None:
                continue
            indent, key, value = len(match[1]), match[3], match[4] or ""
            strict = STATES_NAME.fullmatch(key) is not None or key.lower().endswith(
                ("states", "statuses")
            )
            if value.startswith("["):
                words = [w.strip().strip("\"'") for w in value.strip("[] ").split(",")]
                yield from self._yaml_list(key, [(w, index + 1) for w in words if w], strict)
            elif value:
                bare = _YAML_BARE.fullmatch(value)
                if (
                    bare
                    and _YAML_STATUS_KEY.fullmatch(key)
                    and self._of_a_job(key)
                    and bare[2] not in self.lexicon.states
                    and bare[2].lower() not in _YAML_CONSTANTS
                ):
                    yield status_hit(index + 1, bare[2], f"given to {key}")
            else:
                items = []
                for offset, following in enumerate(rows[index + 1 :], index + 2):
                    item = _YAML_ITEM.match(_strip_yaml_comment(following))
                    if item is None or len(item[1]) < indent:
                        break
                    items.append((item[3], offset))
                yield from self._yaml_list(key, items, strict)

    def _yaml_list(self, key: str, items: list[tuple[str, int]], strict: bool) -> Iterator[Hit]:
        if self.lexicon.by_carriers and not strict:
            return
        bad = set(self.lexicon.invented([w for w, _ in items], strict=strict))
        for word, line in items:
            if word in bad:
                yield from invented_hits(line, [word], f"the list {key}")
                bad.discard(word)

    # -- Markdown tables ------------------------------------------------------------------------

    def _tables(self, text: str) -> Iterator[Hit]:
        rows = _REGION.sub(lambda m: m[1] + "\n" * m[3].count("\n") + m[4], text).split("\n")
        fenced = False
        index = 0
        while index < len(rows):
            row = rows[index].strip()
            if row.startswith(("```", "~~~")):
                fenced = not fenced
            if (
                fenced
                or not row.startswith("|")
                or index + 1 >= len(rows)
                or not _TABLE_SEPARATOR.match(rows[index + 1])
            ):
                index += 1
                continue
            header = _cells(row)
            body = index + 2
            while body < len(rows) and rows[body].strip().startswith("|"):
                yield from self._table_row(header, _cells(rows[body].strip()), body + 1)
                body += 1
            index = body

    def _table_row(self, header: list[str], cells: list[str], line: int) -> Iterator[Hit]:
        roles: dict[str, str] = {}
        for title, cell in zip(header, cells, strict=False):
            heading = title.lower().strip(" *`_")
            word = cell.strip(" *`")
            column = _STATUS_COLUMN.fullmatch(heading)
            if heading == "actor":
                roles["actor"] = word
            if column is None or not _TABLE_WORD.fullmatch(word):
                continue
            if word not in self.lexicon.states and word not in _NOT_A_STATE_CELL:
                message = f"a hand-written status table names {word!r}, not a state in the fixture"
                yield Hit(line, STATES_INVENTED, message)
            if column[1] in ("current", "from", "old", "previous"):
                roles["from"] = word
            elif column[1] in ("next", "to", "new", "target"):
                roles["to"] = word
        source, target = roles.get("from"), roles.get("to")
        if source and target:
            actor = roles.get("actor")
            actor = actor if actor and _TABLE_WORD.fullmatch(actor) else None
            for code, message in self.lexicon.move_problems([source], [target], actor):
                yield Hit(line, code, message)


def _strip_yaml_comment(line: str) -> str:
    at = line.find(" #")
    return line if at < 0 or line.count('"', 0, at) % 2 or line.count("'", 0, at) % 2 else line[:at]


def _cells(row: str) -> list[str]:
    """The cells of a table row: split at pipes that are neither escaped nor in code."""
    parts = re.split(r"(?<!\\)\|(?=(?:[^`]*`[^`]*`)*[^`]*$)", row)
    inner = parts[1:-1] if row.endswith("|") else parts[1:]
    return [part.strip() for part in inner]


def _closing_brace(text: str, start: int) -> int:
    depth = 1
    for index in range(start, len(text)):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
    return len(text)


def _expression_end(text: str, start: int) -> int:
    """The end of a JavaScript initialiser: a `;`, or a line end, at bracket depth 0."""
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth <= 0 and (char == ";" or (char == "\n" and text[start:index].strip())):
            return index
    return len(text)
