"""The rules over a Python module's AST, in one pass.

- `forbidden-alias`: a string constant (or f-string part) equal to an alias, or quoting one;
- `unknown-status`: a word compared with a status (`==`, `!=`, `in`, `match`) or assigned,
  keyed or passed as one, that is not a state. A status is an expression whose last name,
  attribute or key is `status`, `state`, `to_status`, `from_status`... also through `.get()`,
  `getattr()`, `str()`, `.lower()` and friends; a word reaches it as a literal, or through a
  name assigned a literal earlier in the function or module. Also `status=<word>` in the prose
  of a string, and quoted words compared with a status in SQL held in a string;
- `states-invented`: a `Literal[...]`, an enum of any name, a class of constants, a tuple,
  list, set or dict keys, a JSON Schema `enum`, or the fixture's states splatted or extended,
  that hold a state and words that are not states;
- `undeclared-edge`, `wrong-actor`: `apply_transition` / `check_transition`, and any call with
  literal `from_status` / `to_status` / `actor` keywords (a `Move`), must name a declared edge
  and its actor;
- `not-initial`: `create_job(...)`, `NewJob(...)` (or a configured job model: `job-models`)
  with a `status=` other than the initial one;
- SQL in strings, through `sql.SqlRules`; module-level `STATES`, through `states`;
- side-effect handlers registered by decorator, `HANDLERS["x"] = ...`, `HANDLERS.update(...)`,
  `.setdefault` or a dict literal, gathered for the whole-tree check.

Every finding needs its evidence in the text of the statement it is in: a word of the fixture,
or a name of the kinds the rules follow (`PythonRules.triggers`). A module, a top-level
statement, a class or a function whose text holds none is not read at all (the module's
constants are gathered beforehand), which spares a third of the tree.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from frozen_lifecycle.gate.lexicon import (
    JOB_MODEL,
    NOT_INITIAL,
    STATES_INVENTED,
    STATES_NAME,
    STATUS_KEY,
    STATUS_NAME,
    WRONG_ACTOR,
    Facts,
    Hit,
    Lexicon,
    LineOf,
    alias_hit,
    invented_hits,
    lines_of,
    status_hit,
)
from frozen_lifecycle.gate.sql import SqlRules, looks_like_sql
from frozen_lifecycle.gate.states import STATES_DRIFT, check_states
from frozen_lifecycle.gate.vocabulary import Vocabulary

EFFECT_HANDLERS = "effect-handlers"
API_ENUM = "api-status-enum"
HANDLER_DECORATOR = "side_effect_handler"
STATUS_ENUM_NAMES = frozenset({"JobStatus", "Status", "StatusEnum"})
# Call name -> positions of arguments that are statuses.
TRANSITION_CALLS = {"apply_transition": (1,), "can_transition": (0, 1), "check_transition": (0, 1)}
_FOLDS = frozenset({"lower", "upper", "casefold", "title", "capitalize"})
_TRIMS = frozenset({"strip", "lstrip", "rstrip"})
_WRAPPERS = frozenset({"tuple", "list", "set", "frozenset", "sorted"})
_GROWERS = frozenset({"append", "add", "extend", "union", "insert"})
_HANDLERS_NAME = re.compile(r"(?:\w+_)?(?:handlers?|HANDLERS?)")
_REGISTER_CALLS = frozenset({"register_handler", "register_effect_handler", "register_effect"})
# Calls named for creating a job; `NewJob` is the guessed model the configured job-models
# replace.
_CREATE_CALL = re.compile(r"(?:create|new|insert|enqueue|submit|add)_?jobs?|NewJob", re.I)
_STATES_REF = re.compile(r"(?:\w+_)?(?:states|statuses|terminal|STATES|STATUSES|TERMINAL)")
_ENUM_BASE = re.compile(r"\w*Enum")
# Type expressions a union of typed names is built with.
_TYPE_BUILDERS = frozenset({"Literal", "Union", "Optional", "Annotated"})

Values = list[tuple[str, int]]
_CHILD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}
_SCALAR_FIELDS = frozenset(
    {
        "ctx",
        "id",
        "attr",
        "arg",
        "name",
        "asname",
        "kind",
        "type_comment",
        "level",
        "module",
        "conversion",
        "is_async",
        "simple",
        "lineno",
        "col_offset",
        "end_lineno",
        "end_col_offset",
    }
)
_LEAVES = (
    ast.Name,
    ast.Constant,
    ast.Import,
    ast.ImportFrom,
    ast.Global,
    ast.Nonlocal,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.alias,
    ast.expr_context,
)


def _child_fields(kind: type[ast.AST]) -> tuple[str, ...]:
    if issubclass(kind, _LEAVES):
        return ()
    return tuple(f for f in kind._fields if f not in _SCALAR_FIELDS)


@dataclass(frozen=True)
class _Status:
    """An expression that holds a status; `folded` when its case was changed on the way."""

    folded: bool = False


class PythonRules:
    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self.vocabulary = Vocabulary(lexicon)
        self.sql = SqlRules(lexicon)
        words = {*lexicon.states, *lexicon.aliases, *lexicon.actors, *lexicon.effects}
        words |= {*lexicon.holders, *lexicon.moves, *(lexicon.carriers or ())}
        words |= {*lexicon.job_models, *lexicon.status_columns}
        # The names the rules follow: STATUS_NAME, STATES_NAME, _STATES_REF (terminal),
        # _HANDLERS_NAME, _REGISTER_CALLS (register_effect), TRANSITION_CALLS, actor keywords.
        names = {"status", "state", "terminal", "handler", "effect", "transition", "actor"}
        # Searched in lower-cased text: far faster than a case-blind pattern.
        lowered = sorted({word.lower() for word in (*names, *words)})
        self.triggers = re.compile("|".join(map(re.escape, lowered)))

    def may_find(self, text: str) -> bool:
        """Whether any rule could find something in `text`: it holds a word a rule reads."""
        return self.triggers.search(text.lower()) is not None

    def check(self, tree: ast.Module, text: str = "", *, generated: bool = False) -> Facts:
        run = _Run(self, tree, text, generated)
        run.module(tree)
        return run.facts


class _Run:
    """One module's pass: the scopes it has seen, and what it found."""

    def __init__(self, rules: PythonRules, tree: ast.Module, text: str, generated: bool) -> None:
        self.text = text
        self.triggers = rules.triggers
        self._line_starts: list[int] | None = None
        self._lowered: str  # the text lower-cased, with the line starts
        self.lexicon = rules.lexicon
        self.vocabulary = rules.vocabulary
        self.sql = rules.sql
        self.generated = generated
        self.facts = Facts()
        self.seen: set[Hit] = set()
        self.consumed: set[int] = set()  # collections already read as statuses
        self.typed: set[int] = set()  # parts of a type built from the typed names, read
        self.sql_done: set[int] = set()  # string parts read with their whole f-string
        self.scopes: list[dict[str, Values]] = [self._module_constants(tree)]
        # Dict literals by the name they were given in each scope (a query's parameters).
        self.mappings: list[dict[str, ast.expr]] = [{}]
        self.classes_in: list[str] = []  # the classes being read, innermost last
        # The module's top-level classes by name: a holder inherits its bases' methods.
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    # -- reporting --------------------------------------------------------------------------

    def hit(self, hit: Hit) -> None:
        if hit not in self.seen:
            self.seen.add(hit)
            self.facts.hits.append(hit)

    def hits(self, hits: Iterable[Hit]) -> None:
        for hit in hits:
            self.hit(hit)

    def status_values(self, node: ast.AST | None, how: str, folded: bool = False) -> None:
        """Every word `node` holds (through names too) must be a state."""
        if node is None:
            return
        for word, line in self.values(node):
            if word and (word.lower() if folded else word) not in self.lexicon.states:
                self.hit(status_hit(line, word, how))
        self._consume(node)

    def _consume(self, node: ast.AST) -> None:
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            self.consumed.add(id(node))
        elif isinstance(node, ast.Call) and node.args:
            self._consume(node.args[0])

    # -- names --------------------------------------------------------------------------------

    @staticmethod
    def _module_constants(tree: ast.Module) -> dict[str, Values]:
        constants: dict[str, Values] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            else:
                continue
            if isinstance(target, ast.Name):
                words = _literal_values(value)
                if words:
                    constants[target.id] = words
        return constants

    def values(self, node: ast.AST) -> Values:
        """The words a value holds: literals, items of literal collections, and the literals
        a name was given earlier in this function or module."""
        if isinstance(node, ast.Name):
            for scope in reversed(self.scopes):
                if node.id in scope:
                    return scope[node.id]
            return []
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return [v for item in node.elts for v in self.values(item)]
        if isinstance(node, ast.IfExp):
            return self.values(node.body) + self.values(node.orelse)
        if isinstance(node, ast.BoolOp):
            return [v for item in node.values for v in self.values(item)]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _WRAPPERS
            and len(node.args) == 1
        ):
            return self.values(node.args[0])
        return _literal_values(node)

    def remember(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, ast.Dict) or (
                isinstance(value, ast.Call) and _call_name(value.func) == "dict"
            ):
                self.mappings[-1][target.id] = value
            else:
                self.mappings[-1].pop(target.id, None)
        if isinstance(target, ast.Name) and len(self.scopes) > 1:
            words = _literal_values(value)
            if words:
                self.scopes[-1][target.id] = words
            else:
                self.scopes[-1].pop(target.id, None)

    # -- traversal ----------------------------------------------------------------------------

    def module(self, tree: ast.Module) -> None:
        for node in tree.body:
            if self._states_assignment(node) or not self.mentions(node):
                continue
            self.visit(node)

    def mentions(self, node: ast.AST) -> bool:
        """Whether the text of `node`, with its decorators, holds a word any rule reads."""
        starts = self._line_starts
        if starts is None:
            # Lines as the AST counts them, offsets as in the text: a module with a lone
            # carriage return (a line break too) or a character that lower-cases to two is
            # read whole, and so is a tree checked without its text.
            self._lowered = self.text.lower()
            same = len(self._lowered) == len(self.text) and not _LONE_CR.search(self.text)
            same = same and bool(self.text)
            starts = _line_starts(self.text) if same else []
            self._line_starts = starts
        if not starts:
            return True
        line: int = getattr(node, "lineno", 1)
        decorators: list[ast.expr] = getattr(node, "decorator_list", [])
        first = min(line, *(d.lineno for d in decorators)) if decorators else line
        last: int = getattr(node, "end_lineno", None) or line
        begin = starts[first - 1]
        end = starts[last] if last < len(starts) else len(self.text)
        return self.triggers.search(self._lowered, begin, end) is not None

    def visit(self, node: ast.AST) -> None:
        kind = type(node)
        if kind in _DEFINITIONS and not self.mentions(node):  # a def the rules need not read
            return
        handler = _HANDLERS.get(kind)
        if handler is not None and handler(self, node) is False:
            return  # the handler visited the children itself
        self.children(node, kind)

    def children(self, node: ast.AST, kind: type[ast.AST]) -> None:
        """Visit the child nodes: a faster ast.iter_child_nodes that skips the fields which
        never hold a node worth reading (names, contexts, imports)."""
        fields = _CHILD_FIELDS.get(kind)
        if fields is None:
            fields = _CHILD_FIELDS[kind] = _child_fields(kind)
        visit = self.visit
        for name in fields:
            value = getattr(node, name)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        visit(item)
            elif isinstance(value, ast.AST):
                visit(value)

    # -- handlers (return False when they visited the children themselves) ----------------------

    def constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str) or not node.value:
            return
        value = node.value
        line_of = _LazyLines(self, node)
        if value in self.lexicon.aliases and not self.lexicon.by_carriers:
            # Where carriers are configured, an alias is judged where it reaches one (a status
            # compared, given, keyed; a carrier's member), not as any string (a task's name).
            self.hit(alias_hit(node.lineno, value))
        self.hits(self.vocabulary.string_hits(value, line_of))
        if id(node) not in self.sql_done and looks_like_sql(value):
            self.hits(self.sql.check(value, line_of))

    def joined_str(self, node: ast.JoinedStr) -> None:
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
                self.sql_done.add(id(part))
            else:
                parts.append("\0")
        text = "".join(parts)
        if looks_like_sql(text):
            line_of = lines_of(text, node.lineno)
            self.hits(h for h in self.sql.check(text, line_of) if "\\x00" not in h.message)

    def compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        if len(operands) == 2 and isinstance(node.ops[0], ast.Eq | ast.NotEq):
            left, right = operands
            if (
                isinstance(left, ast.Tuple)
                and isinstance(right, ast.Tuple)
                and len(left.elts) == len(right.elts)
            ):
                for pair in zip(left.elts, right.elts, strict=True):
                    self._compare_pair(*pair)
            for operand in operands:  # a record compared whole, not a collection of states
                if isinstance(operand, ast.Tuple | ast.List):
                    self.consumed.add(id(operand))
        for index, operand in enumerate(operands):
            status = self.status_of(operand)
            if status is None:
                continue
            for other_index, other in enumerate(operands):
                if other_index == index:
                    continue
                op = node.ops[max(index, other_index) - 1]
                if isinstance(op, ast.In | ast.NotIn) and other_index < index:
                    continue  # "x" in status: a substring test
                self.status_values(other, "compared with a status", status.folded)

    def _compare_pair(self, left: ast.expr, right: ast.expr) -> None:
        for status_side, other in ((left, right), (right, left)):
            status = self.status_of(status_side)
            if status is not None:
                self.status_values(other, "compared with a status", status.folded)

    def assign(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value
        if value is None:
            return
        for target in targets:
            if _is_status_key(target) and self._of_a_job(target):
                self.status_values(value, "assigned to a status")
            elif isinstance(target, ast.Name) and STATES_NAME.fullmatch(target.id):
                words = [word for word, _ in _literal_values(value)]
                line = value.lineno
                bad = self.lexicon.invented(words, strict=True)
                self.hits(invented_hits(line, bad, target.id))
                self._consume(value)
            if isinstance(target, ast.Subscript) and _is_handlers(target.value):
                key = _string(target.slice)
                if key is not None:
                    self.facts.handlers.append((key, node.lineno))
            if _is_handlers(target) and isinstance(value, ast.Dict):
                self._handler_keys(value)
            if isinstance(target, ast.Name) and target.id in STATUS_ENUM_NAMES:
                self._hand_listed_enum(node, [value])
            if not isinstance(node, ast.AugAssign):
                self.remember(target, value)
            self._field_default(target, value)

    def call(self, node: ast.Call) -> None:
        name = _call_name(node.func)
        for keyword in node.keywords:
            if (
                keyword.arg is not None
                and STATUS_KEY.fullmatch(keyword.arg)
                and (self._of_a_job(node.func) or "job" in keyword.arg)
            ):
                self.status_values(keyword.value, f"passed as {keyword.arg}=")
        for index in TRANSITION_CALLS.get(name, ()):
            if index < len(node.args):
                self.status_values(node.args[index], "a transition target")
        if name in ("apply_transition", "check_transition"):
            self._transition(node, name)
        else:
            self._move_keywords(node)
        if self._creates_a_job(node, name):
            self._created(node)
        elif any(self._creates(arg) for arg in node.args):
            self._created_by_parameters(node)
        if isinstance(node.func, ast.Attribute):
            receiver = node.func.value
            if _is_handlers(receiver) and name in ("update", "setdefault"):
                self._registered_by_call(node, name)
            elif name in _GROWERS and self._states_ref(receiver):
                words = [w for arg in node.args for w in _literal_values(arg)]
                self._extended(words, "the fixture's states, extended,")
                for arg in node.args:
                    self._consume(arg)
        if name in _REGISTER_CALLS and node.args:
            key = _string(node.args[0])
            if key is not None:
                self.facts.handlers.append((key, node.lineno))

    def dict_(self, node: ast.Dict) -> None:
        keys: list[tuple[str, int]] = []
        for key, value in zip(node.keys, node.values, strict=True):
            word = _string(key) if key is not None else None
            if word is None or key is None:
                continue
            keys.append((word, key.lineno))
            if STATUS_KEY.fullmatch(word) and (not self.lexicon.by_carriers or "job" in word):
                self.status_values(value, "keyed as a status")
            elif word == "enum" and isinstance(value, ast.List | ast.Tuple):
                words = [w for w, _ in _literal_values(value)]
                bad = self.lexicon.invented(words, strict=True)
                self.hits(invented_hits(value.lineno, bad, "a JSON Schema enum"))
                self._consume(value)
        words = [word for word, _ in keys]
        if keys and not self.lexicon.by_carriers:  # words elsewhere are no finding then
            line = keys[0][1]
            self.hits(invented_hits(line, self.lexicon.invented(words, strict=False), "a mapping"))
            if any(word in self.lexicon.effects for word in words):
                for word, key_line in keys:
                    if word not in self.lexicon.effects:
                        message = (
                            f"a table keyed by side effects names {word!r}, "
                            "not one of the fixture's"
                        )
                        self.hit(Hit(key_line, EFFECT_HANDLERS, message))

    def collection(self, node: ast.Tuple | ast.List | ast.Set) -> None:
        if id(node) in self.consumed:
            return
        splatted = any(
            isinstance(item, ast.Starred) and self._states_ref(item.value) for item in node.elts
        )
        words = [w for item in node.elts for w in _literal_values(item)]
        if splatted:
            self._extended(words, "the fixture's states, splatted,")
        elif len(words) >= 2 and not self.lexicon.by_carriers:
            bad = self.lexicon.invented([w for w, _ in words], strict=False)
            self.hits(invented_hits(words[0][1], bad, "a collection of states"))

    def bin_op(self, node: ast.BinOp) -> None:
        if not isinstance(node.op, ast.Add | ast.BitOr):
            return
        if isinstance(node.op, ast.BitOr) and self._typed_union(node):
            return
        for states_side, other in ((node.left, node.right), (node.right, node.left)):
            if self._states_ref(states_side):
                self._extended(_literal_values(other), "the fixture's states, extended,")
                self._consume(other)

    def subscript(self, node: ast.Subscript) -> None:
        name = _call_name(node.value)
        if name in _TYPE_BUILDERS and self._typed_union(node):
            return
        if name != "Literal":
            return
        words = _literal_values(node.slice)
        bad = self.lexicon.invented([w for w, _ in words], strict=True)
        self.hits(invented_hits(node.lineno, bad, "a Literal type"))
        if isinstance(node.slice, ast.Tuple):
            self.consumed.add(id(node.slice))

    def _typed_union(self, node: ast.expr) -> bool:
        """A type built from the typed names (`Literal[Status, "x"]`, `Status | Literal["x"]`,
        `Union[Status, Literal["x"]]`): each word it adds must be one of theirs. True when
        `node` is such a type (or part of one already read)."""
        if id(node) in self.typed:
            return True
        parts = _TypeParts()
        parts.read(node)
        status = [n for n in parts.names if self.lexicon.is_status_type(n)]
        actor = [n for n in parts.names if n in self.lexicon.actor_types]
        if not status and not actor:
            return False
        self.typed.update(parts.nodes)
        for word, line in parts.words:
            if status and word not in self.lexicon.states:
                message = f"a type built from {status[0]} widens it with {word!r}, not a state"
                self.hit(Hit(line, STATES_INVENTED, message + " in the fixture"))
            elif actor and not status and word not in self.lexicon.actors:
                message = f"a type built from {actor[0]} widens it with {word!r}, not an actor"
                self.hit(Hit(line, WRONG_ACTOR, message + " of the fixture"))
        return True

    def if_(self, node: ast.If) -> None:
        """A move written as a test and an assignment: `if job.status == <a>: job.status =
        <b>` (a word, or a status type's member) is a move from a to b of that same job."""
        tested = self._status_test(node.test)
        if tested is None:
            return
        holder, sources = tested
        targets: list[str] = []
        line = node.lineno
        for statement in node.body:
            if not isinstance(statement, ast.Assign | ast.AnnAssign):
                continue
            assigned = (
                statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            )
            for target in assigned:
                if (
                    isinstance(target, ast.Attribute | ast.Subscript)
                    and _is_status_key(target)
                    and ast.unparse(target) == holder
                    and statement.value is not None
                ):
                    targets += self._member_words(statement.value)
                    line = statement.lineno
        if targets:
            for code, message in self.lexicon.move_problems(sources, targets, None):
                self.hit(Hit(line, code, message))

    def _status_test(self, test: ast.expr) -> tuple[str, list[str]] | None:
        """(the status expression, the states it is tested equal to), or None."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return next((t for v in test.values if (t := self._status_test(v))), None)
        if not isinstance(test, ast.Compare) or len(test.ops) != 1:
            return None
        if not isinstance(test.ops[0], ast.Eq | ast.In):
            return None
        left, right = test.left, test.comparators[0]
        if not isinstance(left, ast.Attribute | ast.Subscript) or not _is_status_key(left):
            return None
        if self.status_of(left) is None:
            return None
        words = [w for w in self._member_words(right) if w in self.lexicon.states]
        return (ast.unparse(left), words) if words else None

    def _member_words(self, value: ast.expr) -> list[str]:
        """The words a value names: literals, and a status type's members (`JobStatus.X`)."""
        words = [w for w, _ in self.values(value)]
        items = value.elts if isinstance(value, ast.Tuple | ast.List | ast.Set) else [value]
        for item in items:
            if isinstance(item, ast.Attribute) and self.lexicon.is_status_type(
                _call_name(item.value)
            ):
                words.append(item.attr.lower())
        return words

    def match(self, node: ast.Match) -> None:
        status = self.status_of(node.subject)
        if status is None:
            return
        for case in node.cases:
            for pattern in ast.walk(case.pattern):
                if isinstance(pattern, ast.MatchValue):
                    self.status_values(pattern.value, "matched as a status", status.folded)

    def class_def(self, node: ast.ClassDef) -> bool:
        bases = [ast.unparse(b) for b in node.bases]
        members: Values = []
        for statement in node.body:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target, value = statement.targets[0], statement.value
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                target, value = statement.target, statement.value
            else:
                continue
            if not isinstance(target, ast.Name):
                continue
            if (
                isinstance(value, ast.Call)
                and _call_name(value.func) == "auto"
                and any(b.endswith("StrEnum") for b in bases)
            ):
                members.append((target.id.lower(), statement.lineno))
            elif isinstance(value, ast.Constant) and isinstance(value.value, str):
                members.append((value.value, statement.lineno))
        is_enum = any(_ENUM_BASE.fullmatch(b.rpartition(".")[2]) for b in bases)
        if node.name in self.lexicon.holders:
            self._holder(node)
        if self.lexicon.by_carriers:
            if self.lexicon.carries(node.name):
                self._carrier(node, members)
            self.classes_in.append(node.name)
            self.children(node, type(node))
            self.classes_in.pop()
            return False
        strict = is_enum or bool(STATES_NAME.fullmatch(node.name.lower()))
        bad = set(self.lexicon.invented([w for w, _ in members], strict=strict))
        kind = "the enum" if is_enum else "the class"
        for word, line in members:
            if word in bad:
                self.hits(invented_hits(line, [word], f"{kind} {node.name}"))
                bad.discard(word)
        if is_enum and node.name in STATUS_ENUM_NAMES:
            self._hand_listed_enum(node, list(node.body))
        if any(_call_name(d) == HANDLER_DECORATOR for d in node.decorator_list):
            self.facts.handlers.append((node.name, node.lineno))
        if not self.lexicon.job_models:
            return True
        self.classes_in.append(node.name)  # a configured job model's status field is read
        self.children(node, type(node))
        self.classes_in.pop()
        return False

    def _carrier(self, node: ast.ClassDef, members: Values) -> None:
        """A configured carrier of the states (the status enum): exactly the fixture's states;
        it is the repository's STATES definition."""
        self.facts.states_defined = True
        if self.generated:
            return
        words = [w for w, _ in members]
        for word, line in members:
            if word not in self.lexicon.states:
                self.hit(Hit(line, STATES_DRIFT, f"{node.name} names {word!r}, not a state"))
        missing = self.lexicon.missing(words)
        if missing:
            message = f"{node.name} lacks fixture state(s) {', '.join(sorted(missing))}"
            self.hit(Hit(node.lineno, STATES_DRIFT, message))

    def _holder(self, node: ast.ClassDef) -> None:
        """A class whose methods act on jobs in one state: each move one of its methods makes
        (its own, or one it inherits from a class of this module) leaves that state."""
        source = self.lexicon.holders[node.name]
        methods: dict[str, tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for owner in self._lineage(node):
            for item in owner.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    methods.setdefault(item.name, (owner.name, item))
        for name, (owner_name, method) in methods.items():
            inherited = f" (from {owner_name})" if owner_name != node.name else ""
            where = f"{node.name}.{name}{inherited}"
            for call in ast.walk(method):
                if not isinstance(call, ast.Call):
                    continue
                target = self._move_target(call)
                if target is None:
                    continue
                for code, message in self.lexicon.move_problems([source], [target], None):
                    self.hit(Hit(call.lineno, code, f"{where}: {message}"))

    def _lineage(self, node: ast.ClassDef) -> list[ast.ClassDef]:
        """The class and the bases this module defines, nearest first."""
        chain = [node]
        for base in node.bases:
            parent = self.classes.get(_call_name(base))
            if parent is not None and parent not in chain:
                chain += [c for c in self._lineage(parent) if c not in chain]
        return chain

    def _move_target(self, call: ast.Call) -> str | None:
        """The state a call puts a job in: a configured move, or `set_status(<state>)` with a
        word or a member of a status type (`JobStatus.QUEUED`)."""
        name = _call_name(call.func)
        if name in self.lexicon.moves:
            return self.lexicon.moves[name]
        if name != "set_status" or not call.args:
            return None
        first = call.args[0]
        word = _string(first)
        if (
            word is None
            and isinstance(first, ast.Attribute)
            and self.lexicon.is_status_type(_call_name(first.value))
        ):
            word = first.attr.lower()
        return word if word in self.lexicon.states else None

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> bool:
        if not isinstance(node, ast.Lambda):
            if any(_call_name(d) == HANDLER_DECORATOR for d in node.decorator_list):
                self.facts.handlers.append((node.name, node.lineno))
            arguments = node.args
            positional = [*arguments.posonlyargs, *arguments.args]
            defaults = list(
                zip(
                    positional[len(positional) - len(arguments.defaults) :],
                    arguments.defaults,
                    strict=True,
                )
            )
            defaults += [
                (a, d)
                for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
                if d is not None
            ]
            for argument, default in defaults:
                if STATUS_KEY.fullmatch(argument.arg):
                    self.status_values(default, f"the default of {argument.arg}")
        self.scopes.append({})
        self.mappings.append({})
        self.children(node, type(node))
        self.scopes.pop()
        self.mappings.pop()
        return False

    # -- helpers --------------------------------------------------------------------------------

    def _of_a_job(self, node: ast.AST) -> bool:
        """Whether a status there is a job's. Without carriers, any status is; with them, one
        named for a job (`job.status`, `job_status`, `jobs[0]["status"]`, `finish_job(status=)`),
        of a configured class (`self.status` in a holder or a carrier, `Job(status=...)`,
        `Job.objects.filter(status=...)`), or of the lifecycle's own names."""
        if not self.lexicon.by_carriers:
            return True
        text = ast.unparse(node).lower()
        if "job" in text:
            return True
        carriers = (*self.lexicon.holders, *(self.lexicon.carriers or ()), *self.lexicon.job_models)
        named = {name.lower() for name in carriers}
        if self.classes_in and self.classes_in[-1].lower() in named and "self" in text:
            return True
        return any(name in text for name in named)

    def status_of(self, node: ast.AST) -> _Status | None:
        """Whether `node` holds a status (and whether its case was changed on the way)."""
        if self.lexicon.by_carriers and not self._of_a_job(node):
            return None
        return self._status_of(node)

    def _status_of(self, node: ast.AST) -> _Status | None:
        if isinstance(node, ast.Name):
            return _Status() if STATUS_NAME.fullmatch(node.id) else None
        if isinstance(node, ast.Attribute):
            if STATUS_NAME.fullmatch(node.attr):
                return _Status()
            return self._status_of(node.value) if node.attr in ("value", "name") else None
        if isinstance(node, ast.Subscript):
            key = _string(node.slice)
            return _Status() if key is not None and STATUS_NAME.fullmatch(key) else None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                if func.attr == "get" and node.args:
                    key = _string(node.args[0])
                    return _Status() if key is not None and STATUS_NAME.fullmatch(key) else None
                if func.attr in _FOLDS or func.attr in _TRIMS:
                    inner = self._status_of(func.value)
                    if inner is None:
                        return None
                    return _Status(folded=inner.folded or func.attr in _FOLDS)
            if isinstance(func, ast.Name):
                if func.id == "getattr" and len(node.args) >= 2:
                    key = _string(node.args[1])
                    return _Status() if key is not None and STATUS_NAME.fullmatch(key) else None
                if func.id == "str" and len(node.args) == 1:
                    return self._status_of(node.args[0])
        return None

    def _states_assignment(self, node: ast.stmt) -> bool:
        """A module-level STATES: the fixture's states, listed or derived (states.py)."""
        target: ast.expr | None
        if isinstance(node, ast.Assign):
            target = next(
                (t for t in node.targets if isinstance(t, ast.Name) and t.id == "STATES"), None
            )
            value: ast.expr | None = node.value
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            target, value = node.target, node.value
        else:
            return False
        if not (isinstance(target, ast.Name) and target.id == "STATES") or value is None:
            return False
        self.facts.states_defined = True
        if not self.generated:
            self.hits(check_states(value, node.lineno, self.lexicon.ordered_states))
        for child in ast.walk(value):  # the aliases and SQL rules still read its strings
            if isinstance(child, ast.Constant):
                self.constant(child)
        return True

    def _states_ref(self, node: ast.AST) -> bool:
        """The fixture's states by name; where carriers are configured, only a module-level
        name (`STATES`, `TERMINAL_STATES`), not any object's own `states`."""
        if self.lexicon.by_carriers and not isinstance(node, ast.Name):
            return False
        return _is_states_ref(node)

    def _extended(self, words: Values, what: str) -> None:
        for word, line in words:
            if word not in self.lexicon.states:
                self.hits(invented_hits(line, [word], what))

    def _transition(self, node: ast.Call, name: str) -> None:
        arguments = _arguments(
            node, ("job" if name == "apply_transition" else "from_status", "to_status", "actor")
        )
        source = None if name == "apply_transition" else self._words(arguments.get("from_status"))
        target = self._words(arguments.get("to_status"))
        actor_node = arguments.get("actor")
        if actor_node is None:
            actor = self.lexicon.default_actor if name == "apply_transition" else None
        else:
            actor_words = self._words(actor_node)
            actor = actor_words[0] if actor_words and len(actor_words) == 1 else None
        self._move(node.lineno, source, target, actor)

    def _move_keywords(self, node: ast.Call) -> None:
        keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
        present = [k for k in ("from_status", "to_status", "actor") if k in keywords]
        if len(present) < 2:
            return
        source = self._words(keywords.get("from_status"))
        target = self._words(keywords.get("to_status"))
        actor_words = self._words(keywords.get("actor"))
        actor = actor_words[0] if actor_words and len(actor_words) == 1 else None
        if source is None and target is None:
            return
        self._move(node.lineno, source, target, actor)

    def _move(
        self, line: int, source: list[str] | None, target: list[str] | None, actor: str | None
    ) -> None:
        for code, message in self.lexicon.move_problems(source, target, actor):
            self.hit(Hit(line, code, message))

    def _words(self, node: ast.AST | None) -> list[str] | None:
        """The literal words of a value, or None where it is not a literal."""
        if node is None:
            return None
        words = [w for w, _ in self.values(node)]
        return words or None

    def _created(self, node: ast.Call) -> None:
        for keyword in node.keywords:
            if keyword.arg in self.lexicon.columns:
                self._initial(keyword.value)
        self._created_by_parameters(node)

    def _created_by_parameters(self, node: ast.Call) -> None:
        """A job's parameters handed to the query or call that creates it: a dict (literal,
        or a name given one in this scope) or `dict(...)`, whose status is the initial one."""
        for arg in (*node.args, *(k.value for k in node.keywords if k.arg is None)):
            mapping: ast.expr | None = arg
            if isinstance(arg, ast.Name):
                mapping = next((m[arg.id] for m in reversed(self.mappings) if arg.id in m), None)
            if isinstance(mapping, ast.Dict):
                for key, value in zip(mapping.keys, mapping.values, strict=True):
                    if key is not None and _string(key) in self.lexicon.columns:
                        self._initial(value)
            elif isinstance(mapping, ast.Call) and _call_name(mapping.func) == "dict":
                for keyword in mapping.keywords:
                    if keyword.arg in self.lexicon.columns:
                        self._initial(keyword.value)

    def _creates_a_job(self, node: ast.Call, name: str) -> bool:
        """A call that creates a job: named for it (`create_job`, `enqueue_jobs`), or a job
        model built (below). With job models configured, `NewJob` is one only when named."""
        guessed = bool(self.lexicon.job_models) and name.lower() == "newjob"
        if _CREATE_CALL.fullmatch(name) and not guessed:
            return True
        return self._constructs_a_job(node, name)

    def _constructs_a_job(self, node: ast.Call, name: str) -> bool:
        """With job models or carriers configured: a job model built (`ExportJob(...)`) or
        created through its manager (`ExportJob.objects.create(...)`), and a model's status
        field, whose default is the state a job is created in (`status =
        CharField(default=...)`). The models are the configured `job-models`, else any class
        whose name ends in Job."""
        if not self._reads_models:
            return False
        if isinstance(node.func, ast.Name):
            return self.lexicon.is_job_model(name)
        if name not in ("create", "get_or_create") or not isinstance(node.func, ast.Attribute):
            return False
        owner = ast.unparse(node.func.value)  # ExportJob.objects, models.ExportJob.objects
        if self.lexicon.job_models:
            return any(part in self.lexicon.job_models for part in owner.split("."))
        return JOB_MODEL.match(owner) is not None

    @property
    def _reads_models(self) -> bool:
        return self.lexicon.by_carriers or bool(self.lexicon.job_models)

    def _field_default(self, target: ast.expr, value: ast.expr) -> None:
        if (
            self._reads_models
            and self.classes_in
            and isinstance(target, ast.Name)
            and target.id in self.lexicon.columns
            and self.lexicon.is_job_model(self.classes_in[-1])
            and isinstance(value, ast.Call)
        ):
            for keyword in value.keywords:
                if keyword.arg in ("default", "server_default"):
                    self._initial(keyword.value, members=True)

    def _initial(self, value: ast.expr, *, members: bool = False) -> None:
        """The words `value` gives a new job's status must be the initial state; `members`:
        a status type's member counts as its word (`JobStatus.STARTED`), as in a model's
        default. Elsewhere a member is left to the type checker: a queue that creates jobs in
        several entry states (rq's `create_job(status=JobStatus.SCHEDULED)`) names them so,
        and one initial state in the fixture cannot say it."""
        words = self.values(value)
        if (
            members
            and not words
            and isinstance(value, ast.Attribute)
            and self.lexicon.is_status_type(_call_name(value.value))
        ):
            words = [(value.attr.lower(), value.lineno)]
        for word, line in words:
            if word in self.lexicon.states and word != self.lexicon.initial:
                message = f"a job is created in {self.lexicon.initial!r}, not {word!r}"
                self.hit(Hit(line, NOT_INITIAL, message))

    def _creates(self, node: ast.expr) -> bool:
        """A query that creates a job: named for it (`session.row("create_job", params)`), or
        SQL that inserts into a job table (`job-tables`, else jobs, job or *_jobs)."""
        text = _string(node)
        if text is None:
            return False
        if _CREATE_CALL.fullmatch(text) is not None:
            return True
        return any(self.lexicon.is_job_table(m.group(1)) for m in _INSERT_INTO.finditer(text))

    def _registered_by_call(self, node: ast.Call, name: str) -> None:
        if name == "setdefault" and node.args:
            key = _string(node.args[0])
            if key is not None:
                self.facts.handlers.append((key, node.lineno))
            return
        for arg in node.args:
            if isinstance(arg, ast.Dict):
                self._handler_keys(arg)
        for keyword in node.keywords:
            if keyword.arg is not None:
                self.facts.handlers.append((keyword.arg, node.lineno))

    def _handler_keys(self, table: ast.Dict) -> None:
        for key in table.keys:
            word = _string(key) if key is not None else None
            if word is not None and key is not None:
                self.facts.handlers.append((word, key.lineno))

    def _hand_listed_enum(self, node: ast.stmt, body: Iterable[ast.AST]) -> None:
        """An API's status enum built from the fixture, never listed by hand."""
        if self.generated or self.lexicon.by_carriers:
            return
        listed = sorted(
            {
                c.value
                for part in body
                for c in ast.walk(part)
                if isinstance(c, ast.Constant)
                and isinstance(c.value, str)
                and c.value in self.lexicon.states
            }
        )
        if listed:
            self.hit(
                Hit(
                    node.lineno,
                    API_ENUM,
                    f"the status enum lists {', '.join(listed)} by hand; "
                    "build it from the fixture's states",
                )
            )


class _TypeParts:
    """What a type expression is built from: the names it refers to, the words its `Literal`s
    list, and its nodes (so that each is read once, as part of the whole)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.words: Values = []
        self.nodes: set[int] = set()

    def read(self, node: ast.expr) -> None:
        self.nodes.add(id(node))
        if isinstance(node, ast.Name | ast.Attribute):
            self.names.append(_call_name(node))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            self.read(node.left)
            self.read(node.right)
        elif isinstance(node, ast.Subscript) and _call_name(node.value) in _TYPE_BUILDERS:
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if isinstance(node.slice, ast.Tuple):
                self.nodes.add(id(node.slice))
            literal = _call_name(node.value) == "Literal"
            for item in items:
                if literal and isinstance(item, ast.Constant) and isinstance(item.value, str):
                    self.words.append((item.value, item.lineno))
                else:
                    self.read(item)


class _LazyLines:
    """Lines of offsets in a string constant, worked out only when a rule hits.

    A string on one line is all on that line; a string over several lines (triple-quoted, or
    parts concatenated across lines) is mapped by reading its tokens, so each offset gets the
    line of the part it comes from.
    """

    def __init__(self, run: _Run, node: ast.Constant) -> None:
        self.run = run
        self.node = node
        self.map: LineOf | None = None

    def __call__(self, offset: int) -> int:
        node = self.node
        if node.end_lineno is None or node.end_lineno == node.lineno:
            return node.lineno
        if self.map is None:
            self.map = _string_lines(self.run.text, node)
        return self.map(offset)


def _string_lines(text: str, node: ast.Constant) -> LineOf:
    value = str(node.value)
    end_line = node.end_lineno or node.lineno
    parts = _string_parts(text, node, len(value))
    if not parts:
        fallback = lines_of(value, node.lineno)
        return lambda offset: min(fallback(offset), end_line)

    def line_of(offset: int) -> int:
        start, first, last = next(p for p in reversed(parts) if p[0] <= offset)
        return min(first + value.count("\n", start, offset), last)

    return line_of


def _string_parts(text: str, node: ast.Constant, length: int) -> list[tuple[int, int, int]]:
    """(offset in the value, first line, last line) of each literal a string constant is
    written as, read from its tokens; none when its text does not spell the value."""
    source = text.split("\n")[node.lineno - 1 : node.end_lineno]
    if not source:
        return []
    # The column counts UTF-8 bytes. In an open parenthesis, so that indentation and comments
    # between the parts are no matter (the tokens are read only as far as the string goes).
    first = source[0].encode()[node.col_offset :].decode()
    snippet = "(" + "\n".join([first, *source[1:]])
    parts: list[tuple[int, int, int]] = []
    offset = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(snippet).readline):
            if token.type != tokenize.STRING:
                continue
            parts.append((offset, node.lineno + token.start[0] - 1, node.lineno + token.end[0] - 1))
            offset += len(ast.literal_eval(token.string))
            if offset == length:
                return parts  # the string is whole: what follows on its last line is not of it
    except (tokenize.TokenError, SyntaxError, ValueError):
        return []
    return []


_DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_LONE_CR = re.compile("\r(?!\n)")
_NEWLINE = re.compile("\n")


def _line_starts(text: str) -> list[int]:
    """The offset each line of `text` starts at (the first line's is 0)."""
    return [0, *(match.end() for match in _NEWLINE.finditer(text))]


_Handler = Callable[[_Run, Any], bool | None]
_HANDLERS: dict[type[ast.AST], _Handler] = {
    ast.Constant: _Run.constant,
    ast.JoinedStr: _Run.joined_str,
    ast.Compare: _Run.compare,
    ast.Assign: _Run.assign,
    ast.AnnAssign: _Run.assign,
    ast.AugAssign: _Run.assign,
    ast.Call: _Run.call,
    ast.Dict: _Run.dict_,
    ast.Tuple: _Run.collection,
    ast.List: _Run.collection,
    ast.Set: _Run.collection,
    ast.BinOp: _Run.bin_op,
    ast.Subscript: _Run.subscript,
    ast.Match: _Run.match,
    ast.If: _Run.if_,
    ast.ClassDef: _Run.class_def,
    ast.FunctionDef: _Run.function,
    ast.AsyncFunctionDef: _Run.function,
    ast.Lambda: _Run.function,
}


def _literal_values(node: ast.AST) -> Values:
    """String constants that *are* the value: a literal, or the items of a literal collection."""
    if isinstance(node, ast.Constant):
        return [(node.value, node.lineno)] if isinstance(node.value, str) else []
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [v for item in node.elts for v in _literal_values(item)]
    if isinstance(node, ast.IfExp):
        return _literal_values(node.body) + _literal_values(node.orelse)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _WRAPPERS
        and len(node.args) == 1
    ):
        return _literal_values(node.args[0])
    return []


_INSERT_INTO = re.compile(r"\bINSERT\s+INTO\s+([\w.\"]+)\s*\(", re.I)


def _string(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _call_name(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Call):
        return _call_name(func.func)
    return ""


def _is_status_key(node: ast.AST) -> bool:
    """A variable, attribute or item a status is stored in: status, job.status, row["status"]."""
    if isinstance(node, ast.Name):
        return bool(STATUS_KEY.fullmatch(node.id))
    if isinstance(node, ast.Attribute):
        return bool(STATUS_KEY.fullmatch(node.attr))
    if isinstance(node, ast.Subscript):
        key = _string(node.slice)
        return key is not None and bool(STATUS_KEY.fullmatch(key))
    return False


def _is_handlers(node: ast.AST) -> bool:
    name = (
        node.id
        if isinstance(node, ast.Name)
        else node.attr
        if isinstance(node, ast.Attribute)
        else ""
    )
    return bool(_HANDLERS_NAME.fullmatch(name))


def _is_states_ref(node: ast.AST) -> bool:
    """An expression that names the fixture's states: STATES, graph.states, list(TERMINAL)..."""
    if isinstance(node, ast.Name):
        return bool(_STATES_REF.fullmatch(node.id))
    if isinstance(node, ast.Attribute):
        return bool(_STATES_REF.fullmatch(node.attr))
    if isinstance(node, ast.Call) and _call_name(node.func) in _WRAPPERS and len(node.args) == 1:
        return _is_states_ref(node.args[0])
    if isinstance(node, ast.Subscript):
        return _is_states_ref(node.value)
    return False


def _arguments(node: ast.Call, names: tuple[str, ...]) -> dict[str, ast.expr]:
    found = {name: arg for name, arg in zip(names, node.args, strict=False)}
    for keyword in node.keywords:
        if keyword.arg in names:
            found[keyword.arg] = keyword.value
    return found
