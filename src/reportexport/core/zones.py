"""Time zones people name: the IANA names of places, read once from the zone database.

The database also holds `localtime` (whatever zone the machine is set to, so a schedule would
move with the server) and `Factory` (tzdata's placeholder for a machine not set up, offset
`-00`) and, on some systems, `posixrules` (a copy of a zone the rules of POSIX TZ strings
start from): none is a place, so none is taken.
"""

from __future__ import annotations

import difflib
from zoneinfo import available_timezones

from reportexport.core.text import unsafe_text

NOT_PLACES = frozenset({"localtime", "Factory", "posixrules"})


def iana_zones() -> set[str]:
    """Every zone a person may name, read from the zone database on first use and kept."""
    if not _ZONES:
        _ZONES.update(available_timezones() - NOT_PLACES)
    return _ZONES


_ZONES: set[str] = set()


def zone_problem(name: str) -> str | None:
    """Why `name` is not an IANA time zone (with the one probably meant), or None."""
    if name in iana_zones():
        return None
    if (problem := unsafe_text(name)) is not None:  # said, never quoted back
        return f"the time zone {problem}"
    meant = likely_zone(name)
    hint = f"did you mean {meant}?" if meant else "e.g. Europe/Paris, UTC"
    return f"{name!r} is not an IANA time zone: {hint}"


def likely_zone(name: str) -> str | None:
    """The zone `name` probably means: the same name in other letter case, a place named
    alone (`paris`), or a near spelling; None when nothing is close."""
    wanted = name.strip().casefold().replace(" ", "_")
    if not wanted:
        return None
    by_fold = {zone.casefold(): zone for zone in iana_zones()}
    if wanted in by_fold:
        return by_fold[wanted]
    places = [zone for zone in sorted(iana_zones()) if zone.casefold().endswith("/" + wanted)]
    if places:
        return places[0]
    close = difflib.get_close_matches(wanted, sorted(by_fold), n=1, cutoff=0.85)
    return by_fold[close[0]] if close else None
