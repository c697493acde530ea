"""Chat channels: where announcements go in chat, for one owner or for everyone (migration
0021). Each enabled channel of a job's owner, and each global one, gets a delivery record when
the job ends (see `deliveries`), but one registered `schedules_only`, which gets those of the
schedules it is added to alone (migration 0025, `ScheduleStore.add_channel`)."""

from __future__ import annotations

from datetime import datetime

from reportexport.core.records import AuditEntry, ChatChannel
from reportexport.store.audit import write_entry
from reportexport.store.driver import Driver
from reportexport.store.errors import StoreError


class ChannelNotFoundError(StoreError, LookupError):
    pass


class ChatChannels:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.codec = driver.codec

    def add_chat_channel(
        self,
        *,
        owner: str | None,
        name: str,
        url: str,
        schedules_only: bool = False,
        audit: AuditEntry | None = None,
    ) -> ChatChannel:
        """A new channel; `audit` (naming it by its new id) is recorded with it."""
        params = {"owner": owner, "name": name, "url": url, "schedules_only": int(schedules_only)}
        with self.driver.write() as session:
            row = session.row("add_chat_channel", params)
            if row is None:
                raise StoreError("the database returned no chat channel row")
            if audit is not None:
                write_entry(session, audit, created_id=row["id"])
        return self._channel(row)

    def list_chat_channels(self, owner: str | None = None) -> list[ChatChannel]:
        """An owner's channels, or every channel when `owner` is None."""
        with self.driver.read() as session:
            rows = session.rows("list_chat_channels", {"owner": owner})
        return [self._channel(r) for r in rows]

    def get_chat_channel(self, channel_id: int) -> ChatChannel:
        with self.driver.read() as session:
            row = session.row("get_chat_channel", {"id": channel_id})
        if row is None:
            raise ChannelNotFoundError(f"no chat channel {channel_id}")
        return self._channel(row)

    def disable_chat_channel(
        self, channel_id: int, *, now: datetime, reason: str, audit: AuditEntry | None = None
    ) -> bool:
        """Stop sending to a channel; False when it was disabled already."""
        params = {"id": channel_id, "now": self.codec.moment(now), "reason": reason}
        with self.driver.write() as session:
            if session.row("disable_chat_channel", params) is None:
                return False
            if audit is not None:
                write_entry(session, audit)
        return True

    def _channel(self, row: object) -> ChatChannel:
        channel: ChatChannel = self.codec.record(ChatChannel, row)  # type: ignore[arg-type]
        return channel
