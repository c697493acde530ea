"""A saved query's parameters as form controls that tell the truth, and a filled form back.

Each control starts at the catalog's default for its type (a boolean default true is checked,
an enum's default is selected, a timestamp's default is written in UTC), states every rule
before anything is sent, and carries the rules HTML can enforce itself (required, min, max,
minlength, maxlength, pattern). A timestamp picker is written, and without script taken, in UTC
(the form adds the `Z`); the page's script shows it in the reader's own time zone, as the rest
of the page, and sends the instant with its `Z` (`static/app.js`).

The same form schedules the export ("Schedule this"): a cron expression, a time zone (the
browser's own, once its script has run), a relative choice for each date and timestamp
parameter ("yesterday" when it fires) and an optional last day; `schedule_form` describes that
part, `schedule_parameters` reads it back.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import urlencode

from reportexport.core.parameters import BOOLEAN_WORDS, ParameterError, ParamSpec, encode
from reportexport.core.text import unsafe_text
from reportexport.core.zones import iana_zones
from reportexport.services.errors import KeyReusedError, ServiceError
from reportexport.timetable.firings import RELATIVE_DATES

# A form's own fields have names no parameter can have (parameter names are [a-z][a-z0-9_]*).
BOOLEAN_FIELD = "boolean-shown"  # names the checkboxes a form showed
QUERY_FIELD = "saved-query"
KEY_FIELD = "form-key"  # the one-time key that makes a double submit one job
NOTIFY_FIELD = "notify-me"  # "E-mail me when it ends"
NOTIFY = "notify"  # what the export service calls it when it refuses it
SERVICE_KEY = "Idempotency-Key"  # what the export service calls that key when it refuses it
# The schedule's own fields: a dash, which no parameter's name holds.
SCHEDULE_PREFIX = "schedule-"
RELATIVE_PREFIX = "schedule-relative-"
DEFAULT_CRON = "0 8 * * *"
RELATIVE_CHOICES = (*RELATIVE_DATES, "2 days ago", "7 days ago", "30 days ago")
_LOCAL_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?")
# Browsers compile a pattern as a JavaScript regex in `v` mode; send only patterns that mean the
# same there (the server checks every pattern anyway).
_PORTABLE_PATTERN = re.compile(r"[A-Za-z0-9 ^$.*+?()|{},:_\\\[\]-]*")


@dataclass(frozen=True, kw_only=True)
class Control:
    spec: ParamSpec
    kind: str  # select, checkbox, number, date, datetime-local, text
    value: str = ""
    checked: bool = False
    options: tuple[tuple[str, str], ...] = ()  # (value, label)
    attributes: Mapping[str, str] = field(default_factory=dict)
    hints: tuple[str, ...] = ()
    problem: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def required(self) -> bool:
        return self.spec.required and self.spec.default is None


def controls(
    specs: Mapping[str, ParamSpec],
    submitted: Mapping[str, str] | None = None,
    problems: Mapping[str, str] | None = None,
) -> list[Control]:
    """The form's controls: the catalog's defaults, or what was submitted, with each problem."""
    return [_control(spec, submitted, (problems or {}).get(spec.name)) for spec in specs.values()]


def _control(spec: ParamSpec, submitted: Mapping[str, str] | None, problem: str | None) -> Control:
    given = None if submitted is None else submitted.get(spec.name, "")
    default = "" if spec.default is None else str(encode(spec.default))
    hints = _hints(spec)
    if spec.type == "boolean":
        text = given if given is not None else default
        checked = BOOLEAN_WORDS.get(text.strip().lower(), False)
        return Control(spec=spec, kind="checkbox", checked=checked, hints=hints, problem=problem)
    if spec.type == "enum":
        chosen = given if given is not None else default
        options = tuple((choice, choice) for choice in spec.choices)
        if spec.default is None:  # with a default, an empty choice would mean that default
            options = (("", "Choose…" if spec.required else "None"), *options)
        return Control(
            spec=spec,
            kind="select",
            value=chosen,
            options=options,
            attributes=_required(spec),
            hints=hints,
            problem=problem,
        )
    value = given if given is not None else default
    attributes = _required(spec)
    if spec.type == "integer":
        kind = "number"
        attributes |= {"step": "1", "inputmode": "numeric", **_bounds(spec)}
    elif spec.type == "number":
        kind = "number"
        attributes |= {"step": "any", "inputmode": "decimal", **_bounds(spec)}
    elif spec.type == "date":
        kind = "date"
        attributes |= _bounds(spec)
    elif spec.type == "timestamp":
        kind = "datetime-local"
        attributes |= {"step": "1"}
        if given is None or _LOCAL_TIME.fullmatch(value) is None:
            value = utc_local(value)
        for key, bound in (("min", spec.min), ("max", spec.max)):
            if bound is not None:
                attributes[key] = utc_local(str(encode(bound)))
    else:
        kind = "text"
        if spec.min_length:
            attributes["minlength"] = str(spec.min_length)
        if spec.max_length is not None:
            attributes["maxlength"] = str(spec.max_length)
        if spec.pattern is not None and _PORTABLE_PATTERN.fullmatch(spec.pattern):
            attributes["pattern"] = spec.pattern
    return Control(
        spec=spec, kind=kind, value=value, attributes=attributes, hints=hints, problem=problem
    )


def _required(spec: ParamSpec) -> dict[str, str]:
    return {"required": "required"} if spec.required and spec.default is None else {}


def _bounds(spec: ParamSpec) -> dict[str, str]:
    bounds = {}
    for key, bound in (("min", spec.min), ("max", spec.max)):
        if bound is not None:
            bounds[key] = str(encode(bound))
    return bounds


def utc_local(text: str) -> str:
    """An RFC 3339 timestamp as a `datetime-local` value in UTC ("" when it is none)."""
    try:
        moment = datetime.fromisoformat(text.strip().upper().replace("Z", "+00:00"))
    except ValueError:
        return ""
    if moment.tzinfo is None:
        return ""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds")


def _hints(spec: ParamSpec) -> tuple[str, ...]:
    """Every rule of the parameter, in words, before anything is sent."""
    hints: list[str] = []
    kind = spec.type
    words = {
        "string": "Text",
        "integer": "A whole number",
        "number": "A number",
        "boolean": "Yes or no",
        "date": "A date",
        "timestamp": "A date and time",  # the form says in which zone
        "enum": "One of: " + ", ".join(spec.choices),
    }
    hints.append(words.get(kind, kind))
    if spec.min is not None and spec.max is not None:
        hints.append(f"from {_shown(spec, spec.min)} to {_shown(spec, spec.max)}")
    elif spec.min is not None:
        hints.append(f"at least {_shown(spec, spec.min)}")
    elif spec.max is not None:
        hints.append(f"at most {_shown(spec, spec.max)}")
    if spec.min_length and spec.max_length is not None:
        hints.append(f"{spec.min_length} to {spec.max_length} characters")
    elif spec.min_length:
        hints.append(f"at least {spec.min_length} characters")
    elif spec.max_length is not None:
        hints.append(f"at most {spec.max_length} characters")
    if spec.pattern is not None:
        hints.append(f"matching {spec.pattern}")
    if spec.default is not None and kind != "boolean":
        hints.append(f"default {_shown(spec, spec.default)}")
    if not spec.required and spec.default is None:
        hints.append("optional")
    return tuple(hints)


def _shown(spec: ParamSpec, value: Any) -> str:
    if spec.type == "timestamp":
        local = utc_local(str(encode(value)))
        return f"{local.replace('T', ' ')} UTC" if local else str(value)
    if spec.type == "date":
        try:
            day = date.fromisoformat(str(encode(value)))
        except ValueError:
            return str(value)
        return f"{day.day} {day:%B %Y}"
    return str(encode(value))


def unreadable_query(saved_query: str) -> str | None:
    """Why a sent saved query's name is not text at all (bytes that are not UTF-8, NUL): said
    by the form's field, never quoted back; None when it is text."""
    problem = unsafe_text(saved_query)
    return None if problem is None else f"The saved query's name ({QUERY_FIELD}) {problem}."


