"""The gate's Python rules, construct by construct: each finding's line, code and message, the
side-effect handlers gathered, which statements are read at all, and the forms that are left
alone because they name no status, so that a rule reporting too much is noticed as surely as a
rule gone quiet."""

from __future__ import annotations

import ast
import textwrap

import pytest

from conftest import STARTER_FIXTURE
from frozen_lifecycle.gate import python_rules
from frozen_lifecycle.gate.lexicon import Facts, Lexicon
from frozen_lifecycle.gate.python_rules import PythonRules
from frozen_lifecycle.graph import load_graph

GRAPH = load_graph(STARTER_FIXTURE)

Found = list[tuple[int, str, str]]


def facts_of(source: str, *, generated: bool = False) -> Facts:
    text = textwrap.dedent(source).lstrip("\n")
    return PythonRules(Lexicon.of(GRAPH)).check(ast.parse(text), text, generated=generated)


def findings(source: str, *, generated: bool = False) -> Found:
    return sorted((h.line, h.code, h.message) for h in facts_of(source, generated=generated).hits)


def handlers(source: str) -> list[tuple[str, int]]:
    return facts_of(source).handlers


def unknown(word: str, how: str) -> tuple[str, str]:
    return "unknown-status", f"{word!r} {how} is not a state in the fixture"


def invented(what: str, word: str) -> tuple[str, str]:
    return "states-invented", f"{what} names {word!r}, not a state in the fixture"


COMPARED = "compared with a status"


# -- which text the rules read --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "JOB.STATUS",
        "the State",
        "x = TERMINAL",
        "HANDLERS = {}",
        "@side_Effect",
        "check_Transition",
        "ACTOR = x",
        "QUEUED",
        "'Retrying'",
        "Worker",
        "DELETE_TEMP_OBJECT",
    ],
)
def test_a_text_that_names_a_word_a_rule_reads_may_hold_a_finding(text: str) -> None:
    """The names the rules follow, and the fixture's states, aliases, actors and side effects,
    in any case."""
    assert PythonRules(Lexicon.of(GRAPH)).may_find(text)


@pytest.mark.parametrize("text", ["", "x = 1", "import os\nprint(os.getcwd())\n", "stat ate"])
def test_a_text_without_such_a_word_holds_none(text: str) -> None:
    assert not PythonRules(Lexicon.of(GRAPH)).may_find(text)


