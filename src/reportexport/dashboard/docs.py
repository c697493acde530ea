"""The API's documentation pages (Swagger UI, ReDoc) and the site's icon, all served from
packaged copies, so /docs works without a network."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from reportexport.dashboard.ui import templates

router = APIRouter(include_in_schema=False)


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "docs.html", {})


@router.get("/redoc")
def redoc(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "redoc.html", {})


@router.get("/favicon.ico")
def favicon() -> RedirectResponse:
    return RedirectResponse("/static/favicon.svg", status_code=301)
