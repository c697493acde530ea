"""One announcement as an e-mail: a plain-text part and an HTML part saying the same.

The wording (`outcome`, `facts`) is the announcements' own: a chat message says the same.

Every value that came from a person (a saved query's title, parameter values, an error
message) is escaped for HTML in the HTML part, and reduced to one line of printable text in a
header (a newline in a parameter value cannot start a header of its own). The `Message-ID` is
the same for every copy of one announcement to one address, so a copy sent again after a
runner died before recording the first is recognisable. No tracking: no images, no links but
the one to the job's page on the dashboard (for an address outside this service's people: a
signed download link instead, or the file attached) and, in an e-mail sent because its owner
asked for one whenever an export ends or to a schedule's recipient, the one-click unsubscribe
link (RFC 8058: `List-Unsubscribe` and `List-Unsubscribe-Post`, a signed link that a mail
provider may POST to).
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.policy import SMTP, EmailPolicy
from email.utils import format_datetime
from typing import Any

# One mailbox as people are given it: no display name, no comment, no quoting, ASCII, and nothing
# that could end a header line or an SMTP command.
MAILBOX = re.compile(
    r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})+"
)
MAX_MAILBOX = 254
# Control characters (C0, DEL, C1) and the Unicode line and paragraph separators: what could end
# a header line or hide in one.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
MAX_HEADER_VALUE = 200
# An unsubscribe link longer than this (a very long public_url) is left out of the headers.
MAX_UNSUBSCRIBE_URL = 900


@dataclass(frozen=True, kw_only=True)
class Attachment:
    """The exported file attached to an e-mail (compressed with gzip when `gzip`)."""

    file_name: str
    content: bytes
    gzip: bool = False


@dataclass(frozen=True, kw_only=True)
class Announcement:
    """What an e-mail says about a job that ended."""

    job_id: int
    effect: str  # the side effect announcing it (one Message-ID per effect and address)
    succeeded: bool
    title: str  # the saved query's title
    parameters: Mapping[str, Any]
    job_url: str | None  # the job's page on the dashboard (None: not for this reader)
    finished_at: datetime | None = None
    rows: int | None = None
    file_name: str | None = None
    reason: str | None = None  # why it failed, in words
    # Sent because the owner asked for an e-mail whenever an export ends, or to a schedule's
    # recipient: the link that stops it.
    unsubscribe_url: str | None = None
    # Sent to a recipient of the schedule that made the job: the schedule's owner.
    scheduled_by: str | None = None
    # Sent to the owner as a recipient of their own schedule (each of its firings).
    each_firing: bool = False
    # Sent to an address outside this service's people: who added it to the schedule, and the
    # file as a signed download link (working until `download_expires_at`) or attached.
    address_added_by: str | None = None
    download_url: str | None = None
    download_expires_at: datetime | None = None
    attachment: Attachment | None = None


def is_mailbox(address: str) -> bool:
    """Is `address` one plain mailbox (name@example.com), safe in a header and a command?"""
    return len(address) <= MAX_MAILBOX and MAILBOX.fullmatch(address) is not None


def domain_refusal(address: str, domains: Sequence[str]) -> str | None:
    """Why `address` may not be sent announcements where e-mail goes only to `domains` (the
    setting `email_domains`, lower-case; empty: any domain), or None when it may."""
    domain = address.rpartition("@")[2].lower()
    if not domains or domain in domains:
        return None
    return (
        f"e-mail goes only to {', '.join(domains)} (email_domains), "
        f"not to {one_line(domain, 100)!r}"
    )


def one_line(text: str, limit: int = MAX_HEADER_VALUE) -> str:
    """`text` as one line of printable text, fit for a header."""
    flat = " ".join(_UNPRINTABLE.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def subject(announcement: Announcement) -> str:
    """`Orders of one day — 2026-12-02 — ready` (or `— failed`)."""
    values = ", ".join(str(value) for value in announcement.parameters.values())
    outcome = "ready" if announcement.succeeded else "failed"
    parts = [announcement.title, values, outcome] if values else [announcement.title, outcome]
    return one_line(" — ".join(parts))


def message_id(job_id: int, effect: str, address: str, domain: str) -> str:
    """The same for every copy of one announcement to one address."""
    who = hashlib.sha256(address.strip().lower().encode()).hexdigest()[:16]
    return f"<reportexport.{job_id}.{effect}.{who}@{domain}>"


class _MailPolicy(EmailPolicy):
    """The SMTP policy, but a `List-Unsubscribe` value is never folded: it has no space to fold
    at, and the standard policy would MIME-encode it (`=?utf-8?q?=3Chttps...`), which RFC 2369
    does not allow and mail programs do not read. Its value is ASCII and well under the 998
    characters a line may have."""

    def fold(self, name: str, value: Any) -> str:
        if name.lower() in _UNFOLDED:
            return f"{name}: {value}{self.linesep}"
        return str(super().fold(name, value))

    def fold_binary(self, name: str, value: Any) -> bytes:
        if name.lower() in _UNFOLDED:
            return f"{name}: {value}{self.linesep}".encode("ascii")
        return bytes(super().fold_binary(name, value))


_UNFOLDED = ("list-unsubscribe",)
MAIL_POLICY = _MailPolicy(linesep=SMTP.linesep)


def build_message(
    announcement: Announcement, *, sender: str, recipient: str, sent_at: datetime
) -> EmailMessage:
    """The e-mail for `recipient`, from `sender` (whose domain names the Message-ID)."""
    message = EmailMessage(policy=MAIL_POLICY)
    message["From"] = one_line(sender)
    message["To"] = one_line(recipient)
    message["Subject"] = subject(announcement)
    message["Date"] = format_datetime(sent_at)
    domain = sender.rpartition("@")[2] or "reportexport.invalid"
    message["Message-ID"] = message_id(
        announcement.job_id, announcement.effect, recipient, one_line(domain)
    )
    message["Auto-Submitted"] = "auto-generated"  # RFC 3834: no automatic replies
    link = announcement.unsubscribe_url
    if link is not None and link.isascii() and len(link) <= MAX_UNSUBSCRIBE_URL:
        message["List-Unsubscribe"] = f"<{one_line(link, MAX_UNSUBSCRIBE_URL)}>"  # RFC 2369
        if link.startswith("https://"):  # RFC 8058: one click is promised over HTTPS only
            message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    message.set_content(_text(announcement))
    message.add_alternative(_html(announcement), subtype="html")
    attached = announcement.attachment
    if attached is not None:
        kind = ("application", "gzip") if attached.gzip else ("text", "csv")
        message.add_attachment(attached.content, maintype=kind[0], subtype=kind[1],
                               filename=one_line(attached.file_name, 150))  # fmt: skip
    return message


def facts(announcement: Announcement) -> list[tuple[str, str]]:
    facts = [(str(name), str(value)) for name, value in announcement.parameters.items()]
    if announcement.succeeded and announcement.rows is not None:
        facts.append(("rows", f"{announcement.rows:,}"))
    if announcement.succeeded and announcement.file_name:
        facts.append(("file", announcement.file_name))
    if not announcement.succeeded and announcement.reason:
        facts.append(("reason", announcement.reason))
    return facts


def outcome(announcement: Announcement) -> str:
    """How the export ended, in words: `is ready`, `did not succeed`."""
    return "is ready" if announcement.succeeded else "did not succeed"


def _headline(announcement: Announcement) -> str:
    if announcement.scheduled_by is not None:
        return (
            f"The export {announcement.title} of {announcement.scheduled_by}'s schedule "
            f"{outcome(announcement)}."
        )
    return f"Your export {announcement.title} {outcome(announcement)}."


def _text(announcement: Announcement) -> str:
    lines = [_headline(announcement), ""]
    lines += [f"  {name}: {value}" for name, value in facts(announcement)]
    lines += ["", _where(announcement), "", _why(announcement)]
    if announcement.unsubscribe_url is not None:
        lines.append(f"Stop these e-mails: {announcement.unsubscribe_url}")
    return "\n".join(lines) + "\n"


def _where(announcement: Announcement) -> str:
    """Where the reader finds the file: the job's page, a download link, or attached."""
    if announcement.attachment is not None:
        return f"The file is attached: {one_line(announcement.attachment.file_name, 150)}"
    if announcement.download_url is not None:
        until = announcement.download_expires_at
        when = f" (the link works until {until:%Y-%m-%d %H:%M} UTC)" if until else ""
        return f"Download it{when}: {announcement.download_url}"
    if announcement.job_url is not None:
        return f"Open it: {announcement.job_url}"
    return f"{announcement.scheduled_by or 'Its owner'} sees why on the dashboard."


