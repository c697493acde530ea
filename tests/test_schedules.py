"""When schedules fire: cron on local wall-clock time, daylight saving both ways, month ends,
leap days, the catch-up policy, and relative parameters, all with explicit instants."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, available_timezones

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reportexport.core import zones
from reportexport.timetable import firings as schedules
from reportexport.timetable.firings import (
    HORIZON,
    Cron,
    Due,
    ScheduleError,
    parse_zone,
    relative_date,
    relative_words,
    resolve,
)

PARIS = "Europe/Paris"


def at(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def local(moments: list[datetime], zone: str = PARIS) -> list[str]:
    return [m.astimezone(ZoneInfo(zone)).isoformat() for m in moments]


@pytest.fixture
def machine_zone() -> Iterator[Callable[[str], None]]:
    """Sets the process's own time zone (TZ) for one test, and puts it back afterwards."""
    saved = os.environ.get("TZ")

    def use(name: str) -> None:
        os.environ["TZ"] = name
        time.tzset()

    yield use
    if saved is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = saved
    time.tzset()


def test_describe_puts_the_expression_in_words_with_its_zone() -> None:
    assert Cron.parse("30 2 * * 1-5", "America/New_York").describe() == (
        "At 02:30 on Monday through Friday (America/New_York)"
    )
    assert (
        Cron.parse("*/20 * * * * *", "UTC").describe() == "Every 20th second of every minute (UTC)"
    )
    assert Cron.parse("0 9 1 * *", "Asia/Kolkata").describe() == (
        "At 09:00 on the first day of every month (Asia/Kolkata)"
    )
    cron = Cron.parse("  0   8 * *\t* ", PARIS)  # spacing is not part of the expression
    assert (cron.expression, cron.time_zone) == ("0 8 * * *", PARIS)


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


@pytest.mark.parametrize("moment", ["1 2", "7 2", "14 2", "59 2", "17 42 2"])
def test_any_time_in_the_skipped_hour_fires_on_the_first_second_after_it(moment: str) -> None:
    # Not only the half hour: every skipped time is moved to 03:00:00 exactly, not a second
    # (or a fraction of one) later.
    cron = Cron.parse(f"{moment} 29 3 *", PARIS)
    assert local(cron.next_times(at(2026, 3, 1), 2)) == [
        "2026-03-29T03:00:00+02:00", f"2027-03-29T{_wall(moment)}+02:00",
    ]  # fmt: skip


def _wall(fields: str) -> str:
    *seconds, minute, hour = (int(part) for part in fields.split())
    return f"{hour:02}:{minute:02}:{(seconds or [0])[0]:02}"


def test_lord_howe_island_moves_its_clocks_by_half_an_hour_both_ways() -> None:
    # 2026-04-05: 02:00 (+11:00) goes back to 01:30 (+10:30), so 01:30-01:59 happen twice;
    # 2026-10-04: 02:00 (+10:30) jumps to 02:30 (+11:00), so 02:00-02:29 never happen.
    zone = "Australia/Lord_Howe"
    repeated = Cron.parse("45 1 * * *", zone)
    assert local(repeated.next_times(at(2026, 4, 4), 2), zone) == [
        "2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30",
    ]  # fmt: skip
    skipped = Cron.parse("7 2 * * *", zone)
    assert local(skipped.next_times(at(2026, 10, 3), 2), zone) == [
        "2026-10-04T02:30:00+11:00", "2026-10-05T02:07:00+11:00",
    ]  # fmt: skip
    every_ten_minutes = Cron.parse("*/10 * * * *", zone)
    assert local(every_ten_minutes.next_times(at(2026, 10, 3, 15, 15), 4), zone) == [
        "2026-10-04T01:50:00+10:30", "2026-10-04T02:30:00+11:00",  # 02:00-02:20: once
        "2026-10-04T02:40:00+11:00", "2026-10-04T02:50:00+11:00",
    ]  # fmt: skip


def test_firing_instants_are_in_utc_and_read_on_the_schedules_clock_whatever_the_machines(
    machine_zone: Callable[[str], None],
) -> None:
    machine_zone("<+14>-14")  # UTC+14, as a POSIX rule: far from both zones below
    in_utc = Cron.parse("0 8 * * *", "UTC")
    assert [m.isoformat() for m in in_utc.next_times(at(2026, 12, 1, 7, 30), 2)] == [
        "2026-12-01T08:00:00+00:00", "2026-12-02T08:00:00+00:00",
    ]  # fmt: skip
    in_paris = Cron.parse("30 2 * * *", PARIS)
    assert [m.isoformat() for m in in_paris.next_times(at(2026, 3, 28, 12), 2)] == [
        "2026-03-29T01:00:00+00:00", "2026-03-30T00:30:00+00:00",
    ]  # fmt: skip
    assert in_paris.next_after(at(2026, 3, 28, 12)) == at(2026, 3, 29, 1)


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


