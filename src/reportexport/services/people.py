"""People and their API tokens: sign-in, and the operators' tools to add, list and revoke.

A person has one token, stored only hashed. An operator may give them a new one (shown once),
revoke the token alone (the person stays, with no way in until given a new token), or revoke
the person for good; either revocation ends their dashboard sessions in the same transaction.
What an operator does here is recorded in the audit, in that transaction too. The command line
acts as an operator; a call without `by` is the program's own (its first people at start-up).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from reportexport.core.links import (
    LinkError,
    UnsubscribeLink,
    address_digest,
    verify_unsubscribe,
)
from reportexport.core.records import (
    ROLES,
    AuditAction,
    AuditEntry,
    PeoplePage,
    Recipient,
    ScheduleAddress,
    User,
)
from reportexport.core.settings import default, host_names
from reportexport.core.text import unsafe_text
from reportexport.mail.message import domain_refusal, is_mailbox
from reportexport.services.errors import (
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
)
from reportexport.services.exports import MAX_ID, MAX_PAGE, Person
from reportexport.store import UserExistsError, Users

# Names appear in URLs, logs and CSV-free places alike: keep them plain.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")
MAX_TOKEN_LENGTH = 200
# An unsubscribe link's token: a name of up to 100 characters and an address's digest, signed.
MAX_UNSUBSCRIBE_TOKEN = 400
MAX_SEARCH = 100


class RecipientBook(Protocol):
    """The schedules' recipients, as an unsubscribe link removes one."""

    def recipient(self, schedule_id: int, person: str) -> Recipient | None: ...

    def remove_recipient(self, schedule_id: int, person: str) -> bool: ...

    def addresses(self, schedule_id: int) -> Sequence[ScheduleAddress]: ...

    def remove_address(
        self, schedule_id: int, address: str, *, audit: AuditEntry | None = None
    ) -> bool: ...


# Who the audit says removed an outside address that followed its e-mail's one-click link.
UNSUBSCRIBE_LINK = "unsubscribe link"


@dataclass(frozen=True, kw_only=True)
class Unsubscribed:
    """What an unsubscribe link names, and whether its e-mails still come (`receiving`)."""

    person: User | None  # None: an outside address of the schedule
    schedule_id: int | None  # None: the e-mail whenever any of their exports ends
    receiving: bool

    @property
    def who(self) -> str:
        """Who gets these e-mails, as the page names them."""
        return "This address" if self.person is None else self.person.name


