"""Dashboard pages the rest of the application hands to browsers: a refused download link, a
page that does not exist. API clients keep their problem JSON; a browser (one that asks for
HTML first) gets a page with a way forward."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse

from reportexport.services.errors import GoneError, ServiceError
from reportexport.web.dashboard.session import dashboard_user
from reportexport.web.dashboard.ui import problem_page
from reportexport.web.problems import status_of


def wants_html(request: Request) -> bool:
    """A browser's navigation: HTML is asked for before JSON (or JSON not at all)."""
    accept = request.headers.get("accept", "").lower()
    if "text/html" not in accept:
        return False
    json_at = accept.find("json")
    return json_at < 0 or accept.find("text/html") < json_at


def download_refused(request: Request, exc: ServiceError) -> HTMLResponse:
    """An expired or forged download link, opened in a browser."""
    user = dashboard_user(request)
    if isinstance(exc, GoneError):
        title = "This download link has expired"
        detail = (
            "Download links work for a limited time. Open the export again for a fresh link, "
            "or run it again if its file is no longer kept."
        )
    else:
        title = "This download link is not valid"
        detail = "The link was changed or cut short. Open the export and download it from there."
    return problem_page(
        request,
        user,
        status_of(exc),
        title,
        detail,
        actions=[("Back to your exports", "/jobs")] if user else [("Sign in", "/sign-in")],
    )


def not_found_page(request: Request, status: int = 404) -> HTMLResponse:
    """A page that does not exist (404), or an action's address opened as a page (405)."""
    user = dashboard_user(request)
    if status == 405:
        title, detail = "Nothing to see here", "This address is for a form's button, not a page."
    else:
        title, detail = "Page not found", f"There is no page at {request.url.path[:80]}."
    return problem_page(
        request,
        user,
        status,
        title,
        detail,
        actions=[("Back to your exports", "/jobs")] if user else [("Sign in", "/sign-in")],
    )
