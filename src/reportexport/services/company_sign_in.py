"""Signing in to the dashboard through the company's identity provider (OpenID Connect).

- **First sign-in** makes the person: their name from the name claim (then the e-mail's local
  part, then the subject), made unique with a suffix when taken; they are known from then on by
  the provider's subject (`sub`), never by name or e-mail. The audit records it, the person
  acting being the identity provider.
- **Every sign-in and every check** makes the provider's groups and attributes of the person
  what the provider says now. Groups: the groups claim, through `group_map` (provider group to
  ours) or, without a map, the provider's groups named like ours; groups must exist here.
  Attributes: each `attribute=claim` pair. The provider's memberships and attributes are its
  own: an operator may add someone to a group besides (that membership stays across sign-ins),
  but a provider membership an operator removes comes back at the next check while the
  provider still says so; an attribute the provider gives replaces an operator's value of it.
  What the provider took away is withdrawn at once (services.access), recorded as done by
  the identity provider.
- **An open session** is checked with the provider again (the refresh grant) once it is older
  than `recheck`: a provider that refuses (the person left, was disabled, their grant was
  revoked) or does not answer ends the session. Leaving the company ends dashboard access
  within that bound. Sessions stay opaque and server-side.

Token sign-in stays for the API and for installs without a provider.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from reportexport.core.catalog import ATTRIBUTE_NAME, GROUP_NAME
from reportexport.core.records import AuditEntry, User
from reportexport.identity.provider import (
    Identity,
    OpenIDProvider,
    ProviderError,
    ProviderRefusedError,
    Started,
)
from reportexport.services.access import PROVIDER, AccessService
from reportexport.services.errors import InvalidInputError
from reportexport.services.refusals import AccessRefusals
from reportexport.services.sessions import Started as SessionStarted
from reportexport.store import DashboardSessions, UserExistsError, Users
from reportexport.store.groups import Groups

NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9._@+-]")
MAX_NAME = 100

log = logging.getLogger("reportexport.sign_in")


class SignInRefusedError(InvalidInputError):
    """The identity provider did not let the person in (or could not be asked)."""

    title = "Company sign-in refused"

    def __init__(self, detail: str) -> None:
        super().__init__("company", "refused", detail)


@dataclass(frozen=True, kw_only=True)
class ClaimMapping:
    """What the settings say to read from the provider's claims."""

    name_claim: str = "preferred_username"
    groups_claim: str = "groups"
    group_map: Mapping[str, str] | None = None  # provider group -> ours; None: same names
    attribute_claims: Mapping[str, str] | None = None  # our attribute -> claim


def parse_pairs(text: str, *, setting: str) -> dict[str, str]:
    """`a=b, c=d` as {a: b, c: d}; ValueError naming the setting for anything else."""
    pairs: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        left, equals, right = item.partition("=")
        if not equals or not left.strip() or not right.strip():
            raise ValueError(f"{setting}: {item!r} is not name=value")
        pairs[left.strip()] = right.strip()
    return pairs


