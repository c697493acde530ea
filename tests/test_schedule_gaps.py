"""How close a schedule's firings come: the shortest gap over a year, in its own zone, found
from the cron's fields (with the days whose clocks change walked) and equal to walking every
firing; and fast enough to run on every keystroke of a preview."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reportexport.timetable.firings import Cron, wall_instant
from reportexport.timetable.gaps import Gap, shortest_gap

PARIS = "Europe/Paris"
START = datetime(2026, 12, 3, 12, tzinfo=UTC)


def gap(expression: str, zone: str = PARIS, **options: timedelta) -> Gap | None:
    return shortest_gap(Cron.parse(expression, zone), START, **options)


@pytest.mark.parametrize(
    ("expression", "zone", "length"),
    [
        ("* * * * * *", "UTC", timedelta(seconds=1)),
        ("* * * * *", PARIS, timedelta(minutes=1)),
        ("0 8 * * *", PARIS, timedelta(hours=23)),  # Saturday to the spring-forward Sunday
        ("0 8 * * 1-5", PARIS, timedelta(days=1)),  # whose Friday to Monday is 71 hours
        ("59 23 * * *", "UTC", timedelta(days=1)),
        ("0 0,23 * * 5,6", "UTC", timedelta(hours=1)),  # Friday 23:00 to Saturday 00:00
        ("0 12 1 * *", "UTC", timedelta(days=28)),  # February is the shortest month
        # 01:30 and 02:30 are an hour apart, but on the spring-forward day 02:30 does not exist
        # and fires at 03:00, half an hour after 01:30.
        ("30 1,2 * * *", PARIS, timedelta(minutes=30)),
        # 00:59:30 and 01:59:30... and 01:59:30 then the skipped 02:59:30, fired at 03:00:00.
        ("30 59 * * * *", PARIS, timedelta(seconds=30)),
        ("*/5 * * * *", "Australia/Lord_Howe", timedelta(minutes=5)),  # half-hour changes
    ],
)
def test_the_shortest_gap_over_a_year(expression: str, zone: str, length: timedelta) -> None:
    found = gap(expression, zone)
    assert found is not None
    assert found.length == length


def test_a_schedule_firing_once_a_year_or_less_has_no_gap() -> None:
    assert gap("0 0 29 2 *", "UTC") is None  # no 29 February before 2028
    assert gap("0 9 25 12 *", "UTC") is None  # Christmas 2026 only: 2027's is past the year


def test_below_stops_at_the_first_gap_shorter_than_it_and_says_none_when_all_are_longer() -> None:
    found = gap("30 1,2 * * *", below=timedelta(minutes=45))
    assert found is not None
    assert found.length == timedelta(minutes=30)
    assert found.after == datetime(2027, 3, 28, 0, 30, tzinfo=UTC)  # 01:30 Paris, in winter
    assert gap("30 1,2 * * *", below=timedelta(minutes=30)) is None
    assert gap("0 8 * * *", below=timedelta(minutes=1)) is None


@pytest.mark.parametrize(
    "expression", ["* * * * * *", "* * * * *", "*/2 * * * * *", "0 * * * *", "0 8 * * 1-5"]
)
def test_a_year_of_even_the_most_frequent_expression_is_read_in_well_under_a_second(
    expression: str,
) -> None:
    """Walking a year of every-second firings would take minutes: the fields are read instead
    (generous bound; CPU seconds of this process, which other processes on the shared cores, the
    suite's own workers among them, do not lengthen as they lengthen wall time)."""
    started = time.process_time()
    for zone in (PARIS, "UTC", "America/Santiago"):
        gap(expression, zone)
        gap(expression, zone, below=timedelta(minutes=1))
    assert time.process_time() - started < 5


MINUTES = ["0", "30", "59", "0,1", "*/20", "15,45", "5-7"]
HOURS = ["*", "0", "1,2", "2", "23", "0,23", "1-3", "*/6"]
DAYS = ["*", "1", "L", "15", "28-31"]
WEEKDAYS = ["*", "0", "1-5", "6", "5,6"]
ZONES = [PARIS, "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Tehran",
         "Europe/Dublin", "UTC"]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    seconds=st.sampled_from(["", "0 ", "30 ", "0,59 "]),
    minute=st.sampled_from(MINUTES),
    hour=st.sampled_from(HOURS),
    day=st.sampled_from(DAYS),
    weekday=st.sampled_from(WEEKDAYS),
    zone=st.sampled_from(ZONES),
    first=st.dates(min_value=date(2024, 1, 1), max_value=date(2030, 12, 31)),
)
def test_the_shortest_gap_is_the_one_walking_every_firing_finds(
    seconds: str, minute: str, hour: str, day: str, weekday: str, zone: str, first: date
) -> None:
    """Over 40 local days (which often hold a change of clocks), against every firing."""
    cron = Cron.parse(f"{seconds}{minute} {hour} {day} * {weekday}", zone)
    begins = wall_instant(datetime(first.year, first.month, first.day), ZoneInfo(zone))
    last = first + timedelta(days=40)
    ends = wall_instant(datetime(last.year, last.month, last.day) + timedelta(days=1), cron.zone)
    firings = []
    for moment in cron.times_after(begins - timedelta(seconds=1)):
        if moment >= ends:
            break
        firings.append(moment)
    walked = min((b - a for a, b in pairwise(firings)), default=None)
    found = shortest_gap(cron, begins, span=ends - begins - timedelta(seconds=1))
    assert (found.length if found else None) == walked, cron