def statements_read(source: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The lines of the statements whose parts the rules read."""
    read: list[int] = []
    children = python_rules._Run.children

    def recording(run: python_rules._Run, node: ast.AST, kind: type[ast.AST]) -> None:
        if isinstance(node, ast.stmt):
            read.append(node.lineno)
        children(run, node, kind)

    monkeypatch.setattr(python_rules._Run, "children", recording)
    facts_of(source)
    return sorted(read)


READ_OR_NOT = """
    import os
    PARKED = "held"

    def double(x):
        return 2 * x

    def check(job):
        return job.status == PARKED

    class Plain:
        def triple(self, x):
            return 3 * x

        def check(self, job):
            return job.status == PARKED

    WHERE = os.getcwd()
    """


def test_only_statements_that_name_a_word_a_rule_reads_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert statements_read(READ_OR_NOT, monkeypatch) == [7, 8, 10, 14, 15]
    assert findings(READ_OR_NOT) == [(2, *unknown("held", COMPARED))]


def test_a_statement_is_read_by_all_its_lines_and_its_decorators() -> None:
    source = """
        import os
        ok = (
            job.status == "held"
        )

        @side_effect_handler
        def notify_slack(ctx, job, item):
            pass
        """
    assert findings(source) == [(3, *unknown("held", COMPARED))]
    assert handlers(source) == [("notify_slack", 7)]


def test_a_word_found_twice_on_a_line_is_one_finding() -> None:
    assert findings('status = "held"\nok = job.status == "held" or job.state == "held"\n') == [
        (1, *unknown("held", "assigned to a status")),
        (2, *unknown("held", COMPARED)),
    ]


def test_a_statement_on_a_last_line_without_a_line_break_is_read() -> None:
    text = 'import os\nok = job.status == "held"'
    facts = PythonRules(Lexicon.of(GRAPH)).check(ast.parse(text), text)
    assert [(h.line, h.message) for h in facts.hits] == [(2, unknown("held", COMPARED)[1])]


@pytest.mark.parametrize(
    "text",
    [
        'import os\rok = job.status == "held"\n',
        "# \u0130" * 30 + '\nok = job.status == "held"',
    ],
    ids=["a lone carriage return", "characters that lower-case to two"],
)
def test_a_module_whose_lines_cannot_be_found_in_its_text_is_read_whole(text: str) -> None:
    facts = PythonRules(Lexicon.of(GRAPH)).check(ast.parse(text), text)
    assert [(h.line, h.message) for h in facts.hits] == [(2, unknown("held", COMPARED)[1])]


def test_the_parts_of_a_comprehension_are_read() -> None:
    source = """
        import os

        def f(jobs):
            return [j for j in jobs if j.status == "held"]
        """
    assert findings(source) == [(4, *unknown("held", COMPARED))]


def test_a_tree_without_its_text_is_read_whole() -> None:
    tree = ast.parse('import os\nok = job.status == "held"\n')
    facts = PythonRules(Lexicon.of(GRAPH)).check(tree)
    assert [(h.line, h.message) for h in facts.hits] == [(2, unknown("held", COMPARED)[1])]


# -- statuses reached through names ---------------------------------------------------------------


def test_a_status_is_known_by_its_name_key_or_attribute_through_the_calls_that_keep_it() -> None:
    """Each line names `status_row`, so that each is read."""
    source = """
        ok = job.status.value == "held"
        ok = job.state.name == "held"
        ok = job.status.label == "held"
        ok = job.get("state") == "held"
        ok = status_row.get("kind") == "held"
        ok = status_row.get() == "held"
        ok = status_row.get(key) == "held"
        ok = status_row[key] == "held"
        ok = status_row["kind"] == "held"
        ok = getattr(job, "state") == "held"
        ok = getattr(status_row, "kind") == "held"
        ok = getattr(status_row) == "held"
        ok = getattr(status_row, name) == "held"
        ok = str(job.status, "utf-8") == "held"
        ok = str(status_row.kind) == "held"
        ok = job.status.strip().lower() == "Queued"
        ok = job.status.lower().strip() == "Queued"
        ok = job.status.strip() == "Queued"
        ok = status_row.kind.lower() == "held"
        ok = job.status.split() == "held"
        ok = status_code() == "held"
        ok = str(status) == "held"
        ok = status_row.pop("status") == "held"
        ok = lookup(status_row, "status") == "held"
        """
    assert findings(source) == [
        (1, *unknown("held", COMPARED)),
        (2, *unknown("held", COMPARED)),
        (4, *unknown("held", COMPARED)),
        (10, *unknown("held", COMPARED)),
        (18, *unknown("Queued", COMPARED)),
        (22, *unknown("held", COMPARED)),
    ]


def test_words_reach_a_status_through_either_arm_and_through_names_in_calls() -> None:
    source = """
        PARKED = ("held",)
        ok = job.status == ("stalled" if fast else "paused")
        ok = job.status == (override or "blocked")
        ok = job.status in frozenset(PARKED)
        ok = job.status in frozenset(OTHER, "x")
        ok = job.status in wrap(OTHER)
        ok = job.status == unknown_name
        OTHER = ("aborted",)
        """
    assert findings(source) == [
        (1, *unknown("held", COMPARED)),
        (2, *unknown("paused", COMPARED)),
        (2, *unknown("stalled", COMPARED)),
        (3, *unknown("blocked", COMPARED)),
    ]


def test_module_constants_are_gathered_plain_or_annotated_before_anything_is_read() -> None:
    source = """
        import os
        PARKED: str = "held"
        SHOWN: str
        x.WAITING = "stalled"
        BOTH = ALSO = "blocked"

        def f(job):
            return job.status in (PARKED, SHOWN, WAITING, BOTH, ALSO)
        """
    assert findings(source) == [(2, *unknown("held", COMPARED))]


def test_a_module_constant_keeps_the_words_it_was_given_whatever_is_assigned_after() -> None:
    source = """
        PARKED = "held"
        PARKED = state_of()

        def f(job):
            return job.status == PARKED
        """
    assert findings(source) == [(1, *unknown("held", COMPARED))]


def test_a_local_is_forgotten_when_given_something_else_and_when_its_function_ends() -> None:
    assert findings('def f(job):\n    word = "held"\n    word = job.other_state()\n') == []
    assert (
        findings(
            """
            def f(job):
                word = "held"
                word = job.other_state()
                return job.status == word
            """
        )
        == []
    )
    assert (
        findings(
            """
            def f():
                word = "held"

            def g(job):
                return job.status == word
            """
        )
        == []
    )
    source = """
        def outer(job):
            def inner(job):
                word = "held"
                return job.status == word

            return JobFilter(status=word)

        def again(job):
            def inner(job):
                word = "stalled"
                word = job.other_state()
                return job.status == word

            result = job.other_state()
            return job.status == "paused"
        """
    assert findings(source) == [
        (3, *unknown("held", COMPARED)),
        (15, *unknown("paused", COMPARED)),
    ]


def test_a_local_hides_the_module_constant_of_its_name() -> None:
    source = """
        PARKED = "held"

        def f(job):
            PARKED = "queued"
            return job.status == PARKED
        """
    assert findings(source) == []


def test_a_module_constant_may_be_either_arm_of_a_condition() -> None:
    source = """
        PARKED = "held" if fast else "stalled"

        def f(job):
            return job.status == PARKED
        """
    assert findings(source) == [
        (1, *unknown("held", COMPARED)),
        (1, *unknown("stalled", COMPARED)),
    ]


def test_a_local_given_in_place_keeps_its_words() -> None:
    source = """
        def f(job):
            word = "held"
            word += suffix
            return job.status == word
        """
    assert findings(source) == [(2, *unknown("held", COMPARED))]


# -- comparisons ----------------------------------------------------------------------------------


def test_a_comparison_reads_the_side_its_operator_compares_with_the_status() -> None:
    source = """
        ok = "x" in job.status in ("held", "queued")
        ok = "y" in job.status == "paused"
        ok = job.status == "aborted" == other
        ok = job.status not in ["blocked", "queued"]
        ok = job.status in frozenset(["stalled", "queued"])
        ok = "held" not in job.status
        """
    assert findings(source) == [
        (1, *unknown("held", COMPARED)),
        (2, *unknown("paused", COMPARED)),
        (3, *unknown("aborted", COMPARED)),
        (4, *unknown("blocked", COMPARED)),
        (5, *unknown("stalled", COMPARED)),
    ]


def test_tuples_are_compared_element_wise_only_when_equal_in_length() -> None:
    source = """
        ok = ("held", None) == (job.status, x)
        ok = (job.status, a) != ("stalled", b)
        ok = (job.status, a) == ("blocked",)
        ok = (job.status, a) < ("paused", b)
        ok = (job.phase, job.status) == ("blocked", "queued")
        ok = (job.status.lower(), x) == ("QUEUED", y)
        """
    assert findings(source) == [
        (1, *unknown("held", COMPARED)),
        (2, *unknown("stalled", COMPARED)),
    ]


# -- assignments, keywords, defaults --------------------------------------------------------------


def test_a_status_assigned_keyed_or_passed_is_read() -> None:
    source = """
        job.status = "held"
        job.status = "Queued"
        row["job_status"] = ("queued", "paused")
        row["kind"] = "held"
        row[key] = "held"
        state = "held"
        f(to_status="stalled", kind="held", **extra)
        payload = {"status": "blocked", 1: "x", **more}
        first_state, second = "held", "queued"
        """
    assert findings(source) == [
        (1, *unknown("held", "assigned to a status")),
        (2, *unknown("Queued", "assigned to a status")),
        (3, *unknown("paused", "assigned to a status")),
        (7, *unknown("stalled", "passed as to_status=")),
        (8, *unknown("blocked", "keyed as a status")),
    ]


def test_the_defaults_of_status_parameters_are_read_each_with_its_own_parameter() -> None:
    source = """
        def f(
            a,
            status_a,
            status="held",
            /,
            to_status="paused",
            *,
            kw_status,
            other_status=None,
            job_status="stalled",
            note="blocked",
        ):
            pass

        def g(status, note="held"):
            pass

        async def h(status="aborted"):
            pass
        """
    assert findings(source) == [
        (4, *unknown("held", "the default of status")),
        (6, *unknown("paused", "the default of to_status")),
        (10, *unknown("stalled", "the default of job_status")),
        (18, *unknown("aborted", "the default of status")),
    ]


def test_a_lambda_is_read_as_a_function() -> None:
    assert findings('check = lambda job: job.status == "held"') == [(1, *unknown("held", COMPARED))]


def test_a_match_on_a_status_reads_every_value_of_every_case() -> None:
    source = """
        match status:
            case "held" | "queued":
                pass
            case Job(kind="stalled"):
                pass
        match job.kind:
            case "held":
                pass
        match job.status.lower():
            case "QUEUED":
                pass
        """
    assert findings(source) == [
        (2, *unknown("held", "matched as a status")),
        (4, *unknown("stalled", "matched as a status")),
    ]


# -- transitions, moves, new jobs -----------------------------------------------------------------


def test_a_transition_reads_its_arguments_by_position_or_keyword() -> None:
    source = """
        can_transition("held")
        apply_transition("job_1", "queued", "user")
        apply_transition(job, "canceled", actor=who)
        check_transition("running", "canceled", ("worker", "user"))
        check_transition("running", "canceled", ("worker",))
        apply_transition(job, to_status="queued")
        check_transition(from_status="succeeded", to_status="running")
        other_transition("failed", "queued", "robot")
        """
    assert findings(source) == [
        (1, *unknown("held", "a transition target")),
        (2, "undeclared-edge", "no edge of the fixture leads to queued"),
        (5, "wrong-actor", "running -> canceled belongs to actor user, not worker"),
        (6, "undeclared-edge", "no edge of the fixture leads to queued"),
        (7, "undeclared-edge", "succeeded -> running is not an edge of the fixture"),
    ]


def test_a_move_needs_two_of_its_keywords_and_a_literal_state() -> None:
    source = """
        Move(to_status="queued")
        Move(to_status="queued", actor=who)
        Move(**extra, to_status="queued", actor="user")
        Move(from_status=a, to_status=b, actor="robot")
        Move(from_status="succeeded", actor="worker")
        Move(from_status="queued", to_status="running", actor=("user", "worker"))
        Move(from_status="queued", to_status="running", actor=("user",))
        """
    assert findings(source) == [
        (2, "undeclared-edge", "no edge of the fixture leads to queued"),
        (3, "undeclared-edge", "no edge of the fixture leads to queued"),
        (5, "undeclared-edge", "succeeded is terminal: no edge of the fixture leaves it"),
        (7, "wrong-actor", "queued -> running belongs to actor worker, not user"),
    ]


def test_a_job_is_created_in_the_initial_state_under_any_of_its_names() -> None:
    source = """
        jobs.insert_job(status="failed")
        enqueue_job(status=("running", "queued"))
        submit_jobs(owner="running")
        created_job(status="running")
        NewJob(status="held")
        """
    assert findings(source) == [
        (1, "not-initial", "a job is created in 'queued', not 'failed'"),
        (2, "not-initial", "a job is created in 'queued', not 'running'"),
        (5, *unknown("held", "passed as status=")),
    ]


# -- collections of states ------------------------------------------------------------------------


def test_a_collection_is_read_once_by_the_rule_that_holds_it() -> None:
    source = """
        ok = STATES + ("queued", "blocked")
        ok = ["paused"] + graph.states
        ok = STATES - {"queued", "stalled"}
        ok = job.status in ["queued", "aborted"]
        T = Literal["queued", "expired"]
        U = typing.Literal["queued"]
        V = x["queued", "held"]
        ok = list(STATES) + ["archived"]
        ok = list(STATES, extra) + ["archived"]
        ok = ("queued",) + ("blocked", "stalled")
        """
    assert findings(source) == [
        (1, *invented("the fixture's states, extended,", "blocked")),
        (2, *invented("the fixture's states, extended,", "paused")),
        (3, *invented("a collection of states", "stalled")),
        (4, *unknown("aborted", COMPARED)),
        (5, *invented("a Literal type", "expired")),
        (8, *invented("the fixture's states, extended,", "archived")),
    ]


def test_a_collection_is_found_where_its_first_word_is() -> None:
    source = """
        LABELS = [
            prefix,
            "queued",
            "stalled",
        ]
        M = {
            1: "one",
            "queued": 1,
            "stalled": 2,
        }
        OK = (*others, "queued", "blocked")
        FINE = (*STATES, "queued")
        ONE = ("blocked",)
        """
    assert findings(source) == [
        (3, *invented("a collection of states", "stalled")),
        (8, *invented("a mapping", "stalled")),
        (11, *invented("a collection of states", "blocked")),
    ]


def test_growing_the_fixtures_states_names_every_word_added() -> None:
    source = """
        TERMINAL.add("queued")
        STATES.extend(["queued", "blocked"], "more")
        STATES.count("held")
        states_of(job).append("held")
        graph.states[1:].insert(0, "held")
        """
    assert findings(source) == [
        (2, *invented("the fixture's states, extended,", "blocked")),
        (2, *invented("the fixture's states, extended,", "more")),
        (5, *invented("the fixture's states, extended,", "held")),
    ]


def test_a_json_schema_enum_is_a_list_under_the_enum_key() -> None:
    source = """
        A = {"enum": ["queued", "blocked"]}
        B = {"enum": "held"}
        C = {"ENUM": ["queued", "csv"]}
        D = {"shown": ["queued", "csv"]}
        """
    assert findings(source) == [(1, *invented("a JSON Schema enum", "blocked"))]


def test_a_table_keyed_by_side_effects_names_each_other_key_on_its_line() -> None:
    source = """
        T = {
            "write_csv_object": a,
            "queued": b,
            1: c,
        }
        U = {"notify": a, "page": b}
        """
    assert findings(source) == [
        (
            3,
            "effect-handlers",
            "a table keyed by side effects names 'queued', not one of the fixture's",
        )
    ]


def test_a_states_named_collection_refuses_every_other_word() -> None:
    source = """
        ACTIVE_STATES = ("queued", "csv")
        SHOWN: tuple[str, ...] = ("queued", "csv")
        ALL_STATUSES: tuple[str, ...] = (
            "queued",
            "json",
        )
        WAITING_STATES = ["queued", "blocked"]
        SHOWN_STATES: tuple[
            str, ...
        ] = ("queued", "xml")
        """
    assert findings(source) == [
        (1, *invented("ACTIVE_STATES", "csv")),
        (3, *invented("ALL_STATUSES", "json")),
        (7, *invented("WAITING_STATES", "blocked")),
        (10, *invented("SHOWN_STATES", "xml")),
    ]


# -- classes and enums ----------------------------------------------------------------------------


def test_an_enum_or_a_class_named_for_states_refuses_every_other_word() -> None:
    source = """
        class Phase(enum.Enum):
            QUEUED = "queued"
            CSV = "csv"

        class Step(lib.enum.StrEnum):
            QUEUED = "queued"
            CSV = "csv"

        class States:
            QUEUED: str = "queued"
            JSON: str = "json"
            LATER: str

        class Lifecycle(Base):
            QUEUED = "queued"
            CSV = "csv"
            HELD = A = "held"
            KIND = kind_of()
        """
    assert findings(source) == [
        (3, *invented("the enum Phase", "csv")),
        (7, *invented("the enum Step", "csv")),
        (11, *invented("the class States", "json")),
    ]


def test_every_member_of_a_class_is_read_past_what_names_no_member() -> None:
    source = """
        class Phase(StrEnum):
            \"\"\"The phases.\"\"\"

            FIRST, SECOND = "x", "y"
            QUEUED = "queued"
            CSV = "csv"
        """
    assert findings(source) == [(6, *invented("the enum Phase", "csv"))]


def test_auto_names_an_enums_member_only_in_a_str_enum() -> None:
    source = """
        class Phase(Enum):
            QUEUED = auto()
            STALLED = auto()

        class Step(enum.StrEnum):
            QUEUED = enum.auto()
            STALLED = enum.auto()
        """
    assert findings(source) == [(7, *invented("the enum Step", "stalled"))]


HAND_LISTED = "the status enum lists {} by hand; build it from the fixture's states"


def test_an_api_status_enum_listed_by_hand_is_named_with_its_states() -> None:
    source = """
        class JobStatus(StrEnum):
            RUNNING = "running"
            QUEUED = "queued"
            AGAIN = "queued"
            LIMIT = 1

        class StatusEnum(str, enum.Enum):
            HELD = "held"
            QUEUED = "queued"
        """
    assert findings(source) == [
        (1, "api-status-enum", HAND_LISTED.format("queued, running")),
        (7, "api-status-enum", HAND_LISTED.format("queued")),
        (8, *invented("the enum StatusEnum", "held")),
    ]


def test_an_api_status_enum_built_by_a_call_is_named_too() -> None:
    source = """
        JobStatus = Literal["queued", "running"]
        Status = Enum("Status", ["running", "queued"], start=1)
        StatusEnum: Any = make_enum("queued")
        Status = other
        Phase = Enum("Phase", ["queued"])
        """
    assert findings(source) == [
        (1, "api-status-enum", HAND_LISTED.format("queued, running")),
        (2, "api-status-enum", HAND_LISTED.format("queued, running")),
        (3, "api-status-enum", HAND_LISTED.format("queued")),
    ]


@pytest.mark.parametrize(
    "source",
    [
        'class Status:\n    QUEUED = "queued"\n',
        'class Status(Base):\n    QUEUED = "queued"\n',
        'class Phase(StrEnum):\n    QUEUED = "queued"\n',
        'class JobStatus(StrEnum):\n    LIMIT = 1\n    NAME = "csv"\n',
    ],
    ids=["not an enum", "another base", "another name", "no state"],
)
def test_a_class_that_is_no_status_enum_or_lists_no_state_is_no_api_enum(source: str) -> None:
    assert findings(source) == []


def test_generated_code_may_list_the_states_and_still_quotes_no_alias() -> None:
    source = """
        STATES = ("queued", "paused", "retrying")

        class JobStatus(StrEnum):
            RUNNING = "running"
        """
    assert findings(source, generated=True) == [
        (1, "forbidden-alias", '"retrying" is a forbidden status alias')
    ]
    assert facts_of(source, generated=True).states_defined
    assert findings(source) == [
        (1, "forbidden-alias", '"retrying" is a forbidden status alias'),
        (1, "states-drift", "STATES lacks fixture state(s) canceled, failed, running, succeeded"),
        (1, "states-drift", "STATES names 'paused', not a state in the fixture"),
        (1, "states-drift", "STATES names 'retrying', not a state in the fixture"),
        (3, "api-status-enum", HAND_LISTED.format("running")),
    ]


def test_only_a_module_level_name_states_defines_the_states() -> None:
    assert not facts_of('x.STATES = ("queued",)').states_defined
    assert not facts_of("STATES: tuple[str, ...]").states_defined
    assert not facts_of('states = ("queued",)').states_defined
    assert facts_of("STATES: tuple[str, ...] = GRAPH.states").states_defined
    assert facts_of("SHOWN = STATES = GRAPH.states").states_defined


# -- side-effect handlers -------------------------------------------------------------------------


def test_handlers_are_gathered_with_their_lines_in_every_form() -> None:
    source = """
        HANDLERS["write_csv_object"] = write
        self.handlers["notify_slack"] = notify
        HANDLERS[name] = other
        EFFECT_HANDLERS = {
            "emit_failed_webhook": a,
            **more,
            1: z,
            "page_oncall": b,
        }
        handlers.update({"delete_temp_object": c}, ping=d, **extra)
        HANDLERS.update(other_table)
        HANDLERS.setdefault("emit_done_webhook", e)
        HANDLERS.setdefault(name, e)
        HANDLERS.setdefault()
        register_handler("archive_rows", f)
        registry.register_effect("send_mail", g)
        register_effect_handler(name, h)
        register_effect()
        HANDLERS.get("not_registered")
        TABLE = {"write_csv_object": a}
        status_tables[0].update(later=x)
        """
    assert handlers(source) == [
        ("write_csv_object", 1),
        ("notify_slack", 2),
        ("emit_failed_webhook", 5),
        ("page_oncall", 8),
        ("delete_temp_object", 10),
        ("ping", 10),
        ("emit_done_webhook", 12),
        ("archive_rows", 15),
        ("send_mail", 16),
    ]


def test_handlers_are_gathered_from_their_decorator() -> None:
    source = """
        @side_effect_handler
        def notify_slack(ctx, job, item):
            pass

        @effects.side_effect_handler("x")
        async def page_oncall(ctx, job, item):
            pass

        @side_effect_handler
        class ArchiveRows:
            pass

        @other_decorator
        def plain(ctx, effect):
            pass
        """
    assert handlers(source) == [("notify_slack", 2), ("page_oncall", 6), ("ArchiveRows", 10)]


# -- strings --------------------------------------------------------------------------------------


def test_a_string_over_several_lines_names_the_line_of_each_word() -> None:
    source = '''
        NOTE = """
        first
        job status=held
        """
        OTHER = """first
        job status=stalled"""
        X = (
            "note: "
            "status=paused"
        )
        call(
            "SELECT 1; "
            "UPDATE jobs SET status = 'blocked';", b"x")
        call(
            "SELECT 1; "
            "UPDATE jobs SET status = 'aborted';", "a", "b")
        Y = (
            "a\\n"
            """job status=expired
        more"""
        )
        Z = (
            r"\\n "
            "status=archived"
        )
        W = (
            "a\\n\\nstatus=killed "
            "b"
        )
        '''
    assert findings(source) == [
        (3, *unknown("held", "as status= in text")),
        (6, *unknown("stalled", "as status= in text")),
        (9, *unknown("paused", "as status= in text")),
        (13, *unknown("blocked", "in SQL")),
        (16, *unknown("aborted", "in SQL")),
        (19, *unknown("expired", "as status= in text")),
        (24, *unknown("archived", "as status= in text")),
        (27, *unknown("killed", "as status= in text")),
    ]


def test_a_string_after_other_characters_on_its_first_line_keeps_its_lines() -> None:
    """Its column counts bytes, the text characters."""
    source = """
        ok = ("été", "SELECT 1; "
              "UPDATE jobs SET status = 'held';")
        ok = ("ete", "SELECT 1; "
              "UPDATE jobs SET status = 'stalled';")
        """
    assert findings(source) == [
        (2, *unknown("held", "in SQL")),
        (4, *unknown("stalled", "in SQL")),
    ]


def test_a_word_in_an_fstring_over_several_lines_is_found_on_a_line_of_it() -> None:
    """Where the parts of a string cannot be read from its tokens, its line breaks say where a
    word is, never past the string's last line."""
    source = """
        log.info(
            f"{a}\\n\\n\\n\\n"
            "job status=held"
        )
        """
    assert findings(source) == [(3, *unknown("held", "as status= in text"))]


def test_an_empty_string_or_another_constant_holds_no_word() -> None:
    assert findings('ok = job.status == ""\nx = b"retrying"\ny = 0\n') == []


def test_sql_in_a_string_is_found_on_the_lines_of_the_module() -> None:
    source = """
        import os
        QUERY = "UPDATE jobs SET status = 'held' WHERE status = 'running'"
        """
    assert findings(source) == [(2, *unknown("held", "in SQL"))]


def test_a_part_of_a_string_at_the_start_of_its_line_keeps_its_prefix() -> None:
    source = """
        V = (
            "x "
        r"\\n "
            "status=expired"
        )
        """
    assert findings(source) == [(4, *unknown("expired", "as status= in text"))]


def test_a_word_on_the_first_line_of_an_fstring_over_several_lines_is_found_there() -> None:
    source = """
        log.info(
            f"{a} status=held\\n"
            "more"
        )
        """
    assert findings(source) == [(2, *unknown("held", "as status= in text"))]


def test_the_parts_of_an_fstring_are_not_read_as_sql_alone() -> None:
    source = (
        "x = f\"UPDATE jobs SET status = 'failed', change_actor = 'worker' WHERE id = :id{i}"
        " AND status = 'running'\"\n"
    )
    assert findings(source) == []


def test_the_fields_read_of_each_kind_of_node_are_worked_out_where_none_are_known(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(python_rules, "_CHILD_FIELDS", {})
    assert findings(READ_OR_NOT) == [(2, *unknown("held", COMPARED))]
    assert findings('match status:\n    case Job(kind="held"):\n        pass\n') == [
        (2, *unknown("held", "matched as a status"))
    ]


def test_an_fstring_is_read_as_sql_whole_not_part_by_part() -> None:
    source = (
        "x = f\"UPDATE jobs SET status = 'failed', change_actor = 'worker' WHERE id = {i}"
        " AND status = 'running'\"\n"
    )
    assert findings(source) == []
    source = "x = f\"UPDATE jobs SET status = {s} WHERE status = 'running'\"\n"
    assert findings(source) == []
    source = (
        "x = f\"UPDATE jobs SET status = 'failed', change_actor = '{a}'"
        " WHERE status = 'running'\"\n"
    )
    assert findings(source) == []
