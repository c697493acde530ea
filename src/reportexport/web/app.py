"""The HTTP application: routers per area over the services the composition root built.

Handlers are plain functions, so FastAPI runs them in its thread pool, where the synchronous
stores live; each translates one request into one service call. The live pages' event streams
are the exception: coroutines fed by the process's one change feed, holding no thread.
"""

from __future__ import annotations

import inspect
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from reportexport import __version__
from reportexport.services.errors import ServiceError
from reportexport.web import problems
from reportexport.web.api.head import HeadAsGet
from reportexport.web.api.headers import SecurityHeaders
from reportexport.web.api.openapi import refined_schema
from reportexport.web.api.routes import (
    chat,
    exports,
    groups,
    health,
    operators,
    schedules,
    webhooks,
)
from reportexport.web.dashboard import guards
from reportexport.web.dashboard.company import router as company_sign_in
from reportexport.web.dashboard.docs import router as docs
from reportexport.web.dashboard.groups import router as group_pages
from reportexport.web.dashboard.live import ChangeFeed
from reportexport.web.dashboard.operators import router as operator_pages
from reportexport.web.dashboard.pages import download_refused, not_found_page, wants_html
from reportexport.web.dashboard.routes import router as dashboard
from reportexport.web.dashboard.schedules import router as schedule_pages
from reportexport.web.dashboard.unsubscribe import router as unsubscribe
from reportexport.web.deps import AppParts

DESCRIPTION = """Asynchronous CSV exports of saved queries on a frozen job lifecycle.

Errors are RFC 9457 problem details (`application/problem+json`): an illegal move answers 409
with the graph's code, a bad parameter 422 naming it and its rule, a limit 429 with
`Retry-After`, a body that is not JSON 415, malformed JSON 400, a wrong method 405 with `Allow`,
and a job store or object store that does not answer 503 with `Retry-After`.
"""


ROUTERS = (
    health.router,
    exports.router,
    schedules.router,
    webhooks.router,
    chat.router,
    operators.router,
    groups.router,
    dashboard,
    schedule_pages,
    operator_pages,
    group_pages,
    company_sign_in,
    unsubscribe,
    docs,
)


def create_app(parts: AppParts) -> FastAPI:
    app = FastAPI(
        title="reportexport",
        version=__version__,
        description=DESCRIPTION,
        openapi_url="/openapi.json",
        docs_url=None,
        redoc_url=None,
    )
    app.state.parts = parts
    app.state.feed = ChangeFeed(parts.exports.jobs_by_ids, max_streams=parts.web.max_event_streams)
    problems.install(app)
    guards.install(app)
    _pages_for_browsers(app)
    app.add_middleware(HeadAsGet)
    app.add_middleware(SecurityHeaders)
    for router in ROUTERS:
        app.include_router(router)
    app.mount(
        "/static/vendor",
        StaticFiles(packages=[("fastapi_offline", "static")]),
        name="vendor",
    )
    app.mount(
        "/static", StaticFiles(packages=[("reportexport.web.dashboard", "static")]), name="static"
    )

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = refined_schema(app, parts)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _pages_for_browsers(app: FastAPI) -> None:
    """An unknown page, or a download link that no longer works, opened in a browser is a
    dashboard page; the API keeps its problems."""
    answer_problem = app.exception_handlers[StarletteHTTPException]
    answer_service_problem = app.exception_handlers[ServiceError]

    async def on_service(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ServiceError)
        if request.scope.get("endpoint") is exports.serve_download and wants_html(request):
            return await run_in_threadpool(download_refused, request, exc)
        answer = answer_service_problem(request, exc)
        return await answer if inspect.isawaitable(answer) else answer

    app.add_exception_handler(ServiceError, on_service)

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        browsing = not request.url.path.startswith(("/api/", "/static/"))
        if exc.status_code in (404, 405) and browsing and wants_html(request):
            page = await run_in_threadpool(not_found_page, request, exc.status_code)
            if exc.status_code == 405:
                page.headers["Allow"] = ", ".join(problems.allowed_methods(request))
            return page
        answer = answer_problem(request, exc)
        return await answer if inspect.isawaitable(answer) else answer

    app.add_exception_handler(StarletteHTTPException, on_http)
