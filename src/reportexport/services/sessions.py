"""Dashboard sessions: signing in with a token, the session's CSRF token, signing out.

A token signs a person in once; the browser then holds only an opaque session id (256 random
bits), which the store keeps as its SHA-256 with an expiry, so a stolen cookie dies with the
session and a signed-out one is worth nothing. Every form of a session carries its CSRF token,
an HMAC of the session id that no other site can compute. Failed sign-ins are counted per
client address; past the limit that address waits, whatever it sends.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from reportexport.core.records import User
from reportexport.core.settings import default
from reportexport.services.errors import InvalidInputError, OverLimitError
from reportexport.services.people import PeopleService

SESSION_ID_LENGTH = 43  # token_urlsafe(32)
FAILURE_WINDOW_SECONDS = 60
# Sessions that ended or expired longer ago than this are forgotten at the next sign-in.
FORGET_AFTER = timedelta(days=1)
MAX_TRACKED_CLIENTS = 10_000


class SessionStore(Protocol):
    def start_session(
        self, session_id: str, *, user_id: int, client: str, expires_at: datetime
    ) -> None: ...

    def session_user(self, session_id: str, *, now: datetime) -> User | None: ...

    def end_session(self, session_id: str, *, now: datetime) -> bool: ...

    def forget_sessions(self, *, before: datetime) -> None: ...


class SignInLimitError(OverLimitError):
    title = "Too many sign-in attempts"


@dataclass(frozen=True, kw_only=True)
class Started:
    session_id: str
    user: User
    expires_at: datetime


class FailureCounter:
    """Failed attempts per client address in a sliding window (this process's own count)."""

    def __init__(self, limit: int, window_seconds: float, clock: Callable[[], float]) -> None:
        self.limit = limit
        self.window = window_seconds
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def wait_seconds(self, client: str) -> int:
        """How long `client` must wait before trying again; 0 when it may try now."""
        now = self.clock()
        with self._lock:
            recent = self._recent(client, now)
            if len(recent) < self.limit:
                return 0
            return max(1, int(recent[0] + self.window - now) + 1)

    def failed(self, client: str) -> None:
        now = self.clock()
        with self._lock:
            if client not in self._failures and len(self._failures) >= MAX_TRACKED_CLIENTS:
                for known in list(self._failures):
                    self._recent(known, now)
            self._failures.setdefault(client, deque()).append(now)

    def _recent(self, client: str, now: float) -> deque[float]:
        times = self._failures.get(client, deque())
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            self._failures.pop(client, None)
        return times


SESSION_LIFETIME = timedelta(hours=default("session_hours"))


class SessionService:
    def __init__(
        self,
        *,
        sessions: SessionStore,
        people: PeopleService,
        lifetime: timedelta = SESSION_LIFETIME,
        failures_per_minute: int = default("sign_in_failures_per_minute"),
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] | None = None,
        still_in: Callable[[str, User], bool] | None = None,
    ) -> None:
        self.still_in = still_in  # the company sign-in's check of an open session
        self.sessions = sessions
        self.people = people
        self.lifetime = lifetime
        self.clock = clock
        self.failures = FailureCounter(
            failures_per_minute, FAILURE_WINDOW_SECONDS, monotonic or time.monotonic
        )

    def sign_in(self, token: str, *, client: str) -> Started:
        """A new session for the person `token` names.

        SignInLimitError when `client` failed too often lately (the token is not even looked
        at); InvalidInputError naming `token` when it is unknown or revoked.
        """
        wait = self.failures.wait_seconds(client)
        if wait:
            raise SignInLimitError(
                f"too many failed sign-ins from {client}; try again in {wait} s",
                limit="sign_in_failures_per_minute",
                retry_after=wait,
            )
        user = self.people.authenticate(token.strip())
        if user is None:
            self.failures.failed(client)
            raise InvalidInputError("token", "unknown", "That token is unknown or revoked.")
        if user.is_service:
            raise InvalidInputError(
                "token", "service", f"{user.name} is a service account: it uses the API only."
            )
        now = self.clock()
        self.sessions.forget_sessions(before=now - FORGET_AFTER)
        session_id = secrets.token_urlsafe(32)
        expires_at = now + self.lifetime
        self.sessions.start_session(
            session_id, user_id=user.id, client=client[:200], expires_at=expires_at
        )
        return Started(session_id=session_id, user=user, expires_at=expires_at)

    def user_of(self, session_id: str) -> User | None:
        """The person of a live session, or None (unknown, ended, expired, revoked)."""
        if not _well_formed(session_id):
            return None
        user = self.sessions.session_user(session_id, now=self.clock())
        if user is not None and self.still_in is not None and not self.still_in(session_id, user):
            return None
        return user

    def sign_out(self, session_id: str) -> None:
        if _well_formed(session_id):
            self.sessions.end_session(session_id, now=self.clock())

    @staticmethod
    def csrf_token(session_id: str) -> str:
        """The token every form of this session carries: only the session's holder knows it."""
        return hmac.new(session_id.encode(), b"reportexport csrf", hashlib.sha256).hexdigest()

    def csrf_holds(self, session_id: str, given: str) -> bool:
        expected = self.csrf_token(session_id).encode()
        return _well_formed(session_id) and hmac.compare_digest(
            expected, given.encode("utf-8", "surrogatepass")
        )


def _well_formed(session_id: str) -> bool:
    return (
        len(session_id) == SESSION_ID_LENGTH
        and session_id.isascii()
        and all(c.isalnum() or c in "-_" for c in session_id)
    )