def _why(announcement: Announcement) -> str:
    if announcement.address_added_by is not None:
        return (
            f"{announcement.address_added_by} added this address to "
            f"{announcement.scheduled_by}'s schedule."
        )
    if announcement.scheduled_by is not None:
        return f"{announcement.scheduled_by} made you a recipient of this schedule."
    if announcement.each_firing:
        return "You asked for an e-mail each time this schedule makes an export."
    if announcement.unsubscribe_url is not None:
        return "You asked to be told by e-mail whenever one of your exports ends."
    return "You asked to be told by e-mail when this export ends."


def _html(announcement: Announcement) -> str:
    e = html.escape
    rows = "".join(
        f'<tr><th scope="row" align="left">{e(name)}</th><td>{e(value)}</td></tr>'
        for name, value in facts(announcement)
    )
    return (
        "<!doctype html>\n<html><body>\n"
        f"<p>{e(_headline(announcement))}</p>\n"
        f"<table>{rows}</table>\n"
        f"<p>{_where_html(announcement)}</p>\n"
        f"<p>{e(_why(announcement))}{_stop(announcement)}</p>\n"
        "</body></html>\n"
    )


def _where_html(announcement: Announcement) -> str:
    e = html.escape
    if announcement.attachment is None and announcement.download_url is not None:
        link = f'<a href="{e(announcement.download_url, quote=True)}">Download the file</a>'
        until = announcement.download_expires_at
        return link + (f" (the link works until {until:%Y-%m-%d %H:%M} UTC)" if until else "")
    if announcement.attachment is None and announcement.job_url is not None:
        return f'<a href="{e(announcement.job_url, quote=True)}">Open the export</a>'
    return e(_where(announcement))


def _stop(announcement: Announcement) -> str:
    if announcement.unsubscribe_url is None:
        return ""
    href = html.escape(announcement.unsubscribe_url, quote=True)
    return f' <a href="{href}">Stop these e-mails</a>.'
