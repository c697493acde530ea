"""Which hosts a chat channel's incoming-webhook URL may name: those of the setting `chat_hosts`.

A chat channel's URL goes through the webhooks' SSRF guard (`webhooks.ssrf`: its form at
registration, every resolved address at each sending, loopback and private ranges only with
`webhooks_allow_private`), and its host must also be one the operator named, checked when the
channel is registered and again at each sending (the setting may have changed since).
"""

from __future__ import annotations

from collections.abc import Sequence

from reportexport.webhooks.ssrf import parse_webhook_url


def chat_host_refusal(url: str, chat_hosts: Sequence[str], allow_private: bool) -> str | None:
    """Why `url` may not receive chat messages here, or None when it may; UnsafeDestinationError
    when the URL itself is not acceptable (see `parse_webhook_url`)."""
    host = parse_webhook_url(url, allow_private=allow_private).host.lower().rstrip(".")
    if not chat_hosts:
        return (
            "no chat host is allowed here: the setting chat_hosts is empty (an operator names "
            "the chat service's host there, such as hooks.slack.com)"
        )
    if host not in chat_hosts:
        return f"{host} is not a chat host allowed here (chat_hosts: {', '.join(chat_hosts)})"
    return None
