"""People and their API tokens: sign-in, and the operators' tools to add and revoke."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

from reportexport.records import ROLES, User
from reportexport.services.errors import ConflictError, InvalidInputError
from reportexport.store import UserExistsError, Users
from reportexport.text import unsafe_text

# Names appear in URLs, logs and CSV-free places alike: keep them plain.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")
MAX_TOKEN_LENGTH = 200


class PeopleService:
    def __init__(
        self, *, users: Users, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self.users = users
        self.clock = clock

    def authenticate(self, token: str) -> User | None:
        """The person a bearer token belongs to, unless unknown or revoked."""
        if not token or len(token) > MAX_TOKEN_LENGTH or unsafe_text(token) is not None:
            return None
        return self.users.user_by_token(token)

    def add(self, name: str, role: str = "user") -> tuple[User, str]:
        """A new person and their token, which is shown once and stored only hashed."""
        if unsafe_text(name) is not None or not NAME.fullmatch(name):
            raise InvalidInputError(
                "name",
                "pattern",
                "a name is 1 to 100 letters, digits and . _ @ + -, starting with a letter or digit",
            )
        if role not in ROLES:
            raise InvalidInputError("role", "choices", f"role is one of {', '.join(ROLES)}")
        if self.users.user_by_name(name) is not None:
            raise ConflictError(f"a user named {name!r} already exists", title="User exists")
        try:
            return self.users.add_user(name, role)
        except UserExistsError as exc:  # a concurrent add of the same name
            raise ConflictError(str(exc), title="User exists") from None

    def get(self, name: str) -> User | None:
        if unsafe_text(name) is not None:
            return None
        return self.users.user_by_name(name)

    def list(self) -> list[User]:
        return self.users.list_users()

    def new_token(self, name: str) -> tuple[User, str] | None:
        """A new token for an active person, shown once; their old token stops working (their
        dashboard sessions go on). None when there is no active person of that name."""
        if unsafe_text(name) is not None:
            return None
        return self.users.replace_token(name)

    def revoke(self, name: str) -> bool:
        """Revoke a person's token; False when there is no active person of that name."""
        if unsafe_text(name) is not None:
            return False
        return self.users.revoke_user(name, now=self.clock())