# The fifth Monday of February is February 29 in a leap year that begins on a Thursday:
# 2016, 2044, 2072, 28 years apart, much further than the search looks ahead.
FIFTH_MONDAY_OF_FEBRUARY = "0 0 * 2 MON#5"


def test_firing_times_are_searched_for_nine_years_of_366_days_ahead_the_limit_included() -> None:
    assert (HORIZON.days, HORIZON.seconds) == (9 * 366, 0)
    cron = Cron.parse(FIFTH_MONDAY_OF_FEBRUARY, "UTC")
    assert cron.describe() == "At 00:00 on the fifth Monday of the month in February (UTC)"
    assert cron.next_times(at(2010, 1, 1), 3) == [at(2016, 2, 29)]  # 2044 is too far away
    assert cron.next_after(at(2036, 1, 1)) == at(2044, 2, 29)
    assert cron.next_after(at(2026, 1, 1)) is None
    exactly_at_the_limit = at(2044, 2, 29) - HORIZON
    assert cron.next_after(exactly_at_the_limit) == at(2044, 2, 29)
    assert cron.next_after(exactly_at_the_limit - timedelta(seconds=1)) is None
    yearly = Cron.parse("0 0 1 1 *", "UTC")
    assert list(yearly.times_after(at(2035, 1, 1) - HORIZON))[-1] == at(2035, 1, 1)


def test_next_after_is_the_first_firing_strictly_after_the_moment() -> None:
    cron = Cron.parse("0 8 * * *", PARIS)
    assert cron.next_after(at(2026, 12, 1)) == at(2026, 12, 1, 7)
    assert cron.next_after(at(2026, 12, 1, 7)) == at(2026, 12, 2, 7)  # not the moment itself
    assert cron.next_after(at(2026, 12, 1, 6, 59, 59)) == at(2026, 12, 1, 7)


def test_a_moment_without_a_time_zone_is_refused() -> None:
    cron = Cron.parse("0 8 * * *", PARIS)
    for ask in (cron.next_after, lambda moment: cron.next_times(moment, 1)):
        with pytest.raises(ValueError, match=r"^a moment needs its time zone$"):
            ask(datetime(2026, 12, 1, 8))


def test_a_firing_exactly_now_is_due_now() -> None:
    cron = Cron.parse("0 8 * * *", PARIS)
    assert cron.due(at(2026, 12, 2, 7), at(2026, 12, 2, 7)) == Due(
        scheduled_for=at(2026, 12, 2, 7), missed=0, next_fire_at=at(2026, 12, 3, 7)
    )
    # Down since the 2nd, back exactly at the 4th's firing: that one is sent, two skipped.
    assert cron.due(at(2026, 12, 2, 7), at(2026, 12, 4, 7)) == Due(
        scheduled_for=at(2026, 12, 4, 7), missed=2, next_fire_at=at(2026, 12, 5, 7)
    )
    assert cron.due(at(2026, 12, 2, 7), at(2026, 12, 2, 6, 59, 59)) is None


def test_a_schedule_with_no_firing_in_sight_is_due_once_and_then_has_no_next_time() -> None:
    cron = Cron.parse(FIFTH_MONDAY_OF_FEBRUARY, "UTC")
    assert cron.due(at(2044, 2, 29), at(2044, 3, 1)) == Due(
        scheduled_for=at(2044, 2, 29), missed=0, next_fire_at=None
    )


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


FIELDS = "five fields (minute hour day month weekday), or six with seconds first"


