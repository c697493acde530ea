"""Send one message over SMTP with the standard library's `smtplib`.

The effects runner is synchronous (it runs in a thread, like every store and the worker), so
the blocking `smtplib` fits it; `aiosmtplib` would need an event loop of its own for nothing.
One connection per message: an announcement is rare, and a connection kept open would be one
more thing to watch. What the server says decides what happens next: a 5xx refusal of the
recipient (at RCPT or DATA) is for good, and that destination alone is given up; anything
else (no connection, a 4xx, a refused sign-in or sender, which are the server's or our
settings' problem and not the address's) is tried again later.
"""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage

SECURITY = ("starttls", "tls", "none")


@dataclass(frozen=True, kw_only=True)
class SmtpServer:
    """Where and how announcements by e-mail are sent (the `smtp_*` settings)."""

    host: str
    port: int
    security: str
    user: str
    password: str
    sender: str
    timeout_seconds: float

    def __post_init__(self) -> None:
        if self.security not in SECURITY:
            raise ValueError(
                f"smtp_security must be one of {', '.join(SECURITY)}, not {self.security!r}"
            )
        if "@" not in self.sender or any(c.isspace() for c in self.sender):
            raise ValueError(f"smtp_from must be an e-mail address, not {self.sender!r}")
        if self.password and not self.user:
            raise ValueError("smtp_password is set without smtp_user")


@dataclass(frozen=True, kw_only=True)
class Sent:
    """What came of one sending: delivered, or a problem that is for good (`refused`) or not."""

    delivered: bool
    code: int | None = None
    problem: str | None = None
    refused: bool = False


def send(server: SmtpServer, message: EmailMessage, recipient: str) -> Sent:
    """Hand `message` to the server for `recipient` alone."""
    try:
        with _connect(server) as smtp:
            if server.security == "starttls":
                smtp.starttls(context=ssl.create_default_context())
            if server.user:
                smtp.login(server.user, server.password)
            smtp.send_message(message, from_addr=server.sender, to_addrs=[recipient])
    except smtplib.SMTPRecipientsRefused as exc:
        code, reply = next(iter(exc.recipients.values()), (None, b""))
        return _refusal(code, reply)
    except smtplib.SMTPDataError as exc:
        return _refusal(exc.smtp_code, exc.smtp_error)
    except smtplib.SMTPResponseException as exc:  # sign-in, sender, a 4xx: not the address's
        return Sent(
            delivered=False, code=exc.smtp_code, problem=_said(exc.smtp_code, exc.smtp_error)
        )
    except (smtplib.SMTPException, OSError) as exc:
        return Sent(delivered=False, problem=f"{type(exc).__name__}: {exc}"[:500])
    return Sent(delivered=True, code=250)


def _connect(server: SmtpServer) -> smtplib.SMTP:
    if server.security == "tls":
        return smtplib.SMTP_SSL(
            server.host,
            server.port,
            timeout=server.timeout_seconds,
            context=ssl.create_default_context(),
        )
    return smtplib.SMTP(server.host, server.port, timeout=server.timeout_seconds)


def _refusal(code: int | None, reply: bytes | str) -> Sent:
    refused = code is not None and 500 <= code < 600
    return Sent(delivered=False, code=code, problem=_said(code, reply), refused=refused)


def _said(code: int | None, reply: bytes | str) -> str:
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    return f"SMTP {code}: {' '.join(text.split())}"[:500]
