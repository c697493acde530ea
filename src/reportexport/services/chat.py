"""Chat channels: operators register a channel's incoming-webhook URL for one person's
announcements or for everyone's (or, `schedules_only`, for the schedules it is added to), list
them (without their URLs, which carry the channel's credential) and remove them; each change is
recorded in the audit in its transaction.

A URL is refused at registration when its form is not a webhook URL's (`webhooks.ssrf`), or its
host is not one the setting `chat_hosts` names (an empty list allows none); every address the
name resolves to is checked at each sending, as for webhooks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit

from reportexport.chat.hosts import chat_host_refusal
from reportexport.core.records import AuditAction, AuditEntry, ChatChannel
from reportexport.core.settings import default, host_names
from reportexport.core.text import quoted, unsafe_text
from reportexport.services.errors import ForbiddenError, InvalidInputError, NotFoundError
from reportexport.services.exports import MAX_ID, Person
from reportexport.store import ChatChannels, Users
from reportexport.webhooks.ssrf import UnsafeDestinationError

MAX_URL_LENGTH = 2000
MAX_NAME_LENGTH = 80


@dataclass(frozen=True, kw_only=True)
class ChannelView:
    """A chat channel as it is shown: its host, never its URL."""

    id: int
    owner: str | None
    name: str
    host: str
    created_at: datetime
    disabled_at: datetime | None
    disabled_reason: str | None
    schedules_only: bool = False

    @classmethod
    def of(cls, channel: ChatChannel) -> ChannelView:
        return cls(
            id=channel.id,
            owner=channel.owner,
            name=channel.name,
            host=(urlsplit(channel.url).hostname or "").lower(),
            created_at=channel.created_at,
            disabled_at=channel.disabled_at,
            disabled_reason=channel.disabled_reason,
            schedules_only=channel.schedules_only,
        )


class ChatService:
    def __init__(
        self,
        *,
        channels: ChatChannels,
        users: Users,
        chat_hosts: Sequence[str] = host_names(default("chat_hosts")),
        allow_private: bool = False,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.channels = channels
        self.users = users
        self.chat_hosts = tuple(chat_hosts)
        self.allow_private = allow_private
        self.clock = clock

    def add(
        self, person: Person, url: str, name: str, *, owner: str | None,
        schedules_only: bool = False,
    ) -> ChannelView:  # fmt: skip
        """A new channel for `owner`'s announcements (None: everyone's); `schedules_only`: for
        those of the schedules it is added to alone (which `owner`, or an operator, adds it to)."""
        _operator(person)
        if len(url) > MAX_URL_LENGTH:
            raise InvalidInputError("url", "max_length", f"at most {MAX_URL_LENGTH} characters")
        try:
            refused = chat_host_refusal(url, self.chat_hosts, self.allow_private)
        except UnsafeDestinationError as exc:
            raise InvalidInputError("url", "safe", str(exc), title="Unsafe chat URL") from None
        if refused is not None:
            raise InvalidInputError("url", "chat_hosts", refused, title="Chat host not allowed")
        if not 1 <= len(name) <= MAX_NAME_LENGTH or unsafe_text(name) is not None:
            why = unsafe_text(name) or f"is 1 to {MAX_NAME_LENGTH} characters"
            raise InvalidInputError("name", "text", f"the channel's name {why}")
        if owner is not None:
            if unsafe_text(owner) is not None:
                raise InvalidInputError("owner", "text", f"the owner's name {unsafe_text(owner)}")
            if self.users.user_by_name(owner) is None:
                raise NotFoundError(f"no person named {quoted(owner)}")
        whose = f"{owner}'s schedules" if owner else "the schedules it is added to"
        meant = whose if schedules_only else (owner or "everyone")
        audit = _audit(person, "add_chat_channel", "", f"{name} for {meant}")
        channel = self.channels.add_chat_channel(
            owner=owner, name=name, url=url, schedules_only=schedules_only, audit=audit
        )
        return ChannelView.of(channel)

    def list(self, person: Person, owner: str | None = None) -> list[ChannelView]:
        """Every channel (or one owner's), oldest first; the removed ones too."""
        _operator(person)
        return [ChannelView.of(c) for c in self.channels.list_chat_channels(owner)]

    def remove(self, person: Person, channel_id: int) -> bool:
        """Stop sending to a channel; False when it was removed already. An announcement
        waiting for it is no longer held open by it."""
        _operator(person)
        found = None
        if 1 <= channel_id <= MAX_ID:
            try:
                found = self.channels.get_chat_channel(channel_id)
            except LookupError:
                found = None
        if found is None:
            raise NotFoundError(f"no chat channel {channel_id}")
        return self.channels.disable_chat_channel(
            channel_id,
            now=self.clock(),
            reason=f"removed by {person.name}",
            audit=_audit(person, "remove_chat_channel", str(channel_id)),
        )


def _operator(person: Person) -> None:
    if not person.is_operator:
        raise ForbiddenError("only operators manage chat channels")


def _audit(
    person: Person, action: AuditAction, channel_id: str, detail: str | None = None
) -> AuditEntry:
    return AuditEntry(
        person=person.name,
        action=action,
        object_kind="chat_channel",
        object_id=channel_id,
        detail=detail,
    )
