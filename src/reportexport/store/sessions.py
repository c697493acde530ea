"""Dashboard sessions: an opaque id in the browser, its SHA-256 here, an expiry, an end."""

from __future__ import annotations

from datetime import datetime

from reportexport.core.records import User
from reportexport.store.driver import Driver
from reportexport.store.users import token_hash


class DashboardSessions:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.codec = driver.codec

    def start_session(
        self, session_id: str, *, user_id: int, client: str, expires_at: datetime
    ) -> None:
        """Record a new session; only the hash of `session_id` is kept."""
        params = {
            "session_hash": token_hash(session_id),
            "user_id": user_id,
            "client": client,
            "expires_at": self.codec.moment(expires_at),
        }
        with self.driver.write() as session:
            session.rows("start_session", params)

    def session_user(self, session_id: str, *, now: datetime) -> User | None:
        """The person of a live session (not ended, not expired, not revoked), if any."""
        params = {"session_hash": token_hash(session_id), "now": self.codec.moment(now)}
        with self.driver.read() as session:
            row = session.row("session_user", params)
        if row is None:
            return None
        user: User = self.codec.record(User, row)
        return user

    def end_session(self, session_id: str, *, now: datetime) -> bool:
        """End a session for good; False when it was not live."""
        params = {"session_hash": token_hash(session_id), "now": self.codec.moment(now)}
        with self.driver.write() as session:
            return session.row("end_session", params) is not None

    def forget_sessions(self, *, before: datetime) -> None:
        """Drop the rows of sessions that expired or ended before `before`."""
        with self.driver.write() as session:
            session.rows("forget_sessions", {"before": self.codec.moment(before)})

    def start_provider_session(
        self,
        session_id: str,
        *,
        user_id: int,
        client: str,
        expires_at: datetime,
        refresh: str | None,
        now: datetime,
    ) -> None:
        """A session started through the identity provider, checked with it at `now`."""
        params = {
            "session_hash": token_hash(session_id),
            "user_id": user_id,
            "client": client,
            "expires_at": self.codec.moment(expires_at),
            "refresh": refresh,
            "now": self.codec.moment(now),
        }
        with self.driver.write() as session:
            session.rows("start_provider_session", params)

    def provider_check(self, session_id: str) -> tuple[str | None, datetime] | None:
        """A provider session's refresh token and last check; None for a token's session."""
        with self.driver.read() as session:
            row = session.row("session_provider", {"session_hash": token_hash(session_id)})
        if row is None:
            return None
        return row["provider_refresh"], self.codec.moment_from(row["provider_checked_at"])

    def record_provider_check(self, session_id: str, *, refresh: str | None, now: datetime) -> None:
        params = {
            "session_hash": token_hash(session_id),
            "refresh": refresh,
            "now": self.codec.moment(now),
        }
        with self.driver.write() as session:
            session.rows("record_provider_check", params)
