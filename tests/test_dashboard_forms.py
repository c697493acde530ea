"""The export form's controls start at the catalog's defaults and send back what they show; the
form as sent is read once for both of its buttons, and refused alike."""

from __future__ import annotations

from datetime import date

import pytest

from reportexport.core.parameters import (
    InvalidParametersError,
    ParameterError,
    ParamSpec,
    validate,
)
from reportexport.services.errors import InvalidInputError
from reportexport.web.dashboard.forms import controls, parameters_from_form, utc_local
from reportexport.web.dashboard.sent_form import SentForm, refusal

SPECS = {
    "flag": ParamSpec(name="flag", type="boolean", required=False, default=True),
    "off": ParamSpec(name="off", type="boolean", required=False, default=False),
    "color": ParamSpec(name="color", type="enum", choices=("red", "blue"), default="blue"),
    "pick": ParamSpec(name="pick", type="enum", choices=("a", "b"), required=False),
    "n": ParamSpec(name="n", type="integer", min=1, max=9, default=3),
    "day": ParamSpec(name="day", type="date", min="2024-01-01", max="2025-12-31"),
    "since": ParamSpec(name="since", type="timestamp", default="2024-03-05T10:00:00+01:00"),
    "code": ParamSpec(
        name="code",
        type="string",
        required=False,
        min_length=2,
        max_length=3,
        pattern="[A-Z]+",
        description="A country code",
    ),
}


def browser_submits(specs: dict[str, ParamSpec]) -> tuple[dict[str, str], list[str]]:
    """The fields a browser sends for the untouched form: checked boxes only, every value."""
    form: dict[str, str] = {}
    booleans = []
    for control in controls(specs):
        if control.kind == "checkbox":
            booleans.append(control.name)
            if control.checked:
                form[control.name] = "true"
        else:
            form[control.name] = control.value
    return form, booleans


def test_each_control_starts_at_the_catalogs_default_for_its_type() -> None:
    shown = {c.name: c for c in controls(SPECS)}
    assert shown["flag"].checked is True
    assert shown["off"].checked is False
    assert shown["color"].value == "blue"
    assert ("", "None") in shown["pick"].options
    assert shown["n"].value == "3"
    assert shown["since"].value == "2024-03-05T09:00:00"  # the same instant, in UTC
    assert shown["since"].kind == "datetime-local"


def test_an_enum_offers_an_empty_choice_only_without_a_default() -> None:
    specs = {
        **SPECS,
        "tone": ParamSpec(name="tone", type="enum", choices=("dark", "light"), required=False,
                          default="light"),
        "size": ParamSpec(name="size", type="enum", choices=("s", "m")),
    }  # fmt: skip
    options = {c.name: c.options for c in controls(specs)}
    assert options["tone"] == (("dark", "dark"), ("light", "light"))
    assert options["color"] == (("red", "red"), ("blue", "blue"))
    assert options["pick"][0] == ("", "None")  # optional, no default: "not given"
    assert options["size"][0] == ("", "Choose…")  # required, no default


def test_the_untouched_form_runs_with_the_defaults() -> None:
    form, booleans = browser_submits({k: v for k, v in SPECS.items() if k != "day"})
    specs = {k: v for k, v in SPECS.items() if k != "day"}
    sent = validate(specs, parameters_from_form(specs, form, booleans), from_text=True)
    assert sent == validate(specs, {}, from_text=True)


def test_an_unchecked_box_that_was_shown_is_false() -> None:
    values = parameters_from_form(SPECS, {}, ["flag"])
    assert values["flag"] == "false"
    assert "off" not in values  # a box the form did not show is not given


def test_every_rule_is_hinted_and_enforced_where_html_can() -> None:
    shown = {c.name: c for c in controls(SPECS)}
    assert shown["day"].attributes == {"required": "required", "min": "2024-01-01",
                                       "max": "2025-12-31"}  # fmt: skip
    assert "from 1 January 2024 to 31 December 2025" in shown["day"].hints
    code = shown["code"]
    assert code.attributes == {"minlength": "2", "maxlength": "3", "pattern": "[A-Z]+"}
    assert {"2 to 3 characters", "matching [A-Z]+", "optional"} <= set(code.hints)
    assert shown["n"].attributes["min"] == "1"
    assert shown["since"].hints[0] == "A date and time"  # the form says in which zone


