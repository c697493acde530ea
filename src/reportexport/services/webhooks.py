"""Webhook endpoints: who may register, rotate, remove and test which endpoint.

A person registers endpoints for their own events; an operator may register one for any
existing user, or the global endpoint that receives every event. Registration refuses what the
URL itself shows to be unsafe (see `webhooks.ssrf.check_webhook_url`); every delivery checks
every address the name resolves to. What an operator does to an endpoint (add, rotate, disable,
test) is recorded in the audit, in the same transaction as the change.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx

from reportexport.core.records import AuditAction, AuditEntry, WebhookEndpoint
from reportexport.core.text import quoted, unsafe_text
from reportexport.services.errors import (
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
)
from reportexport.services.exports import MAX_ID, Person
from reportexport.store import GlobalEndpointExistsError, OperatorAudit, Users, WebhookEndpoints
from reportexport.webhooks.resolving import within
from reportexport.webhooks.sender import send
from reportexport.webhooks.signing import new_secret, signed_headers
from reportexport.webhooks.ssrf import (
    Resolver,
    UnsafeDestinationError,
    check_destination,
    check_webhook_url,
    system_resolver,
)

MAX_URL_LENGTH = 2000
MAX_OVERLAP_HOURS = 720


TEST_RESOLVE_SECONDS = 2.0
TEST_STEP_SECONDS = 3.0


@dataclass(frozen=True, kw_only=True)
class TestDelivery:
    delivered: bool
    response_status: int | None
    problem: str | None


@dataclass(frozen=True, kw_only=True)
class EndpointPage:
    endpoints: list[WebhookEndpoint]
    next_cursor: int | None


class WebhookService:
    def __init__(
        self,
        *,
        endpoints: WebhookEndpoints,
        users: Users,
        audit: OperatorAudit,
        allow_private: bool = False,
        resolver: Resolver = system_resolver,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.endpoints = endpoints
        self.users = users
        self.audit = audit
        self.allow_private = allow_private
        self.resolver = resolver
        self.clock = clock

    def add(
        self, person: Person, url: str, *, everyone: bool = False, owner: str | None = None
    ) -> WebhookEndpoint:
        """A new endpoint (its secret is shown once) for `owner` (default: the person)."""
        if everyone and not person.is_operator:
            raise ForbiddenError("only operators register the global endpoint")
        if owner is not None and unsafe_text(owner) is not None:
            raise InvalidInputError("owner", "text", f"the owner's name {unsafe_text(owner)}")
        if owner is not None and owner != person.name and not person.is_operator:
            raise ForbiddenError("only operators register endpoints for someone else")
        if len(url) > MAX_URL_LENGTH:
            raise InvalidInputError("url", "max_length", f"at most {MAX_URL_LENGTH} characters")
        try:
            check_webhook_url(url, allow_private=self.allow_private)
        except UnsafeDestinationError as exc:
            raise InvalidInputError("url", "safe", str(exc), title="Unsafe webhook URL") from None
        receiver = None if everyone else (owner or person.name)
        if receiver is not None and self.users.user_by_name(receiver) is None:
            raise InvalidInputError("owner", "unknown", f"no user named {quoted(receiver)}")
        audit = self._audit(person, "add_webhook_endpoint", "", f"for {receiver or 'everyone'}")
        try:
            return self.endpoints.add_webhook_endpoint(
                owner=receiver, url=url, secret=new_secret(), audit=audit
            )
        except GlobalEndpointExistsError:
            found = [
                str(e.id)
                for e in self.endpoints.list_webhook_endpoints(None)
                if e.owner is None and e.disabled_at is None
            ]
            raise ConflictError(
                f"the global endpoint exists already ({', '.join(found)}); "
                "remove it before registering another",
                title="Global endpoint exists",
            ) from None

    def list(self, person: Person, owner: str | None = None) -> list[WebhookEndpoint]:
        """A person's endpoints; an operator's: every endpoint, or one owner's."""
        if owner is not None and unsafe_text(owner) is not None:
            raise InvalidInputError("owner", "text", f"the owner's name {unsafe_text(owner)}")
        return self.endpoints.list_webhook_endpoints(owner if person.is_operator else person.name)

    def page(
        self,
        person: Person,
        *,
        owner: str | None = None,
        only_global: bool = False,
        before: int | None = None,
        limit: int = 50,
    ) -> EndpointPage:
        """Operators: every endpoint (or one owner's, or the global one), newest first."""
        if not person.is_operator:
            raise ForbiddenError("only operators see every webhook endpoint")
        if owner is not None and unsafe_text(owner) is not None:
            raise InvalidInputError("owner", "text", f"the owner's name {unsafe_text(owner)}")
        if before is not None and not 1 <= before <= MAX_ID:
            raise InvalidInputError("before", "range", f"before must be 1 to {MAX_ID}")
        found, cursor = self.endpoints.webhook_endpoints_page(
            owner=owner, only_global=only_global, before=before, limit=limit
        )
        return EndpointPage(endpoints=found, next_cursor=cursor)

    def rotate(
        self, person: Person, endpoint_id: int, *, overlap_hours: float = 24.0
    ) -> WebhookEndpoint:
        """A new secret; the old one keeps signing for `overlap_hours` (0 to 720)."""
        if not 0 <= overlap_hours <= MAX_OVERLAP_HOURS:  # NaN fails both comparisons
            raise InvalidInputError(
                "overlap_hours", "range", f"the overlap is 0 to {MAX_OVERLAP_HOURS} hours"
            )
        self.endpoint(person, endpoint_id)
        until = self.clock() + timedelta(hours=overlap_hours)
        overlap = f"the previous secret signs until {until.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
        audit = self._audit(person, "rotate_webhook_secret", str(endpoint_id), overlap)
        try:
            return self.endpoints.rotate_webhook_secret(
                endpoint_id, secret=new_secret(), until=until, audit=audit
            )
        except LookupError:
            raise NotFoundError(f"no enabled webhook endpoint {endpoint_id}") from None

    def remove(self, person: Person, endpoint_id: int) -> bool:
        """Stop sending to an endpoint; False when it was already removed."""
        self.endpoint(person, endpoint_id)
        return self.endpoints.disable_webhook_endpoint(
            endpoint_id,
            now=self.clock(),
            reason=f"removed by {person.name}",
            audit=self._audit(person, "disable_webhook_endpoint", str(endpoint_id)),
        )

    def test(self, person: Person, endpoint_id: int) -> TestDelivery:
        """Send a signed `webhook.test` event now and say what came back; a disabled endpoint
        takes none (a page loaded before it was disabled still offers the button)."""
        endpoint = self.endpoint(person, endpoint_id)
        if endpoint.disabled_at is not None:
            why = f" ({endpoint.disabled_reason})" if endpoint.disabled_reason else ""
            raise ConflictError(
                f"webhook endpoint {endpoint_id} is disabled{why}: it takes no test event",
                title="Endpoint disabled",
            )
        now = self.clock()
        body = json.dumps({"type": "webhook.test", "timestamp": now.isoformat(), "data": {}})
        # A person waits for this answer: the name gets TEST_RESOLVE_SECONDS to resolve and
        # each step of the request TEST_STEP_SECONDS, so the test ends within a client's patience.
        try:
            destination = check_destination(
                endpoint.url,
                resolver=within(self.resolver, TEST_RESOLVE_SECONDS),
                allow_private=self.allow_private,
            )
        except UnsafeDestinationError as exc:
            delivery = TestDelivery(delivered=False, response_status=None, problem=str(exc))
        else:
            message_id = f"msg_test_{uuid.uuid4().hex}"
            headers = signed_headers(endpoint.secrets(now), message_id, now, body)
            with httpx.Client(timeout=TEST_STEP_SECONDS, follow_redirects=False) as client:
                answer = send(client, destination, headers, body)
            delivery = TestDelivery(
                delivered=answer.ok, response_status=answer.status, problem=answer.error
            )
        audit = self._audit(person, "test_webhook_endpoint", str(endpoint_id), _outcome(delivery))
        if audit is not None:
            self.audit.record(audit)
        return delivery

    @staticmethod
    def _audit(
        person: Person, action: AuditAction, endpoint_id: str, detail: str | None = None
    ) -> AuditEntry | None:
        """The audit entry of an operator's action (a person's own endpoints are theirs)."""
        if not person.is_operator:
            return None
        return AuditEntry(
            person=person.name,
            action=action,
            object_kind="webhook_endpoint",
            object_id=endpoint_id,
            detail=detail,
        )

    def disabled(self, person: Person, endpoint_ids: Iterable[int]) -> dict[int, str]:
        """Why each of these endpoints takes no event any more, by id ("disabled", and the
        reason for whoever may manage it); those still enabled, or unknown, are left out."""
        found: dict[int, str] = {}
        for endpoint_id in set(endpoint_ids):
            try:
                endpoint = self.endpoints.get_webhook_endpoint(endpoint_id)
            except LookupError:
                continue
            if endpoint.disabled_at is None:
                continue
            theirs = person.is_operator or endpoint.owner == person.name
            reason = endpoint.disabled_reason if theirs else None
            found[endpoint_id] = f"disabled ({reason})" if reason else "disabled"
        return found

    def endpoint(self, person: Person, endpoint_id: int) -> WebhookEndpoint:
        """An endpoint the person may manage; another person's does not exist for them."""
        found: WebhookEndpoint | None = None
        if 1 <= endpoint_id <= MAX_ID:
            try:
                found = self.endpoints.get_webhook_endpoint(endpoint_id)
            except LookupError:
                found = None
        if found is None or (not person.is_operator and found.owner != person.name):
            raise NotFoundError(f"no webhook endpoint {endpoint_id}")
        return found


def _outcome(delivery: TestDelivery) -> str:
    if delivery.delivered:
        return f"delivered (HTTP {delivery.response_status})"
    answered = f"HTTP {delivery.response_status}" if delivery.response_status else "no answer"
    return f"not delivered ({answered}): {delivery.problem or 'refused'}"[:500]
