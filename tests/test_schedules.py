"""When schedules fire: cron on local wall-clock time, daylight saving both ways, month ends,
leap days, the catch-up policy, and relative parameters, all with explicit instants."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reportexport.schedules import Cron, ScheduleError, relative_date, resolve

PARIS = "Europe/Paris"


def at(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=UTC)  # type: ignore[misc]


def local(moments: list[datetime], zone: str = PARIS) -> list[str]:
    return [m.astimezone(ZoneInfo(zone)).isoformat() for m in moments]


def test_every_day_at_eight_in_paris_is_seven_utc_in_winter_and_six_in_summer() -> None:
    cron = Cron.parse("0 8 * * *", PARIS)
    assert cron.next_times(at(2026, 12, 1, 12), 2) == [at(2026, 12, 2, 7), at(2026, 12, 3, 7)]
    assert cron.next_times(at(2026, 7, 1, 12), 1) == [at(2026, 7, 2, 6)]
    assert cron.describe() == "At 08:00 every day (Europe/Paris)"


def test_a_time_skipped_by_spring_forward_fires_at_the_first_instant_after_it_once() -> None:
    # 2026-03-29: Paris goes from 02:00 CET straight to 03:00 CEST.
    daily = Cron.parse("30 2 * * *", PARIS)
    assert local(daily.next_times(at(2026, 3, 28, 12), 3)) == [
        "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00",
    ]  # fmt: skip
    every_half_hour = Cron.parse("*/30 * * * *", PARIS)
    assert local(every_half_hour.next_times(at(2026, 3, 29, 0, 15), 4)) == [
        "2026-03-29T01:30:00+01:00", "2026-03-29T03:00:00+02:00",  # 02:00 and 02:30: once
        "2026-03-29T03:30:00+02:00", "2026-03-29T04:00:00+02:00",
    ]  # fmt: skip


def test_a_time_repeated_by_fall_back_fires_at_its_first_occurrence_only() -> None:
    # 2026-10-25: Paris goes from 03:00 CEST back to 02:00 CET; 02:xx happens twice.
    daily = Cron.parse("30 2 * * *", PARIS)
    assert local(daily.next_times(at(2026, 10, 24, 12), 2)) == [
        "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00",
    ]  # fmt: skip
    every_half_hour = Cron.parse("*/30 * * * *", PARIS)
    assert local(every_half_hour.next_times(at(2026, 10, 24, 23, 45), 4)) == [
        "2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00",
        "2026-10-25T03:00:00+01:00", "2026-10-25T03:30:00+01:00",
    ]  # fmt: skip
    # Asked from inside the repeated hour's second pass, it does not fire that hour again.
    assert local(daily.next_times(at(2026, 10, 25, 1, 10), 1)) == ["2026-10-26T02:30:00+01:00"]


def test_new_york_changes_on_its_own_dates() -> None:
    cron = Cron.parse("30 2 * * *", "America/New_York")
    assert local(cron.next_times(at(2026, 3, 7, 12), 3), "America/New_York") == [
        "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00",
    ]  # fmt: skip


def test_month_ends_and_leap_days() -> None:
    on_31 = Cron.parse("0 6 31 * *", "UTC")
    assert on_31.next_times(at(2026, 1, 31, 7), 3) == [
        at(2026, 3, 31, 6), at(2026, 5, 31, 6), at(2026, 7, 31, 6),
    ]  # fmt: skip
    leap = Cron.parse("0 12 29 2 *", PARIS)
    assert leap.next_times(at(2026, 3, 1), 2) == [at(2028, 2, 29, 11), at(2032, 2, 29, 11)]
    last_day = Cron.parse("0 0 28-31 * *", "UTC")  # the last days of February 2028
    assert last_day.next_times(at(2028, 2, 27, 12), 3) == [
        at(2028, 2, 28), at(2028, 2, 29), at(2028, 3, 28),
    ]  # fmt: skip


def test_seconds_come_first_in_a_six_field_expression() -> None:
    cron = Cron.parse("*/20 * * * * *", "UTC")
    assert cron.next_times(at(2026, 12, 1, 8, 0, 5), 3) == [
        at(2026, 12, 1, 8, 0, 20), at(2026, 12, 1, 8, 0, 40), at(2026, 12, 1, 8, 1, 0),
    ]  # fmt: skip


def test_after_downtime_a_schedule_fires_once_for_the_latest_time_and_counts_the_rest() -> None:
    cron = Cron.parse("0 8 * * *", PARIS)
    assert cron.due(at(2026, 12, 2, 7), at(2026, 12, 2, 6, 59)) is None  # not yet
    on_time = cron.due(at(2026, 12, 2, 7), at(2026, 12, 2, 7, 0, 1))
    assert on_time is not None
    assert (on_time.scheduled_for, on_time.missed, on_time.next_fire_at) == (
        at(2026, 12, 2, 7), 0, at(2026, 12, 3, 7),
    )  # fmt: skip
    late = cron.due(at(2026, 12, 2, 7), at(2026, 12, 5, 9))  # down from the 2nd to the 5th
    assert late is not None
    assert (late.scheduled_for, late.missed, late.next_fire_at) == (
        at(2026, 12, 5, 7), 3, at(2026, 12, 6, 7),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("expression", "zone", "field", "message"),
    [
        ("0 8 * *", PARIS, "cron", r"five fields \(minute hour day month weekday\)"),
        ("0 25 * * *", PARIS, "cron", "Bad hour"),
        ("0 0 30 2 *", PARIS, "cron", "Bad day-of-month"),  # February has no 30th
        ("every day", PARIS, "cron", "five fields"),
        ("0 8 * * *", "Paris", "time_zone", "'Paris' is not an IANA time zone"),
        ("0 8 * * *", "Europe/Atlantis", "time_zone", "not an IANA time zone"),
    ],
)
def test_a_wrong_expression_or_zone_names_its_field(
    expression: str, zone: str, field: str, message: str
) -> None:
    with pytest.raises(ScheduleError, match=message) as raised:
        Cron.parse(expression, zone)
    assert raised.value.field == field


@pytest.mark.parametrize(
    ("word", "on", "expected"),
    [
        ("today", date(2026, 3, 1), date(2026, 3, 1)),
        ("yesterday", date(2026, 3, 1), date(2026, 2, 28)),
        ("yesterday", date(2028, 3, 1), date(2028, 2, 29)),
        ("3 days ago", date(2026, 1, 2), date(2025, 12, 30)),
        ("start of this week", date(2026, 12, 3), date(2026, 11, 30)),  # a Thursday
        ("start of last week", date(2026, 12, 3), date(2026, 11, 23)),
        ("end of last week", date(2026, 12, 3), date(2026, 11, 29)),
        ("start of last week", date(2026, 11, 30), date(2026, 11, 23)),  # on a Monday
        ("start of this month", date(2026, 12, 3), date(2026, 12, 1)),
        ("start of last month", date(2026, 1, 15), date(2025, 12, 1)),
        ("end of last month", date(2028, 3, 1), date(2028, 2, 29)),
        ("start of last year", date(2026, 6, 1), date(2025, 1, 1)),
        ("end of last year", date(2026, 6, 1), date(2025, 12, 31)),
    ],
)
def test_relative_dates(word: str, on: date, expected: date) -> None:
    assert relative_date(word, on) == expected


def test_a_relative_value_is_evaluated_on_the_schedules_own_calendar() -> None:
    types = {"day": "date", "since": "timestamp", "n": "integer"}
    parameters = {"day": {"relative": "yesterday"}, "since": {"relative": "today"}, "n": 5}
    # 23:30 UTC on March 28 is already March 29 in Paris, the day clocks go forward.
    found = resolve(parameters, types, at(2026, 3, 28, 23, 30), ZoneInfo(PARIS))
    assert found == {"day": "2026-03-28", "since": "2026-03-29T00:00:00+01:00", "n": 5}
    in_utc = resolve(parameters, types, at(2026, 3, 28, 23, 30), ZoneInfo("UTC"))
    assert in_utc["day"] == "2026-03-27"


def test_a_relative_value_is_refused_by_name_where_it_cannot_go() -> None:
    types = {"day": "date", "n": "integer"}
    with pytest.raises(ScheduleError, match="only date and timestamp parameters"):
        resolve({"n": {"relative": "today"}}, types, at(2026, 1, 1), ZoneInfo("UTC"))
    with pytest.raises(ScheduleError, match="'fortnight ago' is not a relative date; use one of"):
        resolve({"day": {"relative": "fortnight ago"}}, types, at(2026, 1, 1), ZoneInfo("UTC"))


EXPRESSIONS = ["0 8 * * *", "*/15 * * * *", "30 2 * * *", "0 0 1 * *", "0 9 * * 1-5", "5 1-3 * * *"]
ZONES = ["Europe/Paris", "America/New_York", "Australia/Sydney", "Asia/Kolkata", "UTC"]


@settings(max_examples=60, deadline=None)
@given(
    expression=st.sampled_from(EXPRESSIONS),
    zone=st.sampled_from(ZONES),
    start=st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2030, 12, 31)),
)
def test_firing_times_rise_strictly_and_fall_on_the_expression_or_just_after_a_gap(
    expression: str, zone: str, start: datetime
) -> None:
    cron = Cron.parse(expression, zone)
    begin = start.replace(tzinfo=UTC)
    times = cron.next_times(begin, 12)
    assert times, expression
    assert all(b > a for a, b in zip([begin, *times], times, strict=False))
    minute, hour = expression.split()[:2]
    for moment in times:
        wall = moment.astimezone(ZoneInfo(zone))
        if minute.isdigit() and hour.isdigit():
            exact = (wall.hour, wall.minute) == (int(hour), int(minute))
            # ...or it is the first instant after a skipped hour: clocks just went forward.
            shifted = (wall - timedelta(hours=1)).utcoffset() != wall.utcoffset()
            assert exact or shifted, (expression, zone, wall)


def test_every_iana_time_zone_has_the_documented_shape() -> None:
    from zoneinfo import available_timezones

    from reportexport.schedules import TIME_ZONE_PATTERN

    assert all(re.fullmatch(TIME_ZONE_PATTERN, zone) for zone in available_timezones())
    assert not re.fullmatch(TIME_ZONE_PATTERN, "../etc/passwd")
