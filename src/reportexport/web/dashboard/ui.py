"""The dashboard's frame: templates, navigation, pages, problem pages and pagination.

A page is `page(request, "name.html", user, **context)`: the layout gives every page the same
navigation, flash message, CSRF token and scripts. A section is added to the navigation by a
line in `NAV` (operators' sections say so; their pages share the tabs of `OPERATOR_TABS`); a
list gets cursor pagination from `Pager`. An action answers `redirect(...)` with its flash
message; the guards (`guards`) answer `to_sign_in`, `not_for_you` and `form_expired`.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from reportexport.core.records import User
from reportexport.core.text import displayable
from reportexport.services.exports import MAX_ID
from reportexport.web.dashboard import format as fmt
from reportexport.web.dashboard.session import (
    CSRF_FIELD,
    csrf_token,
    flash,
    forget_flash,
    take_flash,
)
from reportexport.web.deps import parts


@dataclass(frozen=True, kw_only=True)
class NavItem:
    label: str
    href: str
    operators_only: bool = False
    signed_in_only: bool = True


# The sections of the dashboard, in order.
NAV: list[NavItem] = [
    NavItem(label="Exports", href="/jobs"),
    NavItem(label="New export", href="/exports/new"),
    NavItem(label="Schedules", href="/schedules"),
    NavItem(label="Operators", href="/operators", operators_only=True),
    NavItem(label="Lifecycle", href="/lifecycle", signed_in_only=False),
    NavItem(label="API", href="/docs", signed_in_only=False),
]
# The operators' pages, one tab each under "Operators".
OPERATOR_TABS: list[NavItem] = [
    NavItem(label="Overview", href="/operators", operators_only=True),
    NavItem(label="Side effects", href="/operators/side-effects", operators_only=True),
    NavItem(label="Webhooks", href="/operators/webhooks", operators_only=True),
    NavItem(label="People", href="/operators/people", operators_only=True),
    NavItem(label="Groups", href="/operators/groups", operators_only=True),
    NavItem(label="Workers", href="/operators/workers", operators_only=True),
    NavItem(label="Audit", href="/operators/audit", operators_only=True),
]


def echoable(value: Any) -> Any:
    """What a page shows of a value: text that cannot be written as UTF-8 (an undecodable byte
    of a form, kept so the services refuse it by name, the refusal saying it is not valid
    UTF-8) shown as U+FFFD, never as an escape. Every `{{ ... }}` of every template passes
    here, so a refused value sent back to its form cannot break the page."""
    if isinstance(value, Markup):
        return Markup(displayable(value))
    return displayable(value) if isinstance(value, str) else value


templates = Jinja2Templates(
    env=Environment(
        loader=FileSystemLoader(str(resources.files("reportexport.web.dashboard") / "templates")),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=echoable,
    )
)
templates.env.filters.update(fmt.FILTERS)


def nav_for(user: User | None) -> list[NavItem]:
    return [
        item
        for item in NAV
        if (user is not None or not item.signed_in_only)
        and (not item.operators_only or (user is not None and user.is_operator))
    ]


def current_section(path: str) -> str:
    """The navigation entry a path belongs to (the longest prefix)."""
    matches = [item.href for item in NAV if path == item.href or path.startswith(item.href + "/")]
    if path.startswith("/jobs"):
        matches.append("/jobs")
    return max(matches, key=len, default="")


def page(
    request: Request, name: str, user: User | None, *, status: int = 200, **context: Any
) -> HTMLResponse:
    graph = parts(request).graph
    shown = take_flash(request)
    response = templates.TemplateResponse(
        request,
        name,
        {
            "user": user,
            "nav": nav_for(user),
            "section": current_section(request.url.path),
            "states": graph.states,
            "terminal": graph.terminal,
            "initial": graph.initial,
            "csrf_field": CSRF_FIELD,
            "csrf": csrf_token(request) if user is not None else "",
            "flash": shown,
            "operator_pages": OPERATOR_TABS,
            "path": request.url.path,
            **context,
        },
        status_code=status,
    )
    if shown is not None:
        forget_flash(response)
    response.headers["Cache-Control"] = "no-store"
    return response


def problem_page(
    request: Request,
    user: User | None,
    status: int,
    title: str,
    detail: str,
    *,
    actions: list[tuple[str, str]] | None = None,
    **context: Any,
) -> HTMLResponse:
    """A refusal in the dashboard's own style, with ways forward (label, href)."""
    forward = actions if actions is not None else [("Back to your exports", "/jobs")]
    if user is None and actions is None:
        forward = [("Sign in", "/sign-in")]
    return page(
        request,
        "problem.html",
        user,
        status=status,
        title=title,
        detail=detail,
        actions=forward,
        **context,
    )


