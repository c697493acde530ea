"""The New export form as sent, read once for both of its buttons: "Export" (POST /exports/new)
and "Schedule this" (POST /schedules/new).

`SentForm.read` parts the form's own fields (the saved query, the one-time key, the checkboxes
it showed) from the parameters and the schedule's fields; `SentForm.parameters` and
`SentForm.schedule` are what each button asks the services for; `refusal` puts what a service
refused beside the field it names (a parameter, or one of the schedule's fields), or in the
list above the part of the form that was sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from reportexport.core.parameters import (
    InvalidParametersError,
    ParameterError,
    ParamSpec,
    single_values,
)
from reportexport.services.errors import InvalidInputError, ServiceError
from reportexport.web.dashboard import forms
from reportexport.web.dashboard.session import CSRF_FIELD
from reportexport.web.problems import status_of

# A schedule's fields as the schedule service names them, and the form's field each belongs beside.
SCHEDULE_FIELDS = {
    "cron": "cron",
    "time_zone": "time_zone",
    "last_day": "last_day",
    "ends_at": "last_day",
}


@dataclass(frozen=True, kw_only=True)
class ScheduleAsked:
    """What "Schedule this" asks the schedule service for."""

    parameters: dict[str, Any]
    cron: str
    time_zone: str
    last_day: date | None


@dataclass(frozen=True, kw_only=True)
class SentForm:
    saved_query: str
    key: str | None  # the one-time key
    values: dict[str, str]  # every other field by name: the parameters and the schedule's
    booleans: tuple[str, ...]  # the checkboxes the form showed
    repeated: ParameterError | None  # a field sent more than once
    notify: bool = False  # "E-mail me when it ends" was ticked

    @classmethod
    def read(cls, pairs: Sequence[tuple[str, str]]) -> SentForm:
        fields = [(k, v) for k, v in pairs if k not in (CSRF_FIELD, forms.BOOLEAN_FIELD)]
        repeated: ParameterError | None = None
        try:
            values = single_values(fields)
        except ParameterError as exc:
            values, repeated = dict(fields), exc
        saved_query = values.pop(forms.QUERY_FIELD, "")
        key = values.pop(forms.KEY_FIELD, "") or None
        notify = values.pop(forms.NOTIFY_FIELD, "") not in ("", "false")
        return cls(
            saved_query=saved_query,
            key=key,
            notify=notify,
            values=values,
            booleans=tuple(v for k, v in pairs if k == forms.BOOLEAN_FIELD),
            repeated=repeated,
        )

    def parameters(self, specs: Mapping[str, ParamSpec]) -> dict[str, str]:
        """The export's parameters as the export service takes text (a repeated field is
        refused first)."""
        if self.repeated is not None:
            raise self.repeated
        return forms.parameters_from_form(specs, self.values, self.booleans)

    def schedule(self, specs: Mapping[str, ParamSpec]) -> ScheduleAsked:
        """The schedule asked for (a repeated field is refused first, then a last day that is
        no date)."""
        if self.repeated is not None:
            raise self.repeated
        day, problem = forms.last_day(self.values.get(forms.SCHEDULE_PREFIX + "last-day", ""))
        if problem is not None:
            raise InvalidInputError("last_day", "date", f"the last day {problem}")
        return ScheduleAsked(
            parameters=forms.schedule_parameters(specs, self.values, self.booleans),
            cron=self.values.get(forms.SCHEDULE_PREFIX + "cron", ""),
            time_zone=self.values.get(forms.SCHEDULE_PREFIX + "time-zone", ""),
            last_day=day,
        )

    def shown(self) -> dict[str, str]:
        """What was sent, as the controls show it again (an unchecked box stays so)."""
        shown = dict(self.values)
        for name in self.booleans:
            shown.setdefault(name, "false")
        return shown


@dataclass(frozen=True, kw_only=True)
class Refusal:
    """Where the form shows what was refused."""

    status: int
    beside: dict[str, str] = field(default_factory=dict)  # parameter -> problem
    on_schedule: dict[str, str] = field(default_factory=dict)  # a schedule's field -> problem
    above: list[str] = field(default_factory=list)  # naming no field of the form
    new_key: bool = False  # the one-time key was refused: the form gets a new one


def refusal(
    exc: ParameterError | ServiceError, specs: Mapping[str, ParamSpec], *, scheduling: bool
) -> Refusal:
    """Each problem beside its field; a schedule's own fields only when it was "Schedule this"."""
    if isinstance(exc, ParameterError):
        found = exc.problems if isinstance(exc, InvalidParametersError) else (exc,)
        beside, above = forms.problems_by_field(specs, found)
        return Refusal(status=422, beside=beside, above=above)
    named = getattr(exc, "field", "")
    parameter = named.removeprefix("parameters.")
    new_key = named == forms.SERVICE_KEY
    status = status_of(exc)
    if scheduling and named in SCHEDULE_FIELDS:
        on_schedule = {SCHEDULE_FIELDS[named]: exc.detail}
        return Refusal(status=status, on_schedule=on_schedule, new_key=new_key)
    if scheduling and getattr(exc, "rule", "") == "relative" and parameter in specs:
        on_schedule = {f"relative-{parameter}": exc.detail}  # beside its relative choice
        return Refusal(status=status, on_schedule=on_schedule, new_key=new_key)
    if parameter in specs and named != forms.NOTIFY:  # a parameter may be called notify too
        return Refusal(status=status, beside={parameter: exc.detail}, new_key=new_key)
    return Refusal(status=status, above=[forms.refusal_above(exc)], new_key=new_key)