def form_href(saved_query: str) -> str:
    """The New export form of a saved query (a name that is not UTF-8 sent back as the bytes
    it came as)."""
    query = urlencode({"saved_query": saved_query}, encoding="utf-8", errors="surrogateescape")
    return f"/exports/new?{query}"


def parameters_from_form(
    specs: Mapping[str, ParamSpec], form: Mapping[str, str], booleans: Sequence[str]
) -> dict[str, str]:
    """What a filled form asks for, as the export service takes text: an unchecked box that
    was shown is `false`, a UTC picker's value gets its `Z`, an empty field is not given."""
    values = {
        name: value
        for name, value in form.items()
        if value != "" and not name.startswith(SCHEDULE_PREFIX)  # the schedule's own fields
    }
    for name in booleans:
        spec = specs.get(name)
        if spec is not None and spec.type == "boolean":
            values[name] = "true" if form.get(name, "") not in ("", "false") else "false"
    for name, spec in specs.items():
        value = values.get(name)
        if spec.type == "timestamp" and value is not None and _LOCAL_TIME.fullmatch(value):
            values[name] = value + ("" if value.count(":") == 2 else ":00") + "Z"
    return values


def refusal_above(exc: ServiceError) -> str:
    """A refusal that names no control of the form, above it: a refused one-time key by the
    form's own field (the page that says so carries a new key)."""
    if isinstance(exc, KeyReusedError) and exc.gone:
        return (
            f"This form made {exc.made} #{exc.earlier} already, which was deleted since (its "
            f"one-time key, {KEY_FIELD}, was the same); the form has a new key now: send it "
            f"again for another {exc.made}."
        )
    if isinstance(exc, KeyReusedError):
        return (
            f"This form made {exc.made} #{exc.earlier} already, with other values (its one-time "
            f"key, {KEY_FIELD}, was the same); the form has a new key now: send it again for "
            f"another {exc.made}."
        )
    if getattr(exc, "field", "") != SERVICE_KEY:
        return exc.detail
    why = exc.detail.removeprefix(f"the {SERVICE_KEY} ")
    return f"The form's one-time key ({KEY_FIELD}) {why}; the form has a new one: send it again."


