"""What every route may ask for: the parts of the application, and who is asking.

The API knows people by their bearer token only; the dashboard's pages by their session cookie
only (see `dashboard.session`), so a cookie can never make an API call on someone's behalf and
no API call needs a CSRF token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, Query, Request, Security
from fastapi import Path as PathParam
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from frozen_lifecycle.graph import Graph
from reportexport.core.records import Heartbeat, MetricsSnapshot, User
from reportexport.core.settings import default
from reportexport.core.text import NO_NUL_PATTERN
from reportexport.services.access import AccessService
from reportexport.services.chat import ChatService
from reportexport.services.company_sign_in import CompanySignIn
from reportexport.services.exports import KEY_PATTERN, MAX_ID, MAX_KEY_LENGTH, ExportService
from reportexport.services.operators import OperatorService
from reportexport.services.people import PeopleService
from reportexport.services.schedules import ScheduleService
from reportexport.services.sessions import SessionService
from reportexport.services.webhooks import WebhookService
from reportexport.web.problems import ProblemError


@dataclass(frozen=True, kw_only=True)
class WebSettings:
    """What the HTTP layer itself is set up with (from `Settings`)."""

    max_event_streams: int = default("max_event_streams")
    trust_forwarded_headers: bool = default("trust_forwarded_headers")


@dataclass(frozen=True, kw_only=True)
class AppParts:
    """The services the HTTP layer translates to, built by the composition root."""

    exports: ExportService
    webhooks: WebhookService
    chat: ChatService
    people: PeopleService
    schedules: ScheduleService
    sessions: SessionService
    operators: OperatorService
    access: AccessService
    graph: Graph
    ready: Callable[[], bool]
    metrics: Callable[[], MetricsSnapshot]
    heartbeats: Callable[[], list[Heartbeat]]
    troubles: Callable[[], list[str]] = list
    company: CompanySignIn | None = None  # sign-in through the identity provider
    web: WebSettings = WebSettings()


def parts(request: Request) -> AppParts:
    found: AppParts = request.app.state.parts
    return found


def bearer_user(request: Request) -> User | None:
    """The person a bearer token names, if any."""
    authorization = request.headers.get("authorization", "")
    if not authorization.lower().startswith("bearer "):
        return None
    token = authorization[7:].strip()
    return parts(request).people.authenticate(token) if token else None


# Declared as the OpenAPI document's security scheme, so /docs has an Authorize button and
# sends the token; it never refuses by itself (current_user says why in a problem).
BEARER = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    bearerFormat="rxp_...",
    description="A person's API token: `reportexport users add NAME` prints it once, and an "
    "operator gives a new one on the dashboard's People page.",
)


def current_user(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)] = None,
) -> User:
    """The person a bearer token belongs to; 401 without one."""
    user = bearer_user(request)
    if user is not None:
        return user
    if credentials is not None or request.headers.get("authorization"):
        raise ProblemError(401, "Unauthorized", "the token is unknown or revoked")
    raise ProblemError(401, "Unauthorized", "send Authorization: Bearer <token>")


Parts = Annotated[AppParts, Depends(parts)]
CurrentUser = Annotated[User, Depends(current_user)]
JobIdIn = Annotated[int, PathParam(ge=1, le=MAX_ID, description="the job's id")]
EndpointIdIn = Annotated[int, PathParam(ge=1, le=MAX_ID, description="the endpoint's id")]
DeliveryIdIn = Annotated[int, PathParam(ge=1, le=MAX_ID, description="the delivery's id")]
ChannelIdIn = Annotated[int, PathParam(ge=1, le=MAX_ID, description="the chat channel's id")]


IdempotencyKey = Annotated[
    str | None,
    Header(
        min_length=1,
        max_length=MAX_KEY_LENGTH,
        pattern=KEY_PATTERN,
        description="a retried request with the same key returns the job the first one made",
    ),
]


def text_query(max_length: int, description: str | None = None) -> Any:
    """A free-text query parameter. The document declares what the service refuses in it (a NUL,
    which PostgreSQL cannot compare); the service's own check names the parameter when it does."""
    return Query(
        max_length=max_length,
        description=description,
        json_schema_extra={"pattern": NO_NUL_PATTERN},
    )