def test_a_utc_picker_value_gets_its_offset() -> None:
    assert parameters_from_form(SPECS, {"since": "2024-03-05T10:00"}, [])["since"] == (
        "2024-03-05T10:00:00Z"
    )
    assert utc_local("2024-03-05T10:00:00Z") == "2024-03-05T10:00:00"
    assert utc_local("not a time") == ""


# -- the form as sent, read once for "Export" and "Schedule this" --------------------------------

SENT = [
    ("csrf-token", "t"), ("saved-query", "orders"), ("form-key", "k1"),
    ("boolean-shown", "flag"), ("boolean-shown", "off"), ("off", "true"),
    ("n", "4"), ("day", "2024-05-01"), ("since", "2024-03-05T10:00"),
    ("schedule-cron", "0 8 * * 1"), ("schedule-time-zone", "Europe/Paris"),
    ("schedule-last-day", "2025-01-31"), ("schedule-relative-day", "yesterday"),
]  # fmt: skip


def test_both_buttons_read_the_form_alike() -> None:
    sent = SentForm.read(SENT)
    assert (sent.saved_query, sent.key, sent.booleans) == ("orders", "k1", ("flag", "off"))
    assert sent.parameters(SPECS) == {
        "flag": "false", "off": "true", "n": "4", "day": "2024-05-01",
        "since": "2024-03-05T10:00:00Z",
    }  # fmt: skip
    asked = sent.schedule(SPECS)
    assert asked.parameters == {**sent.parameters(SPECS), "day": {"relative": "yesterday"}}
    assert (asked.cron, asked.time_zone, asked.last_day) == (
        "0 8 * * 1",
        "Europe/Paris",
        date(2025, 1, 31),
    )
    assert sent.shown()["flag"] == "false"  # an unchecked box comes back unchecked
    assert "csrf-token" not in sent.values


def test_a_field_sent_twice_is_refused_by_either_button_beside_it() -> None:
    sent = SentForm.read([*SENT, ("n", "5")])
    for ask in (sent.parameters, sent.schedule):
        with pytest.raises(ParameterError) as refused:
            ask(SPECS)
        for scheduling in (False, True):
            placed = refusal(refused.value, SPECS, scheduling=scheduling)
            assert placed.beside == {"n": "is given more than once; give it once"}
            assert placed.status == 422


def test_a_parameters_problem_is_beside_its_field_on_either_form() -> None:
    problems = InvalidParametersError(
        [ParameterError("n", "max", "must be at most 9"), ParameterError("zz", "unknown", "no")]
    )
    for scheduling in (False, True):
        placed = refusal(problems, SPECS, scheduling=scheduling)
        assert placed.beside == {"n": "must be at most 9"}
        assert placed.above == ["parameter 'zz': no"]
        assert placed.on_schedule == {}


def test_a_schedules_own_field_is_beside_it_on_the_schedule_form_only() -> None:
    with pytest.raises(InvalidInputError) as bad_day:
        SentForm.read([*SENT[:-2], ("schedule-last-day", "soon")]).schedule(SPECS)
    placed = refusal(bad_day.value, SPECS, scheduling=True)
    assert placed.on_schedule == {"last_day": "the last day is a date (YYYY-MM-DD)"}
    ends = InvalidInputError("ends_at", "range", "the last day is in the past")
    assert refusal(ends, SPECS, scheduling=True).on_schedule == {"last_day": ends.detail}
    relative = InvalidInputError("parameters.day", "relative", "is no relative date")
    assert refusal(relative, SPECS, scheduling=True).on_schedule == {
        "relative-day": "is no relative date"
    }
    named_cron = {**SPECS, "cron": ParamSpec(name="cron", type="string")}
    refused = InvalidInputError("cron", "text", "is not text")
    assert refusal(refused, named_cron, scheduling=False).beside == {"cron": "is not text"}
    assert refusal(refused, named_cron, scheduling=True).on_schedule == {"cron": "is not text"}


def test_a_refused_one_time_key_is_named_and_replaced_on_either_form() -> None:
    refused = InvalidInputError("Idempotency-Key", "text", "the Idempotency-Key is too long")
    for scheduling in (False, True):
        placed = refusal(refused, SPECS, scheduling=scheduling)
        assert placed.new_key
        assert placed.above == [
            "The form's one-time key (form-key) is too long; the form has a new one: send it again."
        ]
