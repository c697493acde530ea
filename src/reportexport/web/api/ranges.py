"""Byte ranges and validators of a stored file, as browsers and download managers use them
(RFC 9110).

One range (`bytes=0-99`, `bytes=100-`, `bytes=-500`) is answered with 206 and that part; a
range that starts past the end with 416 and `Content-Range: bytes */size`; several ranges, or a
header we cannot read, with the whole file (200), which the RFC allows. A request whose
validator still names the file (`If-None-Match`, or without it `If-Modified-Since`) is answered
304.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

_SINGLE = re.compile(r"bytes=(\d*)-(\d*)")


class Unsatisfiable(Exception):  # noqa: N818 - named for the HTTP answer it becomes
    """No byte of the range is in the file."""


@dataclass(frozen=True)
class Part:
    start: int
    end: int  # inclusive

    @property
    def length(self) -> int:
        return self.end - self.start + 1


def requested_part(header: str | None, size: int) -> Part | None:
    """The one part a Range header asks for; None for the whole file; Unsatisfiable."""
    if not header:
        return None
    match = _SINGLE.fullmatch(header.strip().replace(" ", ""))
    if match is None:
        return None  # several ranges, or another unit: the whole file
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:  # the last N bytes
        count = int(last)
        if count == 0:
            raise Unsatisfiable
        return Part(max(0, size - count), size - 1) if size else _nothing()
    start = int(first)
    if start >= size:
        raise Unsatisfiable
    end = min(int(last), size - 1) if last else size - 1
    if end < start:
        return None  # an invalid range is ignored
    return Part(start, end)


def _nothing() -> Part:
    raise Unsatisfiable


def entity_tag(key: str, size: int, modified: datetime) -> str:
    """A strong validator: a published object never changes, so key, size and time name it."""
    digest = hashlib.sha256(f"{key}\n{size}\n{modified.isoformat()}".encode()).hexdigest()
    return f'"{digest[:32]}"'


def http_date(moment: datetime) -> str:
    return format_datetime(moment.astimezone(UTC).replace(microsecond=0), usegmt=True)


def still_current(if_range: str | None, etag: str, modified: datetime) -> bool:
    """Whether an If-Range validator still names this file (no If-Range: yes)."""
    if not if_range:
        return True
    if if_range.startswith(('"', "W/")):
        return if_range == etag
    try:
        return parsedate_to_datetime(if_range) >= modified.replace(microsecond=0)
    except (TypeError, ValueError):
        return False


def matches_any(if_none_match: str | None, etag: str) -> bool:
    if not if_none_match:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags


def unchanged_since(
    if_modified_since: str | None, modified: datetime, now: datetime | None = None
) -> bool:
    """Whether an If-Modified-Since date is at or after the file's last change (to the second,
    as Last-Modified says it); a date that cannot be read or lies in the future is ignored."""
    if not if_modified_since:
        return False
    try:
        since = parsedate_to_datetime(if_modified_since)
    except (TypeError, ValueError):
        return False
    if since.tzinfo is None:  # "-0000": UTC, by RFC 5322
        since = since.replace(tzinfo=UTC)
    if since > (now or datetime.now(UTC)):
        return False
    return modified.replace(microsecond=0) <= since
