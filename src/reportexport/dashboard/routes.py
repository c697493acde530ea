"""The dashboard's pages: each translates a form or a link into one service call.

Sign-in stores the bearer token in an HttpOnly, SameSite=Strict cookie, which the API also
accepts, so the pages' small scripts call the API directly. Forms that create a job carry a
one-time key, so a double submit makes one job.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, select_autoescape

from frozen_lifecycle.render import TABLE_HEADER, decision_rows, render_svg
from reportexport.api.deps import SESSION_COOKIE, AppParts, parts, signed_in
from reportexport.api.problems import status_of
from reportexport.job_status import CANCELS, TransitionError
from reportexport.parameters import ParameterError, single_values
from reportexport.records import Job, User
from reportexport.services.errors import NotFoundError, ServiceError
from reportexport.services.exports import MAX_ID, JobView
from reportexport.text import quoted

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(
    env=Environment(
        loader=FileSystemLoader(str(resources.files("reportexport.dashboard") / "templates")),
        autoescape=select_autoescape(),
    )
)
CANCELABLE = [move.from_status for move in CANCELS]


def page(request: Request, name: str, user: User | None, **context: Any) -> HTMLResponse:
    graph = parts(request).graph
    return templates.TemplateResponse(
        request,
        name,
        {
            "user": user,
            "states": graph.states,
            "cancelable": CANCELABLE,
            "initial": graph.initial,
            **context,
        },
    )


def to_sign_in() -> RedirectResponse:
    return RedirectResponse("/sign-in", status_code=303)


def _job_id(text: str) -> int | None:
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(MAX_ID))):
        return None
    number = int(text)
    return number if 1 <= number <= MAX_ID else None


def problem_page(
    request: Request, user: User | None, status: int, title: str, detail: str, **context: Any
) -> HTMLResponse:
    response = page(request, "problem.html", user, title=title, detail=detail, **context)
    response.status_code = status
    return response


def _not_found(request: Request, user: User, job_id: str) -> HTMLResponse:
    return problem_page(request, user, 404, "Not found", f"There is no export {job_id} for you.")


@router.get("/")
def home(request: Request) -> Response:
    return RedirectResponse("/jobs" if signed_in(request) else "/sign-in", status_code=303)


@router.get("/sign-in")
def sign_in_page(request: Request) -> HTMLResponse:
    return page(request, "sign_in.html", None)


@router.post("/sign-in")
def sign_in(request: Request, token: str = Form("")) -> Response:
    user = parts(request).people.authenticate(token.strip())
    if user is None:
        return page(request, "sign_in.html", None, problem="That token is unknown or revoked.")
    response = RedirectResponse("/jobs", status_code=303)
    response.set_cookie(SESSION_COOKIE, token.strip(), httponly=True, samesite="strict")
    return response


@router.post("/sign-out")
def sign_out() -> Response:
    response = to_sign_in()
    response.delete_cookie(SESSION_COOKIE)
    return response


@router.get("/jobs")
def jobs(request: Request, status: str = "", owner: str = "", saved_query: str = "") -> Response:
    user = signed_in(request)
    if user is None:
        return to_sign_in()
    app: AppParts = parts(request)
    filters: dict[str, Any] = {
        "status": status or None,
        "saved_query": saved_query or None,
        "owner": (owner or None) if user.role == "operator" else user.name,
    }
    try:
        listed = app.exports.jobs_of(
            user,
            status=filters["status"],
            saved_query=filters["saved_query"],
            owner=filters["owner"],
            limit=100,
        ).jobs
    except ServiceError as exc:
        listed, filters["problem"] = (), exc.detail
    response = page(request, "jobs.html", user, jobs=listed, filters=filters, elapsed=_elapsed)
    if "problem" in filters:
        response.status_code = 422
    return response


@router.get("/jobs/{job_id}")
def job_page(request: Request, job_id: str) -> Response:
    user = signed_in(request)
    if user is None:
        return to_sign_in()
    number = _job_id(job_id)
    try:
        view = parts(request).exports.job(user, number) if number is not None else None
    except ServiceError:
        view = None
    if view is None:
        return _not_found(request, user, job_id)
    return _job_page(request, user, view)


def _job_page(
    request: Request, user: User, view: JobView, problem: str | None = None, status: int = 200
) -> HTMLResponse:
    detail = view.detail
    response = page(
        request,
        "job.html",
        user,
        job=detail.job,
        history=detail.history,
        side_effects=detail.side_effects,
        rerun_key=secrets.token_urlsafe(16),
        problem=problem,
    )
    response.status_code = status
    return response


@router.post("/jobs/{job_id}/cancel")
def cancel(request: Request, job_id: str) -> Response:
    user = signed_in(request)
    if user is None:
        return to_sign_in()
    number = _job_id(job_id)
    if number is None:
        return _not_found(request, user, job_id)
    exports = parts(request).exports
    try:
        exports.cancel(user, number)
    except NotFoundError:
        return _not_found(request, user, job_id)
    except TransitionError as exc:
        why = f"This export cannot be canceled now ({exc.code})."
        return _job_page(request, user, exports.job(user, number), why, status=409)
    return RedirectResponse(f"/jobs/{number}", status_code=303)


@router.post("/jobs/{job_id}/rerun")
def rerun(request: Request, job_id: str, key: str = Form("")) -> Response:
    user = signed_in(request)
    if user is None:
        return to_sign_in()
    number = _job_id(job_id)
    if number is None:
        return _not_found(request, user, job_id)
    try:
        created = parts(request).exports.rerun(user, number, idempotency_key=key or None)
    except NotFoundError:
        return _not_found(request, user, job_id)
    except ServiceError as exc:
        return problem_page(request, user, status_of(exc), exc.title, exc.detail, job_id=number)
    return RedirectResponse(f"/jobs/{created.job.id}", status_code=303)


@router.get("/exports/new")
def new_page(request: Request, saved_query: str = "") -> Response:
    user = signed_in(request)
    if user is None:
        return to_sign_in()
    queries = parts(request).exports.saved_queries()
    query = next((q for q in queries if q.name == saved_query), queries[0] if queries else None)
    return page(
        request,
        "new_export.html",
        user,
        queries=queries,
        query=query,
        values={},
        problem=None,
        key=secrets.token_urlsafe(16),
    )


@router.post("/exports/new")
async def create(request: Request) -> Response:
    user = signed_in(request)
    if user is None:
        return to_sign_in()
    fields = [(str(k), v) for k, v in (await request.form()).multi_items() if isinstance(v, str)]
    exports = parts(request).exports
    queries = exports.saved_queries()
    repeated: ParameterError | None = None
    try:
        form = single_values(fields)
    except ParameterError as exc:
        form, repeated = dict(fields), exc
    name = form.pop("saved_query", "")
    key = form.pop("key", "") or None
    query = next((q for q in queries if q.name == name), None)
    if query is None:
        detail = f"There is no saved query {quoted(name)}."
        return problem_page(request, user, 404, "No such saved query", detail)
    try:
        if repeated is not None:
            raise repeated
        created = exports.create(
            user,
            name,
            {k: v for k, v in form.items() if v != ""},
            idempotency_key=key,
            from_text=True,
        )
    except (ParameterError, ServiceError) as exc:
        problem = exc if isinstance(exc, ParameterError) else _FormProblem(exc)
        response = page(
            request,
            "new_export.html",
            user,
            queries=queries,
            query=query,
            values=form,
            problem=problem,
            key=key or secrets.token_urlsafe(16),
        )
        response.status_code = 422 if isinstance(exc, ParameterError) else status_of(exc)
        return response
    return RedirectResponse(f"/jobs/{created.job.id}", status_code=303)


class _FormProblem:
    """A refusal that names no parameter, shown above the form."""

    def __init__(self, exc: ServiceError) -> None:
        self.parameter = getattr(exc, "field", None)
        self.message = exc.detail


@router.get("/lifecycle")
def lifecycle(request: Request) -> HTMLResponse:
    graph = parts(request).graph
    return page(
        request,
        "lifecycle.html",
        signed_in(request),
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
