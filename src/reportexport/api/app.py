"""The HTTP API. Handlers are plain functions: FastAPI runs them in its thread pool, where the
synchronous stores live."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import httpx
from fastapi import Depends, FastAPI, Header, Query, Request, Response
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

from reportexport import __version__
from reportexport.api import problems
from reportexport.api.metrics import StoreCollector, metrics_text
from reportexport.api.models import (
    PROBLEM_RESPONSES,
    CsvSchemaOut,
    ExportIn,
    Health,
    JobDetailOut,
    JobOut,
    JobPageOut,
    JobStatus,
    SavedQueryOut,
    WebhookCreated,
    WebhookIn,
    WebhookOut,
    WebhookTestOut,
)
from reportexport.api.problems import ProblemError
from reportexport.api.ui import install_ui
from reportexport.catalog import Catalog
from reportexport.csvschema import file_schema, schema_file_name
from reportexport.downloads import download_for
from reportexport.exports import new_export
from reportexport.graph import Graph
from reportexport.links import LinkError, verify_download
from reportexport.objects import ObjectStore
from reportexport.store import Database, JobFilter, JobId, JobNotFoundError
from reportexport.store.records import User
from reportexport.webhooks.sender import send
from reportexport.webhooks.signing import new_secret, signed_headers
from reportexport.webhooks.ssrf import UnsafeDestinationError, check_destination


@dataclass(frozen=True, kw_only=True)
class Fairness:
    """Per-user limits on exports: at most `max_active` queued or running at once, and at most
    `max_per_window` created per `window_seconds`."""

    max_active: int = 10
    max_per_window: int = 60
    window_seconds: int = 60


@dataclass(frozen=True, kw_only=True)
class Services:
    db: Database
    catalog: Catalog
    objects: ObjectStore
    graph: Graph
    link_secret: bytes
    link_seconds: int = 3600
    fairness: Fairness = Fairness()
    webhooks_allow_private: bool = False


def current_user(request: Request, authorization: Annotated[str | None, Header()] = None) -> User:
    """The person a bearer token (or the dashboard's cookie) belongs to; 401 without one."""
    if authorization and authorization.lower().startswith("bearer "):
        token = authorization[7:].strip()
    elif request.cookies.get("rx_token"):
        token = request.cookies["rx_token"]
    else:
        raise ProblemError(401, "Unauthorized", "send Authorization: Bearer <token>")
    services: Services = request.app.state.services
    user: User | None = services.db.user_by_token(token)
    if user is None:
        raise ProblemError(401, "Unauthorized", "the token is unknown or revoked")
    return user


CurrentUser = Annotated[User, Depends(current_user)]
MAX_ID = 2**63 - 1  # ids are 64-bit in both databases
JobIdIn = Annotated[int, PathParam(ge=1, le=MAX_ID)]
EndpointIdIn = Annotated[int, PathParam(ge=1, le=MAX_ID)]


def create_app(services: Services) -> FastAPI:
    app = FastAPI(
        title="reportexport",
        version=__version__,
        description="Asynchronous CSV exports of saved queries on a frozen job lifecycle.",
        openapi_url="/openapi.json",
        responses=PROBLEM_RESPONSES,
    )
    app.state.services = services
    problems.install(app)
    db, catalog = services.db, services.catalog

    def visible_job(job_id: int, user: User) -> Any:
        detail = db.get_job(JobId(job_id))
        if user.role != "operator" and detail.job.owner != user.name:
            raise JobNotFoundError(job_id)  # another user's job does not exist for you
        return detail

    @app.get("/healthz", response_model=Health, tags=["health"])
    def healthz() -> Health:
        return Health(healthy=True)

    @app.get("/readyz", response_model=Health, tags=["health"], responses={503: {"model": Health}})
    def readyz(response: Response) -> Health:
        try:
            ready = db.schema_status().current
        except Exception:
            ready = False
        if not ready:
            response.status_code = 503
        return Health(healthy=ready)

    registry = CollectorRegistry()
    registry.register(StoreCollector(db, services.graph))

    @app.get("/metrics", tags=["health"], response_class=PlainTextResponse)
    def metrics() -> PlainTextResponse:
        return PlainTextResponse(metrics_text(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/api/graph", tags=["lifecycle"])
    def graph() -> dict[str, Any]:
        return dict(services.graph.document)

    @app.get("/api/saved-queries", response_model=list[SavedQueryOut], tags=["saved queries"])
    def saved_queries(user: CurrentUser) -> list[SavedQueryOut]:
        return [_saved_query(q) for q in catalog.queries.values()]

    @app.get("/api/saved-queries/{name}", response_model=SavedQueryOut, tags=["saved queries"])
    def saved_query(name: str, user: CurrentUser) -> SavedQueryOut:
        query = catalog.queries.get(name)
        if query is None:
            raise ProblemError(404, "Not found", f"no saved query {name!r}")
        return _saved_query(query)

    @app.post("/api/exports", response_model=JobOut, status_code=201, tags=["exports"])
    def create_export(
        body: ExportIn,
        user: CurrentUser,
        response: Response,
        idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
    ) -> JobOut:
        query = catalog.queries.get(body.saved_query)
        if query is None:
            raise ProblemError(
                422,
                "Unknown saved query",
                f"no saved query {body.saved_query!r}",
                parameter="saved_query",
            )
        new = new_export(query, body.parameters, owner=user.name, idempotency_key=idempotency_key)
        if (
            idempotency_key is None
            or db.job_for_idempotency_key(user.name, idempotency_key) is None
        ):
            _check_fairness(services, user.name, response)
        job, created = db.create_job(new)
        if not created:
            if (job.saved_query, dict(job.parameters)) != (new.saved_query, dict(new.parameters)):
                raise ProblemError(
                    422,
                    "Idempotency key reused",
                    "this Idempotency-Key was used for a different export",
                )
            response.status_code = 200
        return JobOut.of(job)

    @app.get("/api/exports", response_model=JobPageOut, tags=["exports"])
    def list_exports(
        user: CurrentUser,
        status: JobStatus | None = None,
        saved_query: str | None = None,
        owner: str | None = None,
        before: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
    ) -> JobPageOut:
        if user.role != "operator":
            owner = user.name
        page = db.list_jobs(
            JobFilter(
                owner=owner,
                status=status.value if status is not None else None,
                saved_query=saved_query,
                before=JobId(before) if before else None,
                limit=limit,
            )
        )
        return JobPageOut(jobs=[JobOut.of(j) for j in page.jobs], next_cursor=page.next_cursor)

    @app.get("/api/exports/{job_id}", response_model=JobDetailOut, tags=["exports"])
    def get_export(job_id: JobIdIn, user: CurrentUser) -> JobDetailOut:
        return JobDetailOut.of(visible_job(job_id, user), db.job_downloads(job_id))

    @app.post("/api/exports/{job_id}/cancel", response_model=JobOut, tags=["exports"])
    def cancel_export(job_id: JobIdIn, user: CurrentUser) -> JobOut:
        visible_job(job_id, user)
        reason = "canceled by an operator" if user.role == "operator" else "canceled by its owner"
        return JobOut.of(db.cancel_job(JobId(job_id), person=user.name, reason=reason))

    @app.post(
        "/api/exports/{job_id}/rerun", response_model=JobOut, status_code=201, tags=["exports"]
    )
    def rerun_export(job_id: JobIdIn, user: CurrentUser) -> JobOut:
        old = visible_job(job_id, user).job
        query = catalog.queries.get(old.saved_query)
        if query is None:
            raise ProblemError(
                409,
                "Saved query removed",
                f"the saved query {old.saved_query!r} is no longer in the catalog",
            )
        new = new_export(query, dict(old.parameters), owner=user.name, rerun_of=old.id)
        return JobOut.of(db.create_job(new)[0])

    @app.get(
        "/api/exports/{job_id}/download",
        tags=["exports"],
        status_code=302,
        responses={409: {}, 410: {}},
    )
    def download_export(job_id: JobIdIn, user: CurrentUser) -> RedirectResponse:
        job = visible_job(job_id, user).job
        answer = download_for(job, services.objects, link_seconds=services.link_seconds)
        if answer.status == 409:
            raise ProblemError(409, "Not downloadable", answer.detail)
        if answer.status == 410:
            raise ProblemError(410, "Gone", answer.detail)
        db.record_download(job_id, user.name)
        return RedirectResponse(str(answer.url), status_code=302)

    @app.get(
        "/api/exports/{job_id}/schema",
        response_model=CsvSchemaOut,
        tags=["exports"],
        responses={409: {}},
    )
    def export_schema(job_id: JobIdIn, user: CurrentUser) -> JSONResponse:
        """The small JSON schema next to the CSV: dialect, column names and types."""
        job = visible_job(job_id, user).job
        schema = file_schema(job)
        if schema is None:
            raise ProblemError(409, "No file", f"job {job.id} is {job.status}: there is no file")
        name = schema_file_name(job.file_name or f"export-{job.id}.csv")
        return JSONResponse(schema, headers={"Content-Disposition": f'inline; filename="{name}"'})

    @app.get("/api/downloads/{token}", tags=["exports"], responses={403: {}, 410: {}})
    def serve_download(token: str, request: Request) -> StreamingResponse:
        try:
            key, file_name = verify_download(services.link_secret, token)
        except LinkError as exc:
            raise ProblemError(
                410 if exc.expired else 403, "Gone" if exc.expired else "Forbidden", str(exc)
            ) from None
        if services.objects.stat(key) is None:
            raise ProblemError(410, "Gone", "the file is no longer stored")
        handle = services.objects.read(key)
        disposition = f'attachment; filename="{file_name}"'
        media = "application/gzip" if file_name.endswith(".gz") else "text/csv; charset=utf-8"
        return StreamingResponse(
            _chunks(handle), media_type=media, headers={"Content-Disposition": disposition}
        )

    @app.post("/api/side-effects/{job_id}/{effect}/redrive", tags=["operators"],
              status_code=204)  # fmt: skip
    def redrive_side_effect(job_id: JobIdIn, effect: str, user: CurrentUser) -> Response:
        if user.role != "operator":
            raise ProblemError(403, "Forbidden", "only operators re-drive side effects")
        visible_job(job_id, user)
        if not db.redrive_side_effect(job_id, effect, now=datetime.now(UTC)):
            raise ProblemError(409, "Not given up",
                               f"job {job_id} has no given-up side effect {effect!r}")  # fmt: skip
        return Response(status_code=204)

    @app.post("/api/webhooks", response_model=WebhookCreated, status_code=201, tags=["webhooks"])
    def add_webhook(body: WebhookIn, user: CurrentUser) -> WebhookCreated:
        if body.everyone and user.role != "operator":
            raise ProblemError(403, "Forbidden", "only operators register the global endpoint")
        try:
            check_destination(body.url, allow_private=services.webhooks_allow_private)
        except UnsafeDestinationError as exc:
            raise ProblemError(422, "Unsafe webhook URL", str(exc), parameter="url") from None
        endpoint = db.add_webhook_endpoint(
            owner=None if body.everyone else user.name, url=body.url, secret=new_secret()
        )
        return WebhookCreated(**WebhookOut.of(endpoint).model_dump(), secret=endpoint.secret)

    @app.get("/api/webhooks", response_model=list[WebhookOut], tags=["webhooks"])
    def list_webhooks(user: CurrentUser) -> list[WebhookOut]:
        owner = None if user.role == "operator" else user.name
        return [WebhookOut.of(e) for e in db.list_webhook_endpoints(owner)]

    def own_endpoint(endpoint_id: int, user: User) -> Any:
        try:
            endpoint = db.get_webhook_endpoint(endpoint_id)
        except LookupError:
            endpoint = None
        if endpoint is None or (user.role != "operator" and endpoint.owner != user.name):
            raise ProblemError(404, "Not found", f"no webhook endpoint {endpoint_id}")
        return endpoint

    @app.post("/api/webhooks/{endpoint_id}/rotate", response_model=WebhookCreated,
              tags=["webhooks"])  # fmt: skip
    def rotate_webhook(endpoint_id: EndpointIdIn, user: CurrentUser) -> WebhookCreated:
        own_endpoint(endpoint_id, user)
        until = datetime.now(UTC) + timedelta(hours=24)
        endpoint = db.rotate_webhook_secret(endpoint_id, secret=new_secret(), until=until)
        return WebhookCreated(**WebhookOut.of(endpoint).model_dump(), secret=endpoint.secret)

    @app.delete("/api/webhooks/{endpoint_id}", status_code=204, tags=["webhooks"])
    def remove_webhook(endpoint_id: EndpointIdIn, user: CurrentUser) -> Response:
        own_endpoint(endpoint_id, user)
        db.disable_webhook_endpoint(endpoint_id, now=datetime.now(UTC),
                                    reason=f"removed by {user.name}")  # fmt: skip
        return Response(status_code=204)

    @app.post("/api/webhooks/{endpoint_id}/test", response_model=WebhookTestOut,
              tags=["webhooks"])  # fmt: skip
    def test_webhook(endpoint_id: EndpointIdIn, user: CurrentUser) -> WebhookTestOut:
        endpoint = own_endpoint(endpoint_id, user)
        now = datetime.now(UTC)
        body = json.dumps({"type": "webhook.test", "timestamp": now.isoformat(), "data": {}})
        try:
            destination = check_destination(
                endpoint.url, allow_private=services.webhooks_allow_private
            )
        except UnsafeDestinationError as exc:
            return WebhookTestOut(delivered=False, response_status=None, problem=str(exc))
        headers = signed_headers(endpoint.secrets(now), f"msg_test_{now.timestamp():.0f}", now,
                                 body)  # fmt: skip
        with httpx.Client(timeout=10.0, follow_redirects=False) as client:
            answer = send(client, destination, headers, body)
        return WebhookTestOut(delivered=answer.ok, response_status=answer.status,
                              problem=answer.error)  # fmt: skip

    install_ui(app, services)
    return app


def _check_fairness(services: Services, owner: str, response: Response) -> None:
    rules = services.fairness
    window = timedelta(seconds=rules.window_seconds)
    active, recent = services.db.owner_activity(owner, since=datetime.now(UTC) - window)
    if active >= rules.max_active:
        raise ProblemError(
            429, "Too many exports", f"{active} of your exports are queued or running; "
            f"at most {rules.max_active} may be at once",
            limit="max_active", retry_after_seconds=10, headers={"Retry-After": "10"},
        )  # fmt: skip
    if recent >= rules.max_per_window:
        raise ProblemError(
            429, "Too many exports", f"you created {recent} exports in the last "
            f"{rules.window_seconds} s; at most {rules.max_per_window} are allowed",
            limit="max_per_window", retry_after_seconds=rules.window_seconds,
            headers={"Retry-After": str(rules.window_seconds)},
        )  # fmt: skip


def _chunks(handle: Any) -> Any:
    with handle:
        while chunk := handle.read(1 << 20):
            yield chunk


def _saved_query(query: Any) -> SavedQueryOut:
    return SavedQueryOut(
        name=query.name,
        title=query.title,
        description=query.description,
        source=query.source,
        parameters=[spec.describe() for spec in query.parameters.values()],
    )
