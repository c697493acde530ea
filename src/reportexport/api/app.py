"""The HTTP application: routers per area over the services the composition root built.

Handlers are plain functions, so FastAPI runs them in its thread pool, where the synchronous
stores live; each translates one request into one service call.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from reportexport import __version__
from reportexport.api import problems
from reportexport.api.deps import AppParts
from reportexport.api.head import HeadAsGet
from reportexport.api.openapi import refined_schema
from reportexport.api.routes import exports, health, schedules, webhooks
from reportexport.dashboard.routes import router as dashboard

DESCRIPTION = """Asynchronous CSV exports of saved queries on a frozen job lifecycle.

Errors are RFC 9457 problem details (`application/problem+json`): an illegal move answers 409
with the graph's code, a bad parameter 422 naming it and its rule, a limit 429 with
`Retry-After`, a body that is not JSON 415, malformed JSON 400, a wrong method 405 with `Allow`,
and a job store or object store that does not answer 503 with `Retry-After`.
"""


ROUTERS = (health.router, exports.router, schedules.router, webhooks.router, dashboard)


def create_app(parts: AppParts) -> FastAPI:
    app = FastAPI(
        title="reportexport",
        version=__version__,
        description=DESCRIPTION,
        openapi_url="/openapi.json",
    )
    app.state.parts = parts
    problems.install(app)
    app.add_middleware(HeadAsGet)
    for router in ROUTERS:
        app.include_router(router)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = refined_schema(app, parts)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