def redirect(request: Request, to: str, kind: str, text: str) -> RedirectResponse:
    """After an action: to `to`, which shows `text` once (kind: success, info, warning,
    problem)."""
    response = RedirectResponse(to, status_code=303)
    flash(request, response, kind, text)
    return response


def form_expired(request: Request, user: User, back: str) -> HTMLResponse:
    """A form sent without this session's CSRF token: nothing was done."""
    return problem_page(
        request,
        user,
        403,
        "This form has expired",
        "The form was sent without this session's security token (it may be from before you "
        "signed in again). Nothing was changed; open the page again and repeat the action.",
        actions=[("Back to where you were", back), ("Back to your exports", "/jobs")],
    )


def not_for_you(request: Request, user: User) -> HTMLResponse:
    """An operators' page opened by someone else."""
    return problem_page(
        request,
        user,
        403,
        "For operators only",
        "This page is for operators. Ask one if you need something done here.",
        actions=[("Back to your exports", "/jobs")],
    )


def id_of(text: str) -> int | None:
    """An id from a path or a form (1 to 2^63 - 1), or None."""
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(MAX_ID))):
        return None
    number = int(text)
    return number if 1 <= number <= MAX_ID else None


def to_sign_in(request: Request) -> RedirectResponse:
    """Signed out: to the sign-in page, which brings the person back here afterwards."""
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    if request.method not in ("GET", "HEAD"):  # a form's address is no page to come back to
        target = request.headers.get("referer", "/jobs").removeprefix(str(request.base_url)[:-1])
        target = safe_next(target)
    query = urlencode({"next": target}) if target not in ("/", "/jobs") else ""
    return RedirectResponse("/sign-in" + (f"?{query}" if query else ""), status_code=303)


def back_within(given: str, section: str) -> str:
    """The page a form names to lead back to, when it is in `section`; else the section."""
    return safe_next(given) if given.startswith(section) else section


def safe_next(target: str) -> str:
    """A place on this site to go after signing in (never another site)."""
    if target.startswith("/") and not target.startswith(("//", "/\\")) and target.isprintable():
        return target
    return "/jobs"


@dataclass(frozen=True, kw_only=True)
class Pager:
    """Cursor pagination of a list: the link to the next page and back to the first."""

    next_href: str | None
    first_href: str | None
    shown: int

    @classmethod
    def of(
        cls, request: Request, next_cursor: int | None, shown: int, *, cursor_param: str = "cursor"
    ) -> Pager:
        query = [(k, v) for k, v in request.query_params.multi_items() if k != cursor_param]
        path = request.url.path
        next_href = None
        if next_cursor is not None:
            next_href = f"{path}?{urlencode([*query, (cursor_param, str(next_cursor))])}"
        first_href = None
        if cursor_param in request.query_params:
            first_href = f"{path}?{urlencode(query)}" if query else path
        return cls(next_href=next_href, first_href=first_href, shown=shown)


def sort_href(request: Request, key: str, value: str) -> str:
    """The list sorted by `value` (the cursor starts again)."""
    query = [(k, v) for k, v in request.query_params.multi_items() if k not in (key, "cursor")]
    return f"{request.url.path}?{urlencode([*query, (key, value)])}"


async def form_fields(request: Request) -> list[tuple[str, str]]:
    """A form's fields in order, repeated ones included. An undecodable byte is kept as
    Python's surrogate escape (the framework would turn it into U+FFFD), so the export
    service refuses it naming the field, as it refuses one from the command line."""
    if request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        # Each byte as one latin-1 character, unquoted alike, then read back as UTF-8.
        body = (await request.body()).decode("latin-1")
        return [
            (_utf8(name), _utf8(value))
            for name, value in parse_qsl(body, keep_blank_values=True, encoding="latin-1")
        ]
    return [(str(k), v) for k, v in (await request.form()).multi_items() if isinstance(v, str)]


def _utf8(latin: str) -> str:
    return latin.encode("latin-1").decode("utf-8", "surrogateescape")
