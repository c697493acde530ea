"""The export form's controls start at the catalog's defaults and send back what they show."""

from __future__ import annotations

from reportexport.dashboard.forms import controls, parameters_from_form, utc_local
from reportexport.parameters import ParamSpec, validate

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
    assert "A date and time in UTC" in shown["since"].hints


def test_a_utc_picker_value_gets_its_offset() -> None:
    assert parameters_from_form(SPECS, {"since": "2024-03-05T10:00"}, [])["since"] == (
        "2024-03-05T10:00:00Z"
    )
    assert utc_local("2024-03-05T10:00:00Z") == "2024-03-05T10:00:00"
    assert utc_local("not a time") == ""
