"""Every error answer is an RFC 9457 problem, the framework's own included.

Refusals of the services (`services.errors`), the pure core's parameter and transition errors,
request validation, unknown routes, wrong methods (with a correct `Allow`), unparseable bodies
(400), bodies of the wrong media type (415) and unexpected failures (500) all answer
`application/problem+json`. Whatever a problem quotes is made printable first, so a lone
surrogate in a request can never make the answer itself fail.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from http import HTTPStatus
from typing import Any

import fastapi.routing
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reportexport.core.job_status import TransitionError
from reportexport.core.outages import OutageError
from reportexport.core.parameters import ParameterError
from reportexport.core.text import printable
from reportexport.services.errors import (
    AccessRefusedError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidInputError,
    NotFoundError,
    OverLimitError,
    ServiceError,
)

MEDIA_TYPE = "application/problem+json"
log = logging.getLogger("reportexport.api")

# The framework's wording of a few refusals, in ours (the rule, not the parser's state).
MESSAGES = {
    "string_unicode": "not valid Unicode text (a lone surrogate): text must encode as UTF-8",
}

STATUS_OF: dict[type[ServiceError], int] = {
    NotFoundError: 404,
    ForbiddenError: 403,
    InvalidInputError: 422,
    ConflictError: 409,
    GoneError: 410,
    OverLimitError: 429,
}


class ProblemError(Exception):
    """A problem raised by the HTTP layer itself (authentication, media types)."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str = "",
        headers: Mapping[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(detail or title)
        self.status = status
        self.title = title
        self.detail = detail
        self.headers = dict(headers or {})
        self.extra = extra


class ProblemResponse(Response):
    media_type = MEDIA_TYPE

    def render(self, content: Any) -> bytes:
        return json.dumps(_printable(content), ensure_ascii=False).encode("utf-8")


def problem_response(
    request: Request,
    status: int,
    title: str,
    detail: str = "",
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> Response:
    body = {
        "type": f"https://reportexport.invalid/problems/{title.lower().replace(' ', '-')}",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": request.url.path,
        **extra,
    }
    all_headers = {**({"WWW-Authenticate": "Bearer"} if status == 401 else {}), **(headers or {})}
    return ProblemResponse(body, status_code=status, headers=all_headers)


def _printable(value: Any) -> Any:
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, Mapping):
        return {printable(str(k)): _printable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_printable(v) for v in value]
    return value


def status_of(exc: ServiceError) -> int:
    return next((code for kind, code in STATUS_OF.items() if isinstance(exc, kind)), 400)


def service_problem(request: Request, exc: ServiceError) -> Response:
    status = status_of(exc)
    extra: dict[str, Any] = {}
    headers: dict[str, str] = {}
    if isinstance(exc, InvalidInputError):
        extra = {"parameter": exc.field, "rule": exc.rule}
    if isinstance(exc, AccessRefusedError):
        extra = {"access_rule": exc.access_rule}
    if isinstance(exc, OverLimitError):
        extra = {"limit": exc.limit, "retry_after_seconds": exc.retry_after}
        headers = {"Retry-After": str(exc.retry_after)}
    return problem_response(request, status, exc.title, exc.detail, headers, **extra)


def routes_of(app: FastAPI) -> Iterator[Any]:
    """The application's routes, those of included routers among them."""
    flatten = getattr(fastapi.routing, "iter_route_contexts", None)
    return iter(flatten(app.routes) if flatten is not None else app.routes)


def allowed_methods(request: Request) -> list[str]:
    """Every method some route answers at this path (Starlette names only the first route's)."""
    methods: set[str] = set()
    path = request.scope.get("path", "")
    for route in routes_of(request.app):
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(path):
            methods |= set(getattr(route, "methods", None) or ())
    if "GET" in methods:
        methods.add("HEAD")  # see api/head.py
    return sorted(methods)


def install(app: FastAPI) -> None:
    @app.exception_handler(ProblemError)
    async def on_problem(request: Request, exc: ProblemError) -> Response:
        return problem_response(
            request, exc.status, exc.title, exc.detail, exc.headers, **exc.extra
        )

    @app.exception_handler(ServiceError)
    async def on_service(request: Request, exc: ServiceError) -> Response:
        return service_problem(request, exc)

    @app.exception_handler(TransitionError)
    async def on_transition(request: Request, exc: TransitionError) -> Response:
        return problem_response(
            request, 409, "Illegal status change", f"the job cannot move: {exc.code}", code=exc.code
        )

    @app.exception_handler(OutageError)
    async def on_outage(request: Request, exc: OutageError) -> Response:
        log.warning("%s %s: %s", request.method, request.url.path, exc)
        return problem_response(
            request, 503, "Service unavailable",
            "a service this request needs did not answer in time; try again shortly",
            {"Retry-After": str(exc.retry_after_seconds)},
        )  # fmt: skip

    @app.exception_handler(ParameterError)
    async def on_parameter(request: Request, exc: ParameterError) -> Response:
        return problem_response(
            request, 422, "Invalid parameter", str(exc), parameter=exc.parameter, rule=exc.rule
        )

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = [
            {
                "location": ".".join(str(p) for p in e.get("loc", ())),
                "message": MESSAGES.get(e.get("type", ""), e.get("msg", "")),
            }
            for e in exc.errors()
        ]
        detail = "; ".join(f"{e['location']}: {e['message']}" for e in errors)
        if any(e.get("type") == "json_invalid" for e in exc.errors()):
            return problem_response(request, 400, "Malformed JSON", detail, errors=errors)
        return problem_response(request, 422, "Invalid request", detail, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
        title = HTTPStatus(exc.status_code).phrase
        detail = exc.detail if isinstance(exc.detail, str) and exc.detail != title else ""
        if exc.status_code == 404 and not detail:
            detail = f"nothing at {request.url.path}"
        if exc.status_code == 405 and not detail:
            detail = f"{request.method} is not allowed here; allowed: {headers['Allow']}"
        return problem_response(request, exc.status_code, title, detail, headers)

    app.add_middleware(ProblemOnFailure)


class ProblemOnFailure:
    """An unexpected failure answers a 500 problem and is logged once, with its traceback;
    the exception stops here (the server would log it a second time as a bare traceback)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception as exc:
            request = Request(scope)
            log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
            if started:
                raise
            response = problem_response(
                request, 500, "Internal error", "the request failed; operators can see why"
            )
            await response(scope, receive, send)


async def require_json(request: Request) -> None:
    """A body, if any, must be JSON: anything else is 415, not a confusing 422."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    has_body = request.headers.get("content-length", "0") != "0" or (
        "transfer-encoding" in request.headers
    )
    if (kind or has_body) and kind != "application/json" and not kind.endswith("+json"):
        raise ProblemError(
            415,
            "Unsupported Media Type",
            f"send the body as application/json, not {kind or 'without a Content-Type'}",
            headers={"Accept-Post": "application/json"},
        )
