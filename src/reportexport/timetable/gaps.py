"""How close together a schedule's firings come: the shortest gap between consecutive firings
over a span (a year) in its own time zone, found without walking every firing.

Firings are local wall-clock times (see `schedules`), so a gap is the gap between two times of
the cron's own fields, except where the zone's clocks change. The times of day the expression
names (seconds x minutes x hours) are the same on every day it matches, so:

- on a day whose clocks do not change, the shortest gap is the shortest between two of those
  times of day, the same every such day;
- between two matching days, it is from the last time of the one to the first of the next,
  each mapped to its instant (exact across a change of clocks, as the mapping keeps order);
- on a day whose clocks change, the firings of the hours around the change are walked one by
  one: a skipped hour pulls the times around it together (a time in it fires at the first
  instant after it), a repeated hour pushes them apart.

That is a few hundred look-ups for a year of any expression, plus the firings of the one or two
days a year whose clocks change. Asked for the first gap below a minimum, it stops at the first
one it finds (a schedule firing every second is refused at its first matching day).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from itertools import islice, pairwise, product
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

from reportexport.timetable.firings import Cron, wall_instant

YEAR = timedelta(days=366)
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class Gap:
    """Two consecutive firings `length` apart, the first at `after` (UTC)."""

    length: timedelta
    after: datetime


def shortest_gap(
    cron: Cron, start: datetime, *, span: timedelta = YEAR, below: timedelta | None = None
) -> Gap | None:
    """The shortest gap between consecutive firings of `cron` from `start` over `span` (None
    when it fires fewer than twice); with `below`, the first gap found shorter than it (None
    when there is none: every gap is at least `below`)."""
    found: Gap | None = None
    for gap in _gaps(cron, start, span):
        if below is not None:
            if gap.length < below:
                return gap
        elif found is None or gap.length < found.length:
            found = gap
    return found


def _gaps(cron: Cron, start: datetime, span: timedelta) -> Iterator[Gap]:
    """Every gap that can be the shortest, cheapest first."""
    zone = cron.zone
    days = _matching_days(
        cron.expression, start.astimezone(zone).date(), (start + span).astimezone(zone).date()
    )
    changing = [day for day in days if _clocks_change(day, zone)]
    times = _times_of_day(cron.expression)

    def instant(day: date, second_of_day: int) -> datetime:
        midnight = datetime(day.year, day.month, day.day)
        return wall_instant(midnight + timedelta(seconds=second_of_day), zone)

    if len(times) > 1:
        shortest, index = min((b - a, i) for i, (a, b) in enumerate(pairwise(times)))
        steady_days = islice((day for day in days if day not in changing), 2)
        steady = [instant(day, times[index]) for day in steady_days]
        if steady:  # the first steady day's, unless it is past: then the next one's
            after = next((moment for moment in steady if moment >= start), steady[-1])
            yield Gap(length=timedelta(seconds=shortest), after=after)
    for one, other in pairwise(days):
        last, first = instant(one, times[-1]), instant(other, times[0])
        if first > last:
            yield Gap(length=first - last, after=last)
    for day in changing:  # the firings around a change of clocks, one by one
        begins, ends = instant(day, 0), instant(day + DAY, 0)
        window_start, window_end = _around_changes(begins, ends, zone)
        # From the last firing before the window, so the gap into it is walked too; none on
        # this day means the window starts with the day's first firing, whose gap from the
        # day before is among the days' gaps above.
        wall_start = window_start.astimezone(zone).replace(tzinfo=None)
        index = bisect_left(times, int((wall_start - datetime(day.year, day.month, day.day))
                                        .total_seconds())) - 1  # fmt: skip
        previous = instant(day, times[index]) if index >= 0 else None
        for moment in cron.times_after(previous or window_start - timedelta(seconds=1)):
            if moment >= ends:
                break
            if previous is not None:
                yield Gap(length=moment - previous, after=previous)
            previous = moment
            if moment > window_end:
                break


def _times_of_day(expression: str) -> list[int]:
    """The times of day (seconds since midnight) the expression's second, minute and hour
    fields name, in order."""
    parsed = CronSim(expression, datetime(2000, 1, 1))
    return sorted(
        h * 3600 + m * 60 + s for h, m, s in product(parsed.hours, parsed.minutes, parsed.seconds)
    )


def _matching_days(expression: str, first: date, last: date) -> list[date]:
    """The local days from `first` to `last` on which the expression's day-of-month, month and
    weekday fields match (cron's own rule when both day fields are given)."""
    day_fields = " ".join(expression.split()[-3:])
    found: list[date] = []
    since = datetime(first.year, first.month, first.day) - timedelta(seconds=1)
    try:
        for moment in CronSim(f"0 0 0 {day_fields}", since):
            if moment.date() > last:
                break
            found.append(moment.date())
    except CronSimError:  # no further match within cronsim's own horizon
        pass
    return found


def _around_changes(begins: datetime, ends: datetime, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The instants from a few hours before the day's first change of clocks to a few hours
    after its last (the whole day where the hourly readings show none): outside them the day's
    firings are as far apart as on a steady day."""
    hours = int((ends - begins) / HOUR) + 1
    offsets = [(begins + n * HOUR).astimezone(zone).utcoffset() for n in range(hours + 1)]
    changes = [n for n in range(1, len(offsets)) if offsets[n] != offsets[n - 1]]
    if not changes:
        return begins, ends
    margin = 3 * HOUR  # more than any change of clocks moves them
    return (max(begins, begins + (changes[0] - 1) * HOUR - margin),
            min(ends, begins + changes[-1] * HOUR + margin))  # fmt: skip


def _clocks_change(day: date, zone: ZoneInfo) -> bool:
    """Whether the zone's offset from UTC changes during the local day (or at its end)."""
    midnight = datetime(day.year, day.month, day.day)
    return zone.utcoffset(midnight) != zone.utcoffset(midnight + DAY)
