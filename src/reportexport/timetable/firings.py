"""When a schedule fires, and what its relative parameters mean then: no I/O.

A schedule's cron expression is read by `cronsim` (five fields, or six with seconds first) in
the schedule's own time zone, on local wall-clock time:

- a local time that does not exist (the hour skipped when clocks go forward) fires at the first
  instant that does, once, however many of its times fell in the gap;
- a local time that occurs twice (the hour repeated when clocks go back) fires at its first
  occurrence only.

After downtime a schedule fires once, for the most recent time it missed, and records how many
earlier times it skipped (`Due.missed`): a daily report that was down for three days sends one
report, not three.

A relative parameter value, `{"relative": "yesterday"}`, is evaluated in the schedule's time
zone at the firing's scheduled time; see `RELATIVE_DATES` for the words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from reportexport.core.text import unsafe_text
from reportexport.core.zones import zone_problem

# Firing times searched for at most this far ahead: past the next leap day even across a
# century's end (an expression such as `0 0 30 2 *` never matches).
HORIZON = timedelta(days=9 * 366)


class ScheduleError(ValueError):
    """A cron expression, time zone or relative value that cannot be used; names which."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def parse_zone(name: str) -> ZoneInfo:
    problem = zone_problem(name)
    if problem is not None:
        raise ScheduleError("time_zone", problem)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError("time_zone", f"{name!r} is not an IANA time zone: {exc}") from None


# The shape of every IANA name (Europe/Paris, America/Argentina/Buenos_Aires, Etc/GMT+5, UTC).
TIME_ZONE_PATTERN = r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$"
RELATIVE_PATTERN = r"^(\d{1,4}) days ago$"
# A cron expression is printable ASCII, its fields apart by spaces or tabs.
CRON_PATTERN = r"^[\t -~]*$"


@dataclass(frozen=True)
class Cron:
    """A validated cron expression in a time zone."""

    expression: str
    zone: ZoneInfo

    @classmethod
    def parse(cls, expression: str, time_zone: str) -> Cron:
        if (problem := unsafe_text(expression)) is not None:  # said, never quoted back
            raise ScheduleError("cron", f"the cron expression {problem}")
        if not re.match(CRON_PATTERN, expression):
            raise ScheduleError(
                "cron", f"{expression!r} holds a character other than printable ASCII or a tab"
            )
        text = " ".join(expression.split())
        if len(text.split()) not in (5, 6):
            raise ScheduleError(
                "cron",
                f"{expression!r}: five fields (minute hour day month weekday), or six with "
                "seconds first",
            )
        zone = parse_zone(time_zone)
        try:
            CronSim(text, datetime(2000, 1, 1))
        except CronSimError as exc:
            raise ScheduleError("cron", f"{expression!r}: {exc}") from None
        return cls(text, zone)

    @property
    def time_zone(self) -> str:
        return self.zone.key

    def describe(self) -> str:
        """The expression in words (`At 08:00 on Monday`), with its time zone."""
        return f"{CronSim(self.expression, datetime(2000, 1, 1)).explain()} ({self.time_zone})"

    def times_after(self, moment: datetime) -> Iterator[datetime]:
        """The firing instants (UTC) strictly after `moment`, in order."""
        if moment.tzinfo is None:
            raise ValueError("a moment needs its time zone")
        local = moment.astimezone(self.zone).replace(tzinfo=None)
        limit = moment + HORIZON
        last = moment
        try:
            for naive in CronSim(self.expression, local):
                instant = wall_instant(naive, self.zone)
                if instant > limit:
                    return
                if instant <= last:  # a repeated hour's second pass, or a gap's duplicate
                    continue
                last = instant
                yield instant
        except CronSimError:  # no further match within cronsim's own horizon
            return

    def next_times(self, moment: datetime, count: int) -> list[datetime]:
        found = []
        for instant in self.times_after(moment):
            found.append(instant)
            if len(found) == count:
                break
        return found

    def next_after(self, moment: datetime) -> datetime | None:
        return next(self.times_after(moment), None)

    def due(self, next_fire_at: datetime, now: datetime) -> Due | None:
        """If `next_fire_at` has come: the most recent time due by `now` and how many earlier
        ones are skipped, and the next time after `now`."""
        if next_fire_at > now:
            return None
        latest, missed = next_fire_at, 0
        for instant in self.times_after(next_fire_at):
            if instant > now:
                return Due(scheduled_for=latest, missed=missed, next_fire_at=instant)
            latest, missed = instant, missed + 1
        return Due(scheduled_for=latest, missed=missed, next_fire_at=None)