class PeopleService:
    def __init__(
        self,
        *,
        users: Users,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        email_domains: Sequence[str] = host_names(default("email_domains")),
        link_secret: bytes | None = None,
        recipients: RecipientBook | None = None,
    ) -> None:
        self.users = users
        self.clock = clock
        self.email_domains = tuple(email_domains)  # empty: any domain
        self.link_secret = link_secret  # signs the e-mails' unsubscribe links
        self.recipients = recipients  # the schedules' recipients, whom a link removes

    def authenticate(self, token: str) -> User | None:
        """The person a bearer token belongs to, unless unknown or revoked."""
        if not token or len(token) > MAX_TOKEN_LENGTH or unsafe_text(token) is not None:
            return None
        return self.users.user_by_token(token)

    def add(
        self, name: str, role: str = "user", *, by: Person | None = None, service: bool = False
    ) -> tuple[User, str]:
        """A new person (or, with `service`, a service account: a token without a human, for
        the API only) and their token, which is shown once and stored only hashed."""
        audit = self._audit(
            by, "add_person", name, f"as {role}" + (", a service account" if service else "")
        )
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
            return self.users.add_user(
                name, role, kind="service" if service else "person", audit=audit
            )
        except UserExistsError as exc:  # a concurrent add of the same name
            raise ConflictError(str(exc), title="User exists") from None

    def get(self, name: str) -> User | None:
        if unsafe_text(name) is not None:
            return None
        return self.users.user_by_name(name)

    def list(self) -> list[User]:
        return self.users.list_users()

    def page(
        self,
        person: Person,
        *,
        search: str | None = None,
        cursor: int | None = None,
        newest_first: bool = False,
        limit: int = 50,
    ) -> PeoplePage:
        """Operators: everyone (or those whose name holds `search`), with their live sessions."""
        if not person.is_operator:
            raise ForbiddenError("only operators see everyone")
        words = (search or "").strip()
        if unsafe_text(words) is not None or len(words) > MAX_SEARCH:
            raise InvalidInputError("search", "text", f"a search is at most {MAX_SEARCH} letters")
        if cursor is not None and not 1 <= cursor <= MAX_ID:
            raise InvalidInputError("cursor", "range", f"cursor must be 1 to {MAX_ID}")
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInputError("limit", "range", f"limit must be 1 to {MAX_PAGE}")
        return self.users.people_page(
            now=self.clock(),
            name_holds=words or None,
            cursor=cursor,
            newest_first=newest_first,
            limit=limit,
        )

    def new_token(self, name: str, *, by: Person | None = None) -> tuple[User, str] | None:
        """A new token for an active person, shown once; their old token stops working (their
        dashboard sessions go on), and a revoked token is replaced. None when there is no
        active person of that name."""
        audit = self._audit(by, "new_token", name)
        if unsafe_text(name) is not None:
            return None
        return self.users.replace_token(name, audit=audit)

    def revoke_token(self, name: str, *, by: Person | None = None) -> bool:
        """The person's token stops working and their dashboard sessions end; the person
        stays. False when there is no active person of that name with a working token."""
        audit = self._audit(by, "revoke_token", name, "their dashboard sessions ended")
        _not_yourself(by, name)
        if unsafe_text(name) is not None:
            return False
        return self.users.revoke_token(name, now=self.clock(), audit=audit)

    def revoke(self, name: str, *, by: Person | None = None) -> bool:
        """Revoke a person (their token, for good) and end their dashboard sessions; False
        when there is no active person of that name."""
        audit = self._audit(by, "revoke_person", name, "their dashboard sessions ended")
        _not_yourself(by, name)
        if unsafe_text(name) is not None:
            return False
        return self.users.revoke_user(name, now=self.clock(), audit=audit)

    def suspend(self, name: str, *, by: Person, reason: str = "") -> bool:
        """The person's token and dashboard sessions stop at once until resumed (False when
        there is no active, unsuspended person of that name); `withdraw` (the access service's)
        then ends what they had queued and scheduled."""
        why = reason.strip() or f"suspended by {by.name}"
        audit = self._audit(by, "suspend_person", name, why)
        _not_yourself(by, name)
        if unsafe_text(name) is not None or unsafe_text(why) is not None or len(why) > 500:
            raise InvalidInputError("reason", "text", "a reason is at most 500 plain characters")
        return self.users.suspend_user(name, now=self.clock(), by=by.name, reason=why, audit=audit)

    def resume(self, name: str, *, by: Person) -> bool:
        """A suspended person's token works again (False when they were not suspended)."""
        audit = self._audit(by, "resume_person", name)
        if unsafe_text(name) is not None:
            return False
        return self.users.resume_user(name, audit=audit)

    def set_email(self, name: str, address: str | None, *, by: Person) -> bool:
        """Where the person's announcements by e-mail go (None: nowhere); False when there is
        no active person of that name."""
        audit = self._audit(by, "set_email", name, address or "removed")
        if address is not None and not is_mailbox(address):
            raise InvalidInputError(
                "email", "pattern", "an e-mail address is one mailbox: name@example.com"
            )
        refused = None if address is None else domain_refusal(address, self.email_domains)
        if refused is not None:
            raise InvalidInputError("email", "domain", refused, title="E-mail domain not allowed")
        if unsafe_text(name) is not None:
            return False
        return self.users.set_email_of(name, address, audit=audit)

    def set_notify_always(self, name: str, on: bool, *, by: Person) -> User:
        """Whether the person gets an e-mail when any of their exports ends (their own choice,
        or an operator's, recorded in the audit). NotFoundError when there is no active person
        of that name (or it is someone else's and `by` is no operator); InvalidInputError
        (`notify_always`) when turning it on for a person without an address, or with one
        outside `email_domains`."""
        if not by.is_operator and by.name != name:
            raise NotFoundError(f"no person {name!r}")  # another person's settings are not yours
        audit = None
        if by.is_operator:
            audit = self._audit(by, "set_notify_always", name, "on" if on else "off")
        person = self.get(name)
        if person is None or person.revoked_at is not None:
            raise NotFoundError(f"no person {name!r}")
        if on:
            if person.email is None:
                raise InvalidInputError(
                    "notify_always",
                    "email",
                    f"{name} has no e-mail address here; an operator sets it "
                    "(reportexport users email NAME ADDRESS)",
                    title="No e-mail address",
                )
            refused = domain_refusal(person.email, self.email_domains)
            if refused is not None:
                raise InvalidInputError(
                    "notify_always", "domain", refused, title="E-mail domain not allowed"
                )
        if not self.users.set_notify_always(name, on, audit=audit):
            raise NotFoundError(f"no person {name!r}")
        found = self.get(name)
        assert found is not None
        return found

    def unsubscribed_by_link(self, token: str, *, stop: bool) -> Unsubscribed:
        """What an e-mail's unsubscribe link (RFC 8058) stops, stopped with `stop`: the e-mail
        its person gets whenever an export of theirs ends, or, for a link naming a schedule,
        their place among its recipients. NotFoundError for a link that is malformed, forged,
        names no active person, or was sent to an address that is no longer theirs. The
        signature is what allows it: no session, no CSRF token (a mail provider POSTs to it
        with neither)."""
        if self.link_secret is None or len(token) > MAX_UNSUBSCRIBE_TOKEN:
            raise NotFoundError("no such unsubscribe link")
        try:
            link = verify_unsubscribe(self.link_secret, token)
        except LinkError:
            raise NotFoundError("no such unsubscribe link") from None
        if link.person is None:
            return self._address_unsubscribed(link, stop=stop)
        name = link.person
        person = self.get(name)
        if person is None or person.revoked_at is not None:
            raise NotFoundError("no such unsubscribe link")
        if person.email is None or address_digest(person.email) != link.address_digest:
            raise NotFoundError("no such unsubscribe link")  # sent to an address no longer theirs
        if link.schedule_id is not None:
            if self.recipients is None:
                raise NotFoundError("no such unsubscribe link")
            if stop:
                self.recipients.remove_recipient(link.schedule_id, name)
            receiving = self.recipients.recipient(link.schedule_id, name) is not None
            return Unsubscribed(person=person, schedule_id=link.schedule_id, receiving=receiving)
        if stop and person.notify_always and not self.users.set_notify_always(name, False):
            raise NotFoundError("no such unsubscribe link")
        found = self.get(name)
        assert found is not None
        return Unsubscribed(person=found, schedule_id=None, receiving=found.notify_always)

    def _address_unsubscribed(self, link: UnsubscribeLink, *, stop: bool) -> Unsubscribed:
        """An outside address of a schedule taken off it by its link (the address is found
        by its digest among the schedule's: the link does not name it)."""
        if self.recipients is None or link.schedule_id is None:
            raise NotFoundError("no such unsubscribe link")
        found = [
            a.address
            for a in self.recipients.addresses(link.schedule_id)
            if address_digest(a.address) == link.address_digest
        ]
        if stop:
            for address in found:
                audit = AuditEntry(
                    person=UNSUBSCRIBE_LINK, action="remove_schedule_address",
                    object_kind="schedule", object_id=str(link.schedule_id),
                    detail=f"{address}, by its one-click link",
                )  # fmt: skip
                self.recipients.remove_address(link.schedule_id, address, audit=audit)
        receiving = bool(found) and not stop
        return Unsubscribed(person=None, schedule_id=link.schedule_id, receiving=receiving)

    @staticmethod
    def _audit(
        by: Person | None, action: AuditAction, name: str, detail: str | None = None
    ) -> AuditEntry | None:
        """The entry of an operator's action; ForbiddenError when `by` is no operator."""
        if by is None:
            return None
        if not by.is_operator:
            raise ForbiddenError("only operators add people and give or revoke their tokens")
        return AuditEntry(
            person=by.name, action=action, object_kind="person", object_id=name, detail=detail
        )


def _not_yourself(by: Person | None, name: str) -> None:
    """An operator does not lock themself out: another operator (or the shell) revokes them."""
    if by is not None and by.name == name:
        raise ConflictError(
            "you cannot revoke your own token here; another operator or "
            f"`reportexport users revoke {name}` can",
            title="That is you",
        )
