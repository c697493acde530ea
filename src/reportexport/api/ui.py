"""The dashboard: server-rendered pages over the same services as the API.

Sign-in stores the bearer token in an HttpOnly, SameSite=Strict cookie, which the API also
accepts, so the pages' small scripts call the API directly.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from fastapi import FastAPI, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, select_autoescape

from reportexport.exports import new_export
from reportexport.job_status import TransitionError
from reportexport.parameters import ParameterError
from reportexport.render import TABLE_HEADER, decision_rows, render_svg
from reportexport.store import Job, JobFilter, JobId, JobNotFoundError
from reportexport.store.records import User

COOKIE = "rx_token"


def install_ui(app: FastAPI, services: Any) -> None:
    folder = str(resources.files("reportexport.api").joinpath("templates"))
    templates = Jinja2Templates(
        env=Environment(loader=FileSystemLoader(folder), autoescape=select_autoescape())
    )
    db, graph, catalog = services.db, services.graph, services.catalog
    cancelable = [e.from_status for e in graph.transitions if e.actor == "user"]

    def person(request: Request) -> User | None:
        token = request.cookies.get(COOKIE)
        user: User | None = db.user_by_token(token) if token else None
        return user

    def page(request: Request, name: str, user: User | None, **context: Any) -> HTMLResponse:
        return templates.TemplateResponse(
            request,
            name,
            {
                "user": user,
                "states": graph.states,
                "cancelable": cancelable,
                "initial": graph.initial,
                **context,
            },
        )

    def to_sign_in() -> RedirectResponse:
        return RedirectResponse("/sign-in", status_code=303)

    @app.get("/", include_in_schema=False)
    def home(request: Request) -> Response:
        return RedirectResponse("/jobs" if person(request) else "/sign-in", status_code=303)

    @app.get("/sign-in", include_in_schema=False)
    def sign_in_page(request: Request) -> HTMLResponse:
        return page(request, "sign_in.html", None)

    @app.post("/sign-in", include_in_schema=False)
    def sign_in(request: Request, token: str = Form("")) -> Response:
        user = db.user_by_token(token.strip()) if token.strip() else None
        if user is None:
            return page(request, "sign_in.html", None, problem="That token is unknown or revoked.")
        response = RedirectResponse("/jobs", status_code=303)
        response.set_cookie(COOKIE, token.strip(), httponly=True, samesite="strict")
        return response

    @app.post("/sign-out", include_in_schema=False)
    def sign_out() -> Response:
        response = to_sign_in()
        response.delete_cookie(COOKIE)
        return response

    @app.get("/jobs", include_in_schema=False)
    def jobs(
        request: Request, status: str = "", owner: str = "", saved_query: str = ""
    ) -> Response:
        user = person(request)
        if user is None:
            return to_sign_in()
        filters = {"status": status or None, "saved_query": saved_query or None,
                   "owner": (owner or None) if user.role == "operator" else user.name}  # fmt: skip
        if filters["status"] not in (None, *graph.states):
            filters["status"] = None
        listed = db.list_jobs(
            JobFilter(
                owner=filters["owner"],
                status=filters["status"],
                saved_query=filters["saved_query"],
                limit=100,
            )
        ).jobs
        return page(request, "jobs.html", user, jobs=listed, filters=filters, elapsed=_elapsed)

    @app.get("/jobs/{job_id}", include_in_schema=False)
    def job_page(request: Request, job_id: int) -> Response:
        user = person(request)
        if user is None:
            return to_sign_in()
        try:
            detail = db.get_job(JobId(job_id))
        except JobNotFoundError:
            detail = None
        if detail is None or (user.role != "operator" and detail.job.owner != user.name):
            return page(request, "sign_in.html", user, problem=f"No export {job_id}.")
        return page(
            request,
            "job.html",
            user,
            job=detail.job,
            history=detail.history,
            side_effects=detail.side_effects,
        )

    @app.post("/jobs/{job_id}/cancel", include_in_schema=False)
    def cancel(request: Request, job_id: int) -> Response:
        user = person(request)
        if user is None:
            return to_sign_in()
        owner = None if user.role == "operator" else user.name
        with contextlib.suppress(TransitionError, JobNotFoundError):  # the page shows the result
            db.cancel_job(
                JobId(job_id), person=user.name, owner=owner, reason="canceled in the dashboard"
            )
        return RedirectResponse(f"/jobs/{job_id}", status_code=303)

    @app.post("/jobs/{job_id}/rerun", include_in_schema=False)
    def rerun(request: Request, job_id: int) -> Response:
        user = person(request)
        if user is None:
            return to_sign_in()
        old = db.get_job(JobId(job_id)).job
        query = catalog.queries.get(old.saved_query)
        if query is None or (user.role != "operator" and old.owner != user.name):
            return RedirectResponse(f"/jobs/{job_id}", status_code=303)
        job, _ = db.create_job(
            new_export(query, dict(old.parameters), owner=user.name, rerun_of=old.id)
        )
        return RedirectResponse(f"/jobs/{job.id}", status_code=303)

    @app.get("/exports/new", include_in_schema=False)
    def new_page(request: Request, saved_query: str = "") -> Response:
        user = person(request)
        if user is None:
            return to_sign_in()
        query = catalog.queries.get(saved_query) or next(iter(catalog.queries.values()), None)
        return page(
            request,
            "new_export.html",
            user,
            queries=list(catalog.queries.values()),
            query=query,
            values={},
            problem=None,
        )

    @app.post("/exports/new", include_in_schema=False)
    async def create(request: Request) -> Response:
        user = person(request)
        if user is None:
            return to_sign_in()
        form = dict((await request.form()).items())
        query = catalog.queries.get(str(form.pop("saved_query", "")))
        if query is None:
            return RedirectResponse("/exports/new", status_code=303)
        values = {k: str(v) for k, v in form.items()}
        try:
            new = new_export(query, {k: v for k, v in values.items() if v != ""}, owner=user.name)
        except ParameterError as exc:
            return page(
                request,
                "new_export.html",
                user,
                queries=list(catalog.queries.values()),
                query=query,
                values=values,
                problem=exc,
            )
        job, _ = db.create_job(new)
        return RedirectResponse(f"/jobs/{job.id}", status_code=303)

    @app.get("/lifecycle", include_in_schema=False)
    def lifecycle(request: Request) -> HTMLResponse:
        return page(
            request,
            "lifecycle.html",
            person(request),
            diagram=render_svg(graph),
            header=TABLE_HEADER,
            rows=decision_rows(graph),
            fingerprint=graph.fingerprint,
        )


def _elapsed(job: Job) -> str:
    if job.started_at is None:
        return ""
    end = job.finished_at or datetime.now(UTC)
    return f"{(end - job.started_at).total_seconds():.1f} s"