@pytest.mark.parametrize(
    ("expression", "zone", "field", "message"),
    [
        ("0 8 * *", PARIS, "cron", f"'0 8 * *': {FIELDS}"),
        ("0 8 * * * * *", PARIS, "cron", f"'0 8 * * * * *': {FIELDS}"),
        ("every day", PARIS, "cron", f"'every day': {FIELDS}"),
        ("0 25 * * *", PARIS, "cron", "'0 25 * * *': Bad hour"),
        ("61  0 * * *", PARIS, "cron", "'61  0 * * *': Bad minute"),  # quoted as written
        ("0 0 30 2 *", PARIS, "cron", "'0 0 30 2 *': Bad day-of-month"),  # no February 30th
        (
            "0 8 * * *",
            "Paris",
            "time_zone",
            "'Paris' is not an IANA time zone: did you mean Europe/Paris?",
        ),
        (
            "0 8 * * *",
            "europe/paris",
            "time_zone",
            "'europe/paris' is not an IANA time zone: did you mean Europe/Paris?",
        ),
        (
            "0 8 * * *",
            "Europe/Pariss",
            "time_zone",
            "'Europe/Pariss' is not an IANA time zone: did you mean Europe/Paris?",
        ),
        (
            "0 8 * * *",
            "new york",
            "time_zone",
            "'new york' is not an IANA time zone: did you mean America/New_York?",
        ),
        (
            "0 8 * * *",
            "Europe/Atlantis",
            "time_zone",
            "'Europe/Atlantis' is not an IANA time zone: e.g. Europe/Paris, UTC",
        ),
        # The server's own zone, and tzdata's placeholder for a machine not set up (offset -00):
        # in the zone database, but no place's zone.
        (
            "0 8 * * *",
            "localtime",
            "time_zone",
            "'localtime' is not an IANA time zone: e.g. Europe/Paris, UTC",
        ),
        (
            "0 8 * * *",
            "Factory",
            "time_zone",
            "'Factory' is not an IANA time zone: e.g. Europe/Paris, UTC",
        ),
    ],
)
def test_a_wrong_expression_or_zone_names_its_field(
    expression: str, zone: str, field: str, message: str
) -> None:
    with pytest.raises(ScheduleError) as raised:
        Cron.parse(expression, zone)
    assert (raised.value.field, str(raised.value)) == (field, message)


def test_the_list_of_zones_is_read_on_first_use_and_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zones, "_ZONES", set())
    assert parse_zone("Europe/Paris") == ZoneInfo("Europe/Paris")
    read = zones._ZONES
    assert read == available_timezones() - {"localtime", "Factory", "posixrules"}

    def read_again() -> set[str]:
        raise AssertionError("the list of zones was read a second time")

    monkeypatch.setattr(zones, "available_timezones", read_again)
    assert parse_zone("Asia/Kolkata") == ZoneInfo("Asia/Kolkata")


@pytest.mark.parametrize("name", ["localtime", "Factory", "posixrules"])
def test_files_of_the_zone_folder_that_are_no_iana_zone_are_refused(name: str) -> None:
    """`localtime` is whatever zone the host has (a schedule would fire at another hour on
    another machine), `Factory` the zone of a host that has none."""
    with pytest.raises(ScheduleError, match="is not an IANA time zone"):
        parse_zone(name)


def test_a_listed_zone_the_database_cannot_load_is_refused_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The list is read once; a zone removed from the database since (an upgrade of tzdata
    # while the service runs) is still listed, and the loader's own words say what failed.
    monkeypatch.setattr(zones, "_ZONES", {"Gone/Zone"})
    with pytest.raises(ScheduleError) as raised:
        Cron.parse("0 8 * * *", "Gone/Zone")
    assert (raised.value.field, str(raised.value)) == (
        "time_zone",
        "'Gone/Zone' is not an IANA time zone: 'No time zone found with key Gone/Zone'",
    )


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
        ("start of last month", date(2026, 3, 1), date(2026, 2, 1)),  # on a month's first
        ("start of last month", date(2026, 3, 31), date(2026, 2, 1)),  # on a month's last
        ("start of last month", date(2028, 3, 31), date(2028, 2, 1)),
        ("start of last month", date(2028, 2, 29), date(2028, 1, 1)),  # on a leap day
        ("end of last month", date(2026, 3, 31), date(2026, 2, 28)),
        ("end of last month", date(2028, 3, 1), date(2028, 2, 29)),
        ("start of this year", date(2026, 6, 1), date(2026, 1, 1)),
        ("start of last year", date(2026, 6, 1), date(2025, 1, 1)),
        ("start of last year", date(2028, 2, 29), date(2027, 1, 1)),
        ("0 days ago", date(2026, 6, 1), date(2026, 6, 1)),
        ("1461 days ago", date(2028, 3, 1), date(2024, 3, 1)),
        ("end of last year", date(2026, 6, 1), date(2025, 12, 31)),
    ],
)
def test_relative_dates(word: str, on: date, expected: date) -> None:
    assert relative_date(word, on) == expected


WORDS = (
    "today, yesterday, start of this week, start of last week, end of last week, "
    "start of this month, start of last month, end of last month, start of this year, "
    "start of last year, end of last year, N days ago"
)


def test_the_relative_words_are_listed_with_n_days_ago_last() -> None:
    assert ", ".join(relative_words()) == WORDS


@pytest.mark.parametrize("word", ["fortnight ago", "10000 days ago", "-1 days ago", "1 day ago"])
def test_a_word_that_is_not_a_relative_date_is_refused_with_the_words_there_are(
    word: str,
) -> None:
    with pytest.raises(ScheduleError) as raised:
        relative_date(word, date(2026, 1, 1))
    assert (raised.value.field, str(raised.value)) == (
        "parameters",
        f"{word!r} is not a relative date; use one of: {WORDS}",
    )