class CompanySignIn:
    def __init__(
        self,
        *,
        provider: OpenIDProvider,
        users: Users,
        groups: Groups,
        sessions: DashboardSessions,
        access: AccessService,
        claims: ClaimMapping,
        lifetime: timedelta,
        recheck: timedelta,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        refusals: AccessRefusals | None = None,
    ) -> None:
        self.refusals = refusals or AccessRefusals()
        self.provider = provider
        self.users = users
        self.groups = groups
        self.sessions = sessions
        self.access = access
        self.claims = claims
        self.lifetime = lifetime
        self.recheck_after = recheck
        self.clock = clock
        for attribute in claims.attribute_claims or {}:
            if not ATTRIBUTE_NAME.fullmatch(attribute):
                raise ValueError(f"oidc_attribute_claims: {attribute!r} is no attribute's name")
        for ours in (claims.group_map or {}).values():
            if not GROUP_NAME.fullmatch(ours):
                raise ValueError(f"oidc_group_map: {ours!r} is no group's name")

    def start(self) -> Started:
        """Where to send the browser (SignInRefusedError when the provider does not answer)."""
        try:
            return self.provider.start()
        except ProviderError as exc:
            raise SignInRefusedError(f"the company sign-in is not available now: {exc}") from None

    def finish(self, *, code: str, code_verifier: str, nonce: str, client: str) -> SessionStarted:
        """The session of the person the provider's code stands for (made at their first
        sign-in); SignInRefusedError when the provider refused or could not be trusted, or an
        operator revoked or suspended the person (each refusal logged and counted)."""
        try:
            identity = self.provider.finish(code=code, code_verifier=code_verifier, nonce=nonce)
        except ProviderRefusedError as exc:
            self.refusals.refused("sign_in", "provider", f"the identity provider said {exc}")
            raise SignInRefusedError(f"your company's sign-in refused: {exc}") from None
        except ProviderError as exc:
            raise SignInRefusedError(f"the company sign-in failed: {exc}") from None
        user = self._person(identity)
        if user.revoked_at is not None or user.token_revoked_at is not None:
            self.refusals.refused("sign_in", "revoked", f"{user.name} is revoked")
            raise SignInRefusedError(f"{user.name} may not sign in here: an operator revoked them")
        if user.suspended_at is not None:
            why = f": {user.suspend_reason}" if user.suspend_reason else ""
            self.refusals.refused("sign_in", "suspended", f"{user.name} is suspended{why}")
            raise SignInRefusedError(
                f"{user.name} may not sign in here: {user.suspended_by or 'an operator'} "
                f"suspended them{why}"
            )
        self._sync(user, identity)
        now = self.clock()
        session_id = secrets.token_urlsafe(32)
        expires_at = now + self.lifetime
        self.sessions.start_provider_session(
            session_id, user_id=user.id, client=client[:200], expires_at=expires_at,
            refresh=identity.refresh_token, now=now,
        )  # fmt: skip
        log.info("%s signed in through the identity provider", user.name)
        return SessionStarted(session_id=session_id, user=user, expires_at=expires_at)

    def refused_at_provider(self, said: str) -> None:
        """The provider sent the browser back refused (the person denied, or was denied there):
        logged and counted as every refused access is."""
        self.refusals.refused("sign_in", "provider", f"the identity provider said {said}")

    def still_in(self, session_id: str, user: User) -> bool:
        """Whether an open session may go on: a token's session always; a provider's after
        asking the provider again once `recheck` has passed (False ends it: the provider
        refused, or did not answer)."""
        found = self.sessions.provider_check(session_id)
        if found is None:
            return True
        refresh, checked_at = found
        now = self.clock()
        if now - checked_at < self.recheck_after:
            return True
        try:
            if refresh is None:
                raise ProviderRefusedError("no_refresh_token", "the provider gave none")
            identity = self.provider.refresh(refresh)
        except ProviderError as exc:
            log.warning("the session of %s ends: the identity provider said %s", user.name, exc)
            self.sessions.end_session(session_id, now=now)
            return False
        if identity.subject != self.users.subject_of(user.id):
            self.sessions.end_session(session_id, now=now)
            return False
        self._sync(user, identity)
        self.sessions.record_provider_check(session_id, refresh=identity.refresh_token, now=now)
        return True

    # -- the person ------------------------------------------------------------------------------

    def _person(self, identity: Identity) -> User:
        found = self.users.user_by_subject(identity.subject)
        email = _text(identity.claims.get("email"))
        if found is not None:
            self.users.set_email(found.id, email)
            return found
        wanted = self._name(identity, email)
        for attempt in range(1, 100):
            name = wanted if attempt == 1 else f"{wanted[: MAX_NAME - 4]}-{attempt}"
            audit = AuditEntry(
                person=PROVIDER, action="add_person", object_kind="person", object_id=name,
                detail="at their first company sign-in",
            )  # fmt: skip
            try:
                return self.users.add_provider_user(
                    name, subject=identity.subject, email=email, audit=audit
                )
            except UserExistsError:
                again = self.users.user_by_subject(identity.subject)
                if again is not None:  # the same person's other sign-in made them meanwhile
                    return again
        raise SignInRefusedError(f"no free name for {wanted}: ask an operator")

    def _name(self, identity: Identity, email: str | None) -> str:
        for candidate in (
            _text(identity.claims.get(self.claims.name_claim)),
            email.partition("@")[0] if email else None,
            identity.subject,
        ):
            cleaned = NAME_CHARACTERS.sub("", candidate or "").lstrip("._@+-")[:MAX_NAME]
            if cleaned:
                return cleaned
        return "person-" + secrets.token_hex(4)

    def _sync(self, user: User, identity: Identity) -> None:
        claims = self.claims
        given = identity.claims.get(claims.groups_claim) or []
        provider_groups = (
            {g for g in given if isinstance(g, str)} if isinstance(given, list) else set()
        )
        known = {group.name for group in self.groups.list_groups()}
        if claims.group_map is not None:
            ours = {claims.group_map[g] for g in provider_groups if g in claims.group_map}
        else:
            ours = provider_groups
        attributes = {
            attribute: _text(identity.claims.get(claim))
            for attribute, claim in (claims.attribute_claims or {}).items()
        }
        lost_groups, lost_attributes = self.groups.sync_from_provider(
            user.id, user.name, groups=frozenset(ours & known), attributes=attributes
        )
        if lost_groups or lost_attributes:
            what = ", ".join(
                [f"the group {g}" for g in lost_groups]
                + [f"the attribute {a}" for a in lost_attributes]
            )
            self.access.withdraw(user.name, PROVIDER, f"the identity provider took away {what}")


def _text(value: Any) -> str | None:
    return value.strip()[:200] or None if isinstance(value, str) else None