@dataclass(frozen=True)
class Due:
    scheduled_for: datetime
    missed: int
    next_fire_at: datetime | None


def wall_instant(naive: datetime, zone: ZoneInfo) -> datetime:
    """A local wall-clock time as an instant: the first occurrence of a repeated time, the
    first valid instant after a skipped one."""
    first = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) == naive:
        return first
    # Skipped: the clocks jump past `naive` at a transition that lies between its two readings
    # (with the offset before the change and with the one after); find it to the second.
    other = naive.replace(tzinfo=zone, fold=1).astimezone(UTC)
    low, high = int(min(first, other).timestamp()), int(max(first, other).timestamp())
    while high - low > 1:
        middle = (low + high) // 2
        if datetime.fromtimestamp(middle, zone).replace(tzinfo=None) >= naive:
            high = middle
        else:
            low = middle
    return datetime.fromtimestamp(high, UTC)


def end_of_day(day: date, zone: ZoneInfo) -> datetime:
    """The last moment of a local day (a millisecond before the next one starts), in UTC."""
    following = day + timedelta(days=1)
    start = wall_instant(datetime(following.year, following.month, following.day), zone)
    return start - timedelta(milliseconds=1)


# -- relative parameter values ---------------------------------------------------------------


def _week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _month_start(day: date) -> date:
    return day.replace(day=1)


def _last_month_start(day: date) -> date:
    return _month_start(_month_start(day) - timedelta(days=1))


RELATIVE_DATES: Mapping[str, Callable[[date], date]] = {
    "today": lambda d: d,
    "yesterday": lambda d: d - timedelta(days=1),
    "start of this week": _week_start,
    "start of last week": lambda d: _week_start(d) - timedelta(days=7),
    "end of last week": lambda d: _week_start(d) - timedelta(days=1),
    "start of this month": _month_start,
    "start of last month": _last_month_start,
    "end of last month": lambda d: _month_start(d) - timedelta(days=1),
    "start of this year": lambda d: d.replace(month=1, day=1),
    "start of last year": lambda d: d.replace(year=d.year - 1, month=1, day=1),
    "end of last year": lambda d: d.replace(month=1, day=1) - timedelta(days=1),
}
_DAYS_AGO = re.compile(RELATIVE_PATTERN.strip("^$"))


def relative_words() -> list[str]:
    return [*RELATIVE_DATES, "N days ago"]


def relative_date(word: str, local_day: date) -> date:
    rule = RELATIVE_DATES.get(word)
    if rule is not None:
        return rule(local_day)
    match = _DAYS_AGO.fullmatch(word)
    if match:
        return local_day - timedelta(days=int(match.group(1)))
    if (problem := unsafe_text(word)) is not None:
        raise ScheduleError("parameters", f"the relative date {problem}")
    raise ScheduleError(
        "parameters", f"{word!r} is not a relative date; use one of: {', '.join(relative_words())}"
    )


def is_relative(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == {"relative"}


def resolve(
    parameters: Mapping[str, Any], types: Mapping[str, str], moment: datetime, zone: ZoneInfo
) -> dict[str, Any]:
    """The parameters for a firing at `moment`: relative values made concrete in `zone`.

    A relative date parameter gets `YYYY-MM-DD`; a relative timestamp parameter gets local
    midnight of that day with its UTC offset. `types` maps a parameter to its declared type.
    """
    local_day = moment.astimezone(zone).date()
    resolved: dict[str, Any] = {}
    for name, value in parameters.items():
        if not is_relative(value):
            resolved[name] = value
            continue
        word = value["relative"]
        if not isinstance(word, str):
            raise ScheduleError(
                f"parameters.{name}", f"{name}: a relative value is a word, not {word!r}"
            )
        kind = types.get(name)
        try:
            day = relative_date(word.strip().lower(), local_day)
        except ScheduleError as exc:
            raise ScheduleError(f"parameters.{name}", str(exc)) from None
        if kind == "date":
            resolved[name] = day.isoformat()
        elif kind == "timestamp":
            midnight = wall_instant(datetime(day.year, day.month, day.day), zone).astimezone(zone)
            resolved[name] = midnight.isoformat()
        else:
            raise ScheduleError(
                f"parameters.{name}",
                f"{name}: only date and timestamp parameters take a relative value "
                f"({name} is {kind or 'not a parameter of this query'})",
            )
    return resolved
