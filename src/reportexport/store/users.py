"""People and their bearer tokens; a token is stored only as its SHA-256."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

from reportexport.records import ROLES, User
from reportexport.store.driver import Driver, Row
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

    def add_user(self, name: str, role: str) -> tuple[User, str]:
        """The new user and their token, which is shown once and never stored."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        token = "rxp_" + secrets.token_urlsafe(32)
        params = {"name": name, "role": role, "token_hash": token_hash(token)}
        try:
            with self.driver.write() as session:
                row = session.row("add_user", params)
        except UniqueViolationError as exc:
            if exc.table == "users":
                raise UserExistsError(f"a user named {name!r} already exists") from exc
            raise
        if row is None:
            raise StoreError("the database returned no user row")
        return self._user(row), token

    def user_by_token(self, token: str) -> User | None:
        """The person a token belongs to, unless it was revoked."""
        with self.driver.read() as session:
            row = session.row("user_by_token_hash", {"token_hash": token_hash(token)})
        return self._user(row) if row else None

    def user_by_name(self, name: str) -> User | None:
        with self.driver.read() as session:
            row = session.row("user_by_name", {"name": name})
        return self._user(row) if row else None

    def list_users(self) -> list[User]:
        with self.driver.read() as session:
            rows = session.rows("list_users")
        return [self._user(row) for row in rows]

    def replace_token(self, name: str) -> tuple[User, str] | None:
        """A new token for an active person (the old one stops working); None when there is
        no active person of that name."""
        token = "rxp_" + secrets.token_urlsafe(32)
        with self.driver.write() as session:
            row = session.row("replace_token", {"name": name, "token_hash": token_hash(token)})
        return None if row is None else (self._user(row), token)

    def revoke_user(self, name: str, *, now: datetime) -> bool:
        params = {"name": name, "now": self.codec.moment(now)}
        with self.driver.write() as session:
            return session.row("revoke_user", params) is not None

    def _user(self, row: Row) -> User:
        user: User = self.codec.record(User, row)
        return user
