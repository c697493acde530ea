"""People and their bearer tokens; a token is stored only as its SHA-256."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from datetime import datetime

from reportexport.core.records import KINDS, ROLES, AuditEntry, ListedPerson, PeoplePage, User
from reportexport.store.audit import write_entry
from reportexport.store.driver import Driver, Row, Session
from reportexport.store.errors import StoreError, UniqueViolationError


def token_hash(token: str) -> str:
    # Tokens are 256 random bits, so a plain hash is enough; no slow KDF is needed.
    return hashlib.sha256(token.encode()).hexdigest()


class UserExistsError(StoreError):
    """A user of that name exists already."""


class Users:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.codec = driver.codec

    def add_user(
        self, name: str, role: str, *, kind: str = "person", audit: AuditEntry | None = None
    ) -> tuple[User, str]:
        """The new user (a person, or a service account) and their token, which is shown once
        and never stored."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        token = "rxp_" + secrets.token_urlsafe(32)
        params = {"name": name, "role": role, "token_hash": token_hash(token), "kind": kind}
        try:
            with self.driver.write() as session:
                row = session.row("add_user", params)
                if row is not None and audit is not None:
                    write_entry(session, audit)
        except UniqueViolationError as exc:
            if exc.table == "users":
                raise UserExistsError(f"a user named {name!r} already exists") from exc
            raise
        if row is None:
            raise StoreError("the database returned no user row")
        return self._user(row), token

    def add_first_users(self, people: Sequence[tuple[str, str]]) -> list[tuple[User, str]]:
        """`people` (names and roles) made together on a store that has nobody, with their
        tokens; nobody when it has someone, or when another process made its first people at the
        same time (both saw an empty store: one insert waits for the other's, then finds the
        name taken, and its whole transaction goes)."""
        made: list[tuple[Row, str]] = []
        try:
            with self.driver.write() as session:
                if session.row("any_user") is not None:
                    return []
                for name, role in people:
                    token = "rxp_" + secrets.token_urlsafe(32)
                    params = {"name": name, "role": role, "token_hash": token_hash(token),
                              "kind": "person"}  # fmt: skip
                    row = session.row("add_user", params)
                    if row is None:
                        raise StoreError("the database returned no user row")
                    made.append((row, token))
        except UniqueViolationError as exc:
            if exc.table == "users":
                return []
            raise
        return [(self._user(row), token) for row, token in made]

    def user_by_token(self, token: str) -> User | None:
        """The person a token belongs to, unless it was revoked."""
        with self.driver.read() as session:
            row = session.row("user_by_token_hash", {"token_hash": token_hash(token)})
        return self._user(row) if row else None

    def user_by_subject(self, subject: str) -> User | None:
        """The person the identity provider knows by `subject`."""
        with self.driver.read() as session:
            row = session.row("user_by_subject", {"subject": subject})
        return self._user(row) if row else None

    def add_provider_user(
        self, name: str, *, subject: str, email: str | None, audit: AuditEntry | None = None
    ) -> User:
        """A person made at their first company sign-in; UserExistsError when the name is
        taken. Their token is random and never shown."""
        token = "rxp_" + secrets.token_urlsafe(32)
        params = {"name": name, "token_hash": token_hash(token), "subject": subject,
                  "email": email}  # fmt: skip
        try:
            with self.driver.write() as session:
                row = session.row("add_provider_user", params)
                if row is not None and audit is not None:
                    write_entry(session, audit)
        except UniqueViolationError as exc:
            raise UserExistsError(f"a user named {name!r} already exists") from exc
        if row is None:
            raise StoreError("the database returned no user row")
        return self._user(row)

    def subject_of(self, user_id: int) -> str | None:
        """The identity provider's subject of a person (None: not made by the provider)."""
        with self.driver.read() as session:
            row = session.row("subject_of_user", {"id": user_id})
        return None if row is None else row["provider_subject"]

    def set_email(self, user_id: int, email: str | None) -> None:
        with self.driver.write() as session:
            session.rows("set_user_email", {"id": user_id, "email": email})

    def set_email_of(
        self, name: str, email: str | None, *, audit: AuditEntry | None = None
    ) -> bool:
        """Where a person's announcements by e-mail go (None: nowhere); False when there is no
        active person of that name. `audit` is recorded with it."""
        with self.driver.write() as session:
            if session.row("set_email_of_user", {"name": name, "email": email}) is None:
                return False
            if audit is not None:
                write_entry(session, audit)
        return True

    def set_notify_always(self, name: str, on: bool, *, audit: AuditEntry | None = None) -> bool:
        """Whether the person gets an e-mail when any of their exports ends; False when there
        is no active person of that name. `audit` is recorded with it."""
        with self.driver.write() as session:
            params = {"name": name, "enabled": 1 if on else 0}
            if session.row("set_notify_always_of_user", params) is None:
                return False
            if audit is not None:
                write_entry(session, audit)
        return True

    def user_by_name(self, name: str) -> User | None:
        with self.driver.read() as session:
            row = session.row("user_by_name", {"name": name})
        return self._user(row) if row else None

    def list_users(self) -> list[User]:
        with self.driver.read() as session:
            rows = session.rows("list_users")
        return [self._user(row) for row in rows]

    def people_page(
        self,
        *,
        now: datetime,
        name_holds: str | None = None,
        cursor: int | None = None,
        newest_first: bool = False,
        limit: int = 50,
    ) -> PeoplePage:
        """People (whose name holds `name_holds`, case-folded), with their live sessions."""
        pattern = None
        if name_holds:
            escaped = "".join("!" + c if c in "!%_" else c for c in name_holds.lower())
            pattern = f"%{escaped}%"
        params = {
            "now": self.codec.moment(now),
            "pattern": pattern,
            "cursor": cursor,
            "newest": 1 if newest_first else 0,
            "limit": limit + 1,
        }
        with self.driver.read() as session:
            rows = session.rows("people_page", params)
        people = tuple(
            ListedPerson(user=self._user(row), live_sessions=int(row["live_sessions"]))
            for row in rows[:limit]
        )
        more = len(rows) > limit and people
        return PeoplePage(people=people, next_cursor=people[-1].user.id if more else None)

    def replace_token(
        self, name: str, *, audit: AuditEntry | None = None
    ) -> tuple[User, str] | None:
        """A new token for an active person (the old one, or a revoked one, stops mattering);
        None when there is no active person of that name. Their dashboard sessions go on."""
        token = "rxp_" + secrets.token_urlsafe(32)
        with self.driver.write() as session:
            row = session.row("replace_token", {"name": name, "token_hash": token_hash(token)})
            if row is not None and audit is not None:
                write_entry(session, audit)
        return None if row is None else (self._user(row), token)

    def revoke_token(self, name: str, *, now: datetime, audit: AuditEntry | None = None) -> bool:
        """A person's token stops working and their dashboard sessions end, in one
        transaction; the person stays (a new token lets them in again). False when there is
        no active person of that name with a working token."""
        moment = self.codec.moment(now)
        with self.driver.write() as session:
            row = session.row("revoke_token", {"name": name, "now": moment})
            return self._revoked(session, row, moment, audit)

    def revoke_user(self, name: str, *, now: datetime, audit: AuditEntry | None = None) -> bool:
        """A person is revoked for good: their token stops working and their dashboard
        sessions end, in one transaction. False when there is no active person of that name."""
        moment = self.codec.moment(now)
        with self.driver.write() as session:
            row = session.row("revoke_user", {"name": name, "now": moment})
            return self._revoked(session, row, moment, audit)

    def suspend_user(
        self, name: str, *, now: datetime, by: str, reason: str, audit: AuditEntry | None = None
    ) -> bool:
        """A person's token and dashboard sessions stop at once, in one transaction, until
        they are resumed; False when there is no active, unsuspended person of that name."""
        moment = self.codec.moment(now)
        params = {"name": name, "now": moment, "by": by, "reason": reason}
        with self.driver.write() as session:
            row = session.row("suspend_user", params)
            return self._revoked(session, row, moment, audit)

    def resume_user(self, name: str, *, audit: AuditEntry | None = None) -> bool:
        """A suspended person's token works again; False when they were not suspended."""
        with self.driver.write() as session:
            row = session.row("resume_user", {"name": name})
            if row is not None and audit is not None:
                write_entry(session, audit)
        return row is not None

    @staticmethod
    def _revoked(
        session: Session, row: Row | None, moment: object, audit: AuditEntry | None
    ) -> bool:
        """End the revoked person's sessions and record the action (nothing when no row)."""
        if row is None:
            return False
        session.rows("end_sessions_of_user", {"user_id": int(row["id"]), "now": moment})
        if audit is not None:
            write_entry(session, audit)
        return True

    def _user(self, row: Row) -> User:
        columns = set(row.keys())  # sqlite3.Row: `in` looks at the values
        if "notify_always" not in columns:  # a schema before 0022 (an upgrade's own steps)
            row = {**dict(row), "notify_always": False}
        user: User = self.codec.record(User, row)
        return user
