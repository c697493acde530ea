"""How the dashboard writes numbers, sizes, durations, moments and parameter values.

Moments are `<time datetime>` elements holding the exact UTC time; the page's script turns them
into the reader's local, relative phrasing with the exact time on hover. Every value a person
typed or a source produced is isolated (`<bdi>`), so a right-to-left override cannot reorder
the text around it.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from markupsafe import Markup, escape

from reportexport.core.records import Job

BOOLEAN_WORDS = {"true": "yes", "false": "no"}


def number(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def plural(count: int | None, one: str, many: str | None = None) -> str:
    """`1 row`, `2 rows`, `1,234 rows`."""
    count = count or 0
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def human_bytes(count: int | None) -> str:
    """Sizes in SI units as browsers show them: `512 bytes`, `1.2 kB`, `34 MB`."""
    if count is None:
        return ""
    if count < 1000:
        return plural(count, "byte")
    value = float(count)
    for unit in ("kB", "MB", "GB", "TB", "PB"):
        value /= 1000
        if value < 1000 or unit == "PB":
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    raise AssertionError("unreachable")


def duration(seconds: float | None) -> str:
    """`0.4 s`, `42 s`, `3 min 05 s`, `2 h 07 min`."""
    if seconds is None:
        return ""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{round(seconds)} s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s"


def elapsed(job: Job) -> float | None:
    if job.started_at is None:
        return None
    end = job.finished_at or datetime.now(UTC)
    return max(0.0, (end - job.started_at).total_seconds())


def utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def moment(value: datetime | None, style: str = "relative") -> Markup:
    """A `<time>` element; the script shows it relative (or exact) in local time."""
    if value is None:
        return Markup("")
    iso = value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return Markup('<time datetime="{}" data-style="{}">{}</time>').format(
        iso, style, utc_text(value)
    )


def zoned_text(value: datetime, zone: str) -> str:
    """A moment as a clock in `zone` reads it: `Thu 3 Dec 2026, 08:00 CET` (seconds if any)."""
    local = value.astimezone(ZoneInfo(zone))
    clock = f"{local:%H:%M:%S}" if local.second else f"{local:%H:%M}"
    return f"{local:%a} {local.day} {local:%b %Y}, {clock} {local.tzname()}"


def zoned(value: datetime | None, zone: str) -> Markup:
    """A moment in a named zone (a schedule's); the script adds the reader's own time when
    their zone is another."""
    if value is None:
        return Markup("")
    iso = value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return Markup('<time datetime="{}" data-zone="{}" title="{}">{}</time>').format(
        iso, zone, utc_text(value), zoned_text(value, zone)
    )


# Why a firing made no export, in words (the codes are the limits and reasons it records).
REFUSALS = {
    "max_active": "the owner's cap of unfinished exports",
    "max_per_window": "the owner's rate limit",
    "invalid_parameters": "parameters that no longer fit the saved query (the schedule paused)",
    "schedule_deleted": "the schedule was deleted first",
    "idempotency_key": "the same request had made an export already",
}


def refusal_words(code: str | None) -> str:
    return REFUSALS.get(code or "", code or "")


# What an operator did, as the audit page says it.
AUDIT_WORDS = {
    "redrive_side_effect": "re-drove a side effect",
    "redrive_delivery": "re-drove one destination of an announcement",
    "set_email": "set an e-mail address",
    "cancel_job": "canceled an export",
    "add_webhook_endpoint": "added a webhook endpoint",
    "rotate_webhook_secret": "rotated a webhook secret",
    "disable_webhook_endpoint": "disabled a webhook endpoint",
    "test_webhook_endpoint": "sent a test event",
    "add_chat_channel": "added a chat channel",
    "remove_chat_channel": "removed a chat channel",
    "add_person": "added a person",
    "new_token": "gave a new token",
    "revoke_token": "revoked a token",
    "revoke_person": "revoked a person",
}


def audit_words(action: str) -> str:
    return AUDIT_WORDS.get(action, action.replace("_", " "))


def isolated(value: Any) -> Markup:
    """Text from outside (a parameter, a name, a message) in its own bidirectional island."""
    return Markup("<bdi>{}</bdi>").format("" if value is None else str(value))


def parameter_types(job: Job) -> dict[str, str]:
    specs = job.options.get("parameter_specs") or []
    return {str(s.get("name")): str(s.get("type")) for s in specs if isinstance(s, dict)}


def ordered_parameters(job: Job) -> list[tuple[str, Any]]:
    """A job's parameters in the order its saved query declares them."""
    order = list(parameter_types(job))
    known = [(name, job.parameters[name]) for name in order if name in job.parameters]
    return known + [(k, v) for k, v in job.parameters.items() if k not in order]


def parameter_value(kind: str, value: Any) -> Markup:
    """A stored parameter value as a person reads it, by its type."""
    if value is None or value == "":
        return Markup('<span class="muted">not given</span>')
    if kind == "boolean" or isinstance(value, bool):
        text = str(value).lower()
        return escape(BOOLEAN_WORDS.get(text, text))
    if kind == "timestamp":
        try:
            return moment(datetime.fromisoformat(str(value).replace("Z", "+00:00")), "exact")
        except ValueError:
            return isolated(value)
    if kind == "date":
        try:
            day = date.fromisoformat(str(value))
        except ValueError:
            return isolated(value)
        return Markup('<time datetime="{}">{}</time>').format(
            day.isoformat(), f"{day.day} {day:%B %Y}"
        )
    if kind in ("integer", "number"):
        return Markup('<span class="mono">{}</span>').format(value)
    return isolated(value)


FILTERS = {
    "number": number,
    "plural": plural,
    "bytes": human_bytes,
    "duration": duration,
    "moment": moment,
    "zoned": zoned,
    "bdi": isolated,
    "refusal": refusal_words,
    "audit_words": audit_words,
}
