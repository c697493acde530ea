"""Errors as RFC 9457 problem details, with the graph's codes for illegal moves."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from reportexport.job_status import TransitionError
from reportexport.parameters import ParameterError
from reportexport.store import JobNotFoundError

MEDIA_TYPE = "application/problem+json"


class ProblemError(Exception):
    def __init__(self, status: int, title: str, detail: str = "", **extra: Any) -> None:
        super().__init__(detail or title)
        self.status = status
        self.title = title
        self.detail = detail
        self.extra = extra


def problem_response(
    request: Request,
    status: int,
    title: str,
    detail: str = "",
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body = {
        "type": f"https://reportexport.invalid/problems/{title.lower().replace(' ', '-')}",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": request.url.path,
        **extra,
    }
    all_headers = {**({"WWW-Authenticate": "Bearer"} if status == 401 else {}), **(headers or {})}
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE, headers=all_headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(ProblemError)
    async def on_problem(request: Request, exc: ProblemError) -> JSONResponse:
        return problem_response(request, exc.status, exc.title, exc.detail, **exc.extra)

    @app.exception_handler(TransitionError)
    async def on_transition(request: Request, exc: TransitionError) -> JSONResponse:
        return problem_response(
            request, 409, "Illegal status change", f"the job cannot move: {exc.code}", code=exc.code
        )

    @app.exception_handler(ParameterError)
    async def on_parameter(request: Request, exc: ParameterError) -> JSONResponse:
        return problem_response(
            request, 422, "Invalid parameter", str(exc), parameter=exc.parameter, rule=exc.rule
        )

    @app.exception_handler(JobNotFoundError)
    async def on_not_found(request: Request, exc: JobNotFoundError) -> JSONResponse:
        return problem_response(request, 404, "Not found", f"no export {exc.job_id}")

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"location": ".".join(str(p) for p in e.get("loc", ())), "message": e.get("msg", "")}
            for e in exc.errors()
        ]
        detail = "; ".join(f"{e['location']}: {e['message']}" for e in errors)
        return problem_response(request, 422, "Invalid request", detail, errors=errors)