def problems_by_field(
    specs: Mapping[str, ParamSpec], found: Sequence[ParameterError]
) -> tuple[dict[str, str], list[str]]:
    """Problems beside their fields, and those that name no field of this form."""
    beside: dict[str, str] = {}
    above: list[str] = []
    for problem in found:
        if problem.parameter in specs and problem.parameter not in beside:
            beside[problem.parameter] = problem.message
        else:
            above.append(str(problem))
    return beside, above


# -- "Schedule this" ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ScheduleForm:
    """The schedule part of the New export form, as shown (again, with its problems)."""

    open: bool = False
    cron: str = DEFAULT_CRON
    time_zone: str = "UTC"
    last_day: str = ""
    relative: Mapping[str, str] = field(default_factory=dict)  # parameter -> word
    specs: tuple[ParamSpec, ...] = ()  # the date and timestamp parameters
    problems: Mapping[str, str] = field(
        default_factory=dict
    )  # cron, time_zone, last_day, relative-NAME
    general: tuple[str, ...] = ()

    @property
    def zones(self) -> list[str]:
        return time_zones()

    def choices(self, name: str) -> list[str]:
        """The relative words offered for a parameter (one sent from elsewhere included)."""
        chosen = self.relative.get(name, "")
        words = list(RELATIVE_CHOICES)
        return words if not chosen or chosen in words else [*words, chosen]


@functools.cache
def time_zones() -> list[str]:
    """Every IANA zone a schedule takes, UTC first."""
    zones = sorted(z for z in iana_zones() if "/" in z and not z.startswith("Etc/"))
    return ["UTC", *zones]


def schedule_form(
    specs: Mapping[str, ParamSpec],
    submitted: Mapping[str, str] | None = None,
    problems: Mapping[str, str] | None = None,
    general: Sequence[str] = (),
) -> ScheduleForm:
    """The schedule part of the form: its defaults, or what was sent with its problems."""
    dated = tuple(spec for spec in specs.values() if spec.type in ("date", "timestamp"))
    if submitted is None:
        return ScheduleForm(specs=dated)
    return ScheduleForm(
        open=True,
        cron=submitted.get(SCHEDULE_PREFIX + "cron", DEFAULT_CRON),
        time_zone=submitted.get(SCHEDULE_PREFIX + "time-zone", "UTC"),
        last_day=submitted.get(SCHEDULE_PREFIX + "last-day", ""),
        relative={
            spec.name: submitted.get(RELATIVE_PREFIX + spec.name, "")
            for spec in dated
            if submitted.get(RELATIVE_PREFIX + spec.name)
        },
        specs=dated,
        problems=dict(problems or {}),
        general=tuple(general),
    )


def schedule_parameters(
    specs: Mapping[str, ParamSpec], form: Mapping[str, str], booleans: Sequence[str]
) -> dict[str, Any]:
    """The parameters a schedule keeps, from the form: text as `parameters_from_form` reads
    it, and `{"relative": word}` for a date or timestamp parameter given a relative choice."""
    values: dict[str, Any] = dict(parameters_from_form(specs, form, booleans))
    for name, spec in specs.items():
        word = form.get(RELATIVE_PREFIX + name, "").strip()
        if word and spec.type in ("date", "timestamp"):
            values[name] = {"relative": word}
    return values


def last_day(text: str) -> tuple[date | None, str | None]:
    """The schedule's optional last day from its date field, or what is wrong with it."""
    if not text.strip():
        return None, None
    try:
        return date.fromisoformat(text.strip()), None
    except ValueError:
        return None, "is a date (YYYY-MM-DD)"
