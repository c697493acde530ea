"""People and their bearer tokens; a token is stored only as its SHA-256."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

from reportexport.records import ROLES, User
from reportexport.store.effects import EffectsQueries
from reportexport.store.errors import StoreError
from reportexport.store.rows import from_row


def token_hash(token: str) -> str:
    # Tokens are 256 random bits, so a plain hash is enough; no slow KDF is needed.
    return hashlib.sha256(token.encode()).hexdigest()


class UserExistsError(StoreError):
    """A user of that name exists already."""


class UsersQueries(EffectsQueries):
    def add_user(self, name: str, role: str) -> tuple[User, str]:
        """The new user and their token, which is shown once and never stored."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        token = "rxp_" + secrets.token_urlsafe(32)
        try:
            (row,) = self._fetch(
                "add_user", {"name": name, "role": role, "token_hash": token_hash(token)}
            )
        except Exception as exc:  # the drivers' unique-violation errors differ
            if "unique" in str(exc).lower():
                raise UserExistsError(f"a user named {name!r} already exists") from exc
            raise
        return self._user(row), token

    def user_by_token(self, token: str) -> User | None:
        rows = self._fetch("user_by_token_hash", {"token_hash": token_hash(token)})
        return self._user(rows[0]) if rows else None

    def user_by_name(self, name: str) -> User | None:
        rows = self._fetch("user_by_name", {"name": name})
        return self._user(rows[0]) if rows else None

    def list_users(self) -> list[User]:
        return [self._user(row) for row in self._fetch("list_users", {})]

    def revoke_user(self, name: str, *, now: datetime) -> bool:
        return bool(self._fetch("revoke_user", {"name": name, "now": self._timestamp(now)}))

    def record_download(self, job_id: int, person: str) -> None:
        self._fetch("record_download", {"job_id": job_id, "person": person})

    def job_downloads(self, job_id: int) -> list[tuple[str, datetime]]:
        """(person, when) of every download link given out for a job."""
        rows = self._fetch("job_downloads", {"job_id": job_id})
        return [
            (r["person"], datetime.fromisoformat(r["at"]) if isinstance(r["at"], str) else r["at"])
            for r in rows
        ]

    def _user(self, row: object) -> User:
        user: User = from_row(User, row, text_encoded=self.text_encoded)  # type: ignore[arg-type]
        return user
