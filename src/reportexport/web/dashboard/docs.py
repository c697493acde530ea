"""The API's documentation pages (Swagger UI, ReDoc) and the site's icon, all served from
packaged copies, so /docs works without a network.

Both pages have a bar with the way back to the dashboard, and are made to pass the accessibility
checks the dashboard's pages pass (`static/docs.css` for contrast; `static/docs.js` and
`static/redoc.js` set up the viewers and name the controls they leave unnamed). Swagger UI's
Authorize button takes a person's token (the document's bearer scheme), so "Try it out" works.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from reportexport.web.dashboard.ui import templates

router = APIRouter(include_in_schema=False)


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    other = {"href": "/redoc", "label": "The API reference (ReDoc)"}
    return templates.TemplateResponse(request, "docs.html", {"other": other})


@router.get("/redoc")
def redoc(request: Request) -> HTMLResponse:
    other = {"href": "/docs", "label": "Try the API (Swagger UI)"}
    return templates.TemplateResponse(request, "redoc.html", {"other": other})


@router.get("/favicon.ico")
def favicon() -> RedirectResponse:
    return RedirectResponse("/static/favicon.svg", status_code=301)