def test_a_relative_value_is_evaluated_on_the_schedules_own_calendar() -> None:
    types = {"day": "date", "since": "timestamp", "n": "integer"}
    parameters = {"day": {"relative": "yesterday"}, "since": {"relative": "today"}, "n": 5}
    # 23:30 UTC on March 28 is already March 29 in Paris, the day clocks go forward.
    found = resolve(parameters, types, at(2026, 3, 28, 23, 30), ZoneInfo(PARIS))
    assert found == {"day": "2026-03-28", "since": "2026-03-29T00:00:00+01:00", "n": 5}
    in_utc = resolve(parameters, types, at(2026, 3, 28, 23, 30), ZoneInfo("UTC"))
    assert in_utc["day"] == "2026-03-27"


def test_every_relative_value_is_resolved_whatever_comes_before_it() -> None:
    types = {"day": "date", "since": "timestamp", "n": "integer", "tag": "text"}
    parameters = {
        "n": 5,
        "day": {"relative": " Start of Last Month "},  # read without case or spaces around
        "tag": {"relative": "today", "and": "more"},  # not a relative value: kept as it is
        "since": {"relative": "3 days ago"},
    }
    assert resolve(parameters, types, at(2026, 3, 1, 9), ZoneInfo(PARIS)) == {
        "n": 5,
        "day": "2026-02-01",
        "tag": {"relative": "today", "and": "more"},
        "since": "2026-02-26T00:00:00+01:00",
    }


def test_a_relative_timestamp_where_midnight_is_skipped_is_the_first_instant_of_the_day() -> None:
    # 2026-09-06: Santiago's clocks go from 00:00 (-04:00) straight to 01:00 (-03:00).
    santiago = ZoneInfo("America/Santiago")
    types = {"since": "timestamp"}
    today = {"since": {"relative": "today"}}
    assert resolve(today, types, at(2026, 9, 6, 12), santiago) == {
        "since": "2026-09-06T01:00:00-03:00"
    }
    assert resolve(today, types, at(2026, 9, 5, 12), santiago) == {
        "since": "2026-09-05T00:00:00-04:00"
    }


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        (
            {"n": {"relative": "today"}},
            "n: only date and timestamp parameters take a relative value (n is integer)",
        ),
        (
            {"other": {"relative": "today"}},
            "other: only date and timestamp parameters take a relative value "
            "(other is not a parameter of this query)",
        ),
        ({"day": {"relative": 3}}, "day: a relative value is a word, not 3"),
        ({"day": {"relative": None}}, "day: a relative value is a word, not None"),
        (
            {"day": {"relative": "fortnight ago"}},
            f"'fortnight ago' is not a relative date; use one of: {WORDS}",
        ),
    ],
)
def test_a_relative_value_is_refused_by_name_where_it_cannot_go(
    parameters: dict[str, object], message: str
) -> None:
    types = {"day": "date", "n": "integer"}
    with pytest.raises(ScheduleError) as raised:
        resolve({"first": 1, **parameters}, types, at(2026, 1, 1), ZoneInfo("UTC"))
    named = f"parameters.{next(iter(parameters))}"  # the parameter itself, by name
    assert (raised.value.field, str(raised.value)) == (named, message)


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
    from reportexport.timetable.firings import TIME_ZONE_PATTERN

    assert all(re.fullmatch(TIME_ZONE_PATTERN, zone) for zone in available_timezones())
    assert not re.fullmatch(TIME_ZONE_PATTERN, "../etc/passwd")


@pytest.mark.parametrize(
    ("day", "zone", "last_moment"),
    [
        # Berlin in winter (UTC+1): the day ends at 22:59:59.999 UTC.
        (date(2026, 3, 28), "Europe/Berlin", datetime(2026, 3, 28, 22, 59, 59, 999000, UTC)),
        # The day the clocks go forward: the next day starts at 00:00 CEST, 22:00 UTC.
        (date(2026, 3, 29), "Europe/Berlin", datetime(2026, 3, 29, 21, 59, 59, 999000, UTC)),
        # The last day of a month and of a year roll over into the next.
        (date(2026, 12, 31), "UTC", datetime(2026, 12, 31, 23, 59, 59, 999000, UTC)),
        (date(2026, 2, 28), "Asia/Kolkata", datetime(2026, 2, 28, 18, 29, 59, 999000, UTC)),
    ],
)
def test_end_of_day_is_a_millisecond_before_the_next_local_day(
    day: date, zone: str, last_moment: datetime
) -> None:
    assert schedules.end_of_day(day, ZoneInfo(zone)) == last_moment
