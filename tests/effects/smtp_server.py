"""A real SMTP server on loopback (aiosmtpd) that keeps and parses what it accepts, and refuses
the addresses it is told to with a 5xx, as a mail server refuses an unknown mailbox."""

from __future__ import annotations

import email
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.policy import default
from typing import Any, TypeVar

from aiosmtpd.controller import Controller


@dataclass
class Mailbox:
    host: str = "127.0.0.1"
    port: int = 0
    refused: set[str] = field(default_factory=set)  # answered 550 at RCPT
    received: list[tuple[list[str], EmailMessage]] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)  # each message's bytes as they came
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_RCPT(  # noqa: N802 - aiosmtpd's hook name
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        if address in self.refused:
            return "550 5.1.1 no such mailbox here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        message = email.message_from_bytes(envelope.content, policy=default)
        assert isinstance(message, EmailMessage)
        with self.lock:
            self.received.append((list(envelope.rcpt_tos), message))
            self.raw.append(envelope.content)
        return "250 Message accepted for delivery"

    def messages_to(self, address: str) -> list[EmailMessage]:
        with self.lock:
            return [message for to, message in self.received if address in to]


M = TypeVar("M", bound=Mailbox)


class LoopbackController(Controller):
    """Listens on the port asked, or any free one (0), and says which."""

    def _trigger_server(self) -> None:
        assert self.server is not None
        self.port = self.server.sockets[0].getsockname()[1]
        super()._trigger_server()


@contextmanager
def running_mailbox(mailbox: M, **smtp: Any) -> Iterator[M]:
    """`mailbox` served on loopback; `smtp` are aiosmtpd's own options (`ssl_context` for TLS
    from the start, `tls_context` and `require_starttls`, `authenticator`, ...)."""
    controller = LoopbackController(mailbox, hostname=mailbox.host, port=0, **smtp)
    controller.start()
    mailbox.port = controller.port
    try:
        yield mailbox
    finally:
        controller.stop()
