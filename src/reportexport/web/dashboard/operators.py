"""The operators' pages: an overview, side effects (given up, with a re-drive, and not yet
completed), webhook endpoints (add, rotate, disable, test), people and their tokens (add, new
token, revoke), the workers' heartbeats and the audit of what operators did.

Each route is one service call; the services refuse anyone but an operator and record every
action in the audit. A secret or a token is shown once, on the page that answers the action
(never in a flash message, which travels in a cookie), and that page is not cached.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response

from reportexport.core.lifecycle import EFFECTS
from reportexport.core.records import EffectPage, User
from reportexport.core.text import quoted
from reportexport.services.errors import (
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    ServiceError,
)
from reportexport.services.operators import AUDIT_ACTIONS
from reportexport.services.webhooks import EndpointPage
from reportexport.web.dashboard.guards import (
    OPERATOR,
    Operator,
    form_router,
    page_router,
    sent_from,
    to_page,
)
from reportexport.web.dashboard.ui import (
    Pager,
    back_within,
    id_of,
    page,
    problem_page,
    redirect,
    sort_href,
)
from reportexport.web.deps import parts
from reportexport.web.problems import status_of

router = APIRouter(include_in_schema=False)
pages = page_router(OPERATOR)
side_effect_forms = form_router(sent_from("/operators/side-effects"), operators=True)
webhook_forms = form_router(to_page("/operators/webhooks"), operators=True)
people_forms = form_router(to_page("/operators/people"), operators=True)
PAGE_SIZE = 50


def _confirm(
    request: Request,
    user: User,
    *,
    title: str,
    detail: str,
    action: str,
    label: str,
    back: str,
    fields: list[tuple[str, str]] | None = None,
) -> HTMLResponse:
    """The question a destructive action asks on a page of its own (without script)."""
    return page(
        request,
        "confirm.html",
        user,
        title=title,
        detail=detail,
        action=action,
        label=label,
        back=back,
        fields=fields or [],
    )


def _shown_once(request: Request, user: User, **context: Any) -> HTMLResponse:
    return page(request, "operators/shown_once.html", user, **context)


def _cursor(text: str) -> int | None:
    return id_of(text) if text else None


# -- the overview ----------------------------------------------------------------------------


@pages.get("/operators")
def overview(request: Request, user: Operator) -> Response:
    return page(
        request, "operators/overview.html", user, overview=parts(request).operators.overview(user)
    )


# -- side effects ----------------------------------------------------------------------------


@pages.get("/operators/side-effects")
def side_effects(
    request: Request,
    user: Operator,
    show: str = "given-up",
    q: str = "",
    owner: str = "",
    sort: str = "newest",
    cursor: str = "",
) -> Response:
    given_up = show != "waiting"
    filters = {
        "show": "given-up" if given_up else "waiting",
        "q": q.strip(),
        "owner": owner.strip(),
        "sort": "oldest" if sort == "oldest" else "newest",
    }
    problem = None
    try:
        found = parts(request).operators.side_effects(
            user,
            given_up=given_up,
            search=filters["q"] or None,
            owner=filters["owner"] or None,
            cursor=_cursor(cursor),
            oldest_first=filters["sort"] == "oldest",
            limit=PAGE_SIZE,
        )
    except ServiceError as exc:
        found, problem = EffectPage(effects=(), next_cursor=None), exc.detail
    return page(
        request,
        "operators/side_effects.html",
        user,
        status=422 if problem else 200,
        effects=found.effects,
        filters=filters,
        filtered=bool(filters["q"] or filters["owner"]),
        problem=problem,
        pages=Pager.of(request, found.next_cursor, PAGE_SIZE),
        sort_toggle=sort_href(
            request, "sort", "newest" if filters["sort"] == "oldest" else "oldest"
        ),
        here=str(request.url.path) + (f"?{request.url.query}" if request.url.query else ""),
    )


@side_effect_forms.post("/operators/side-effects/{job_id}/{effect}/redrive")
def redrive(
    request: Request,
    user: Operator,
    job_id: str,
    effect: str,
    confirmed: str = Form(""),
    back: str = Form(""),
) -> Response:
    to = back_within(back, "/operators/side-effects")
    number = id_of(job_id)
    shown = effect if effect in EFFECTS else "that side effect"
    if confirmed != "yes":
        return _confirm(
            request,
            user,
            title=f"Re-drive {shown} of export #{job_id[:20]}?",
            detail="It is tried again now, with a fresh allowance of attempts. A webhook's "
            "receiver gets the same event id as before.",
            action=request.url.path,
            label="Re-drive it",
            back=to,
            fields=[("back", to)],
        )
    try:
        if number is None:
            raise NotFoundError(f"no export {job_id[:20]}")
        parts(request).exports.redrive(user, number, effect)
    except (NotFoundError, ConflictError, InvalidInputError) as exc:
        return redirect(request, to, "warning", f"Nothing was re-driven: {exc.detail}.")
    text = f"Export #{number}'s {shown} is due again; the effects runner tries it now."
    return redirect(request, to, "success", text)


# -- webhook endpoints ----------------------------------------------------------------------


@pages.get("/operators/webhooks")
def webhooks(request: Request, user: Operator, owner: str = "", cursor: str = "") -> Response:
    return _webhooks_page(request, user, owner=owner.strip(), cursor=cursor)


def _webhooks_page(
    request: Request,
    user: User,
    *,
    owner: str = "",
    cursor: str = "",
    form: dict[str, str] | None = None,
    form_problem: str | None = None,
    form_field: str = "",
    status: int = 200,
) -> HTMLResponse:
    problem = None
    try:
        found = parts(request).webhooks.page(
            user,
            owner=None if owner in ("", "(global)") else owner,
            only_global=owner == "(global)",
            before=_cursor(cursor),
            limit=PAGE_SIZE,
        )
    except ServiceError as exc:
        found, problem = EndpointPage(endpoints=[], next_cursor=None), exc.detail
    return page(
        request,
        "operators/webhooks.html",
        user,
        status=status if problem is None else 422,
        endpoints=found.endpoints,
        owner=owner,
        problem=problem,
        pages=Pager.of(request, found.next_cursor, PAGE_SIZE),
        form=form or {"url": "", "receiver": "person", "owner": user.name},
        form_problem=form_problem,
        form_field=form_field,
        now=datetime.now(UTC),
    )


RECEIVERS = ("person", "everyone")
RECEIVERS_RULE = "choose who it receives the events of: one person, or everyone"
OWNER_RULE = (
    "name the person whose exports' events it receives, or choose every event (the global endpoint)"
)


@webhook_forms.post("/operators/webhooks")
def add_webhook(
    request: Request,
    user: Operator,
    url: str = Form(""),
    receiver: str = Form("person"),
    owner: str = Form(""),
) -> Response:
    everyone = receiver == "everyone"
    form = {"url": url, "receiver": "everyone" if everyone else "person", "owner": owner}
    try:
        if receiver not in RECEIVERS:
            raise InvalidInputError("receiver", "choices", RECEIVERS_RULE)
        if not everyone and not owner.strip():  # never, silently, the operator's own
            raise InvalidInputError("owner", "required", OWNER_RULE)
        endpoint = parts(request).webhooks.add(
            user, url.strip(), everyone=everyone, owner=None if everyone else owner.strip()
        )
    except (InvalidInputError, ConflictError, ForbiddenError) as exc:
        field = getattr(exc, "field", "")
        status = 409 if isinstance(exc, ConflictError) else 422
        return _webhooks_page(
            request, user, form=form, form_problem=exc.detail, form_field=field, status=status
        )
    return _shown_once(
        request,
        user,
        title=f"Webhook endpoint #{endpoint.id} added",
        what=f"It receives {'every event' if everyone else f'the events of {endpoint.owner}'} "
        f"at {endpoint.url}.",
        label="Its signing secret",
        secret=endpoint.secret,
        note="Give it to whoever runs the receiver: it verifies each event's signature with it.",
        back=("Back to webhook endpoints", "/operators/webhooks"),
    )


@webhook_forms.post("/operators/webhooks/{endpoint_id}/rotate")
def rotate_webhook(
    request: Request,
    user: Operator,
    endpoint_id: str,
    confirmed: str = Form(""),
    overlap_hours: str = Form("24"),
) -> Response:
    back = "/operators/webhooks"
    number = id_of(endpoint_id)
    if confirmed != "yes":
        return _confirm(
            request,
            user,
            title=f"Rotate the secret of endpoint #{endpoint_id[:20]}?",
            detail="A new secret signs every event from now on; the current one signs them too "
            f"for {overlap_hours[:6]} hours, so the receiver can switch without missing one.",
            action=request.url.path,
            label="Rotate the secret",
            back=back,
            fields=[("overlap_hours", overlap_hours[:6])],
        )
    try:
        hours = float(overlap_hours)
    except ValueError:
        hours = -1.0  # refused by the service, by name
    try:
        if number is None:
            raise NotFoundError(f"no webhook endpoint {endpoint_id[:20]}")
        endpoint = parts(request).webhooks.rotate(user, number, overlap_hours=hours)
    except (NotFoundError, InvalidInputError) as exc:
        return redirect(request, back, "warning", f"No secret was rotated: {exc.detail}.")
    until = endpoint.previous_secret_until
    return _shown_once(
        request,
        user,
        title=f"Endpoint #{endpoint.id} has a new secret",
        what=f"Events to {endpoint.url} are signed with it from now on.",
        label="The new signing secret",
        secret=endpoint.secret,
        until=until,
        note="Give it to whoever runs the receiver before then; it cannot be shown again.",
        back=("Back to webhook endpoints", back),
    )


@webhook_forms.post("/operators/webhooks/{endpoint_id}/disable")
def disable_webhook(
    request: Request,
    user: Operator,
    endpoint_id: str,
    confirmed: str = Form(""),
) -> Response:
    back = "/operators/webhooks"
    number = id_of(endpoint_id)
    if confirmed != "yes":
        return _confirm(
            request,
            user,
            title=f"Disable endpoint #{endpoint_id[:20]}?",
            detail="No event is sent to it again. This cannot be undone: add it again instead.",
            action=request.url.path,
            label="Disable the endpoint",
            back=back,
        )
    try:
        if number is None:
            raise NotFoundError(f"no webhook endpoint {endpoint_id[:20]}")
        removed = parts(request).webhooks.remove(user, number)
    except NotFoundError as exc:
        return redirect(request, back, "warning", f"Nothing was disabled: {exc.detail}.")
    if not removed:
        return redirect(request, back, "info", f"Endpoint #{number} was disabled already.")
    return redirect(request, back, "success", f"Endpoint #{number} is disabled.")


@webhook_forms.post("/operators/webhooks/{endpoint_id}/test")
def send_test_event(request: Request, user: Operator, endpoint_id: str) -> Response:
    back = "/operators/webhooks"
    number = id_of(endpoint_id)
    try:
        if number is None:
            raise NotFoundError(f"no webhook endpoint {endpoint_id[:20]}")
        tried = parts(request).webhooks.test(user, number)
    except NotFoundError as exc:
        return redirect(request, back, "warning", f"No test event was sent: {exc.detail}.")
    except ConflictError as exc:  # disabled since the page was loaded
        return problem_page(
            request,
            user,
            status_of(exc),
            exc.title,
            f"No test event was sent: {exc.detail}.",
            actions=[("Back to the webhook endpoints", back)],
        )
    if tried.delivered:
        text = f"Endpoint #{number} took the test event (HTTP {tried.response_status})."
        return redirect(request, back, "success", text)
    answered = f"HTTP {tried.response_status}" if tried.response_status else "no answer"
    text = f"Endpoint #{number} did not take the test event ({answered}): {tried.problem}."
    return redirect(request, back, "warning", text)


# -- people and their tokens ------------------------------------------------------------------


@pages.get("/operators/people")
def people(
    request: Request, user: Operator, q: str = "", sort: str = "oldest", cursor: str = ""
) -> Response:
    return _people_page(request, user, q=q.strip(), sort=sort, cursor=cursor)


def _people_page(
    request: Request,
    user: User,
    *,
    q: str = "",
    sort: str = "oldest",
    cursor: str = "",
    form: dict[str, str] | None = None,
    form_problem: str | None = None,
    status: int = 200,
) -> HTMLResponse:
    newest = sort == "newest"
    problem = None
    try:
        found = parts(request).people.page(
            user, search=q or None, cursor=_cursor(cursor), newest_first=newest, limit=PAGE_SIZE
        )
        listed, next_cursor = found.people, found.next_cursor
    except ServiceError as exc:
        listed, next_cursor, problem = (), None, exc.detail
    return page(
        request,
        "operators/people.html",
        user,
        status=status if problem is None else 422,
        people=listed,
        q=q,
        sort="newest" if newest else "oldest",
        problem=problem,
        pages=Pager.of(request, next_cursor, PAGE_SIZE),
        sort_toggle=sort_href(request, "sort", "oldest" if newest else "newest"),
        form=form or {"name": "", "role": "user"},
        form_problem=form_problem,
    )


@people_forms.post("/operators/people")
def add_person(
    request: Request,
    user: Operator,
    name: str = Form(""),
    role: str = Form("user"),
) -> Response:
    try:
        person, token = parts(request).people.add(name.strip(), role, by=user)
    except (InvalidInputError, ConflictError) as exc:
        status = 409 if isinstance(exc, ConflictError) else 422
        form = {"name": name, "role": role}
        return _people_page(request, user, form=form, form_problem=exc.detail, status=status)
    return _shown_once(
        request,
        user,
        title=f"{person.name} can sign in now",
        what=f"{person.name} is a{'n operator' if person.is_operator else ' user'}.",
        label=f"{person.name}'s token",
        secret=token,
        note="Give it to them privately: it signs them in to the dashboard and to the API. "
        "It is stored only as a hash, so it cannot be shown again; a new one can be made.",
        back=("Back to people", "/operators/people"),
    )


@people_forms.post("/operators/people/{name}/token")
def new_token(
    request: Request,
    user: Operator,
    name: str,
    confirmed: str = Form(""),
) -> Response:
    back = "/operators/people"
    shown = quoted(name[:100])
    if confirmed != "yes":
        return _confirm(
            request,
            user,
            title=f"Give {shown} a new token?",
            detail="Their current token stops working at once (a revoked one is replaced); "
            "they sign in with the new one.",
            action=request.url.path,
            label="Make a new token",
            back=back,
        )
    made = parts(request).people.new_token(name, by=user)
    if made is None:
        return redirect(request, back, "warning", f"There is no active person {shown}.")
    person, token = made
    return _shown_once(
        request,
        user,
        title=f"A new token for {person.name}",
        what="Their previous token no longer works.",
        label=f"{person.name}'s new token",
        secret=token,
        note="Give it to them privately; it cannot be shown again.",
        back=("Back to people", back),
    )


@people_forms.post("/operators/people/{name}/revoke-token")
def revoke_token(
    request: Request,
    user: Operator,
    name: str,
    confirmed: str = Form(""),
) -> Response:
    return _revoke(request, user, name, confirmed, whole_person=False)


@people_forms.post("/operators/people/{name}/revoke")
def revoke_person(
    request: Request,
    user: Operator,
    name: str,
    confirmed: str = Form(""),
) -> Response:
    return _revoke(request, user, name, confirmed, whole_person=True)


def _revoke(
    request: Request, user: User, name: str, confirmed: str, *, whole_person: bool
) -> Response:
    back = "/operators/people"
    shown = quoted(name[:100])
    if confirmed != "yes":
        detail = (
            "Their token stops working for good and their dashboard sessions end now. Their "
            "exports and schedules stay. This cannot be undone."
            if whole_person
            else "Their token stops working and their dashboard sessions end now; they stay, "
            "and a new token lets them in again."
        )
        return _confirm(
            request,
            user,
            title=f"Revoke {shown}?" if whole_person else f"Revoke the token of {shown}?",
            detail=detail,
            action=request.url.path,
            label="Revoke the person" if whole_person else "Revoke the token",
            back=back,
        )
    people_service = parts(request).people
    try:
        done = (
            people_service.revoke(name, by=user)
            if whole_person
            else people_service.revoke_token(name, by=user)
        )
    except ConflictError as exc:
        return redirect(request, back, "warning", f"{exc.detail[:1].upper()}{exc.detail[1:]}.")
    if not done:
        what = "active person" if whole_person else "active person with a working token"
        return redirect(request, back, "warning", f"There is no {what} {shown}.")
    text = (
        f"{name} is revoked; their dashboard sessions ended."
        if whole_person
        else f"{name}'s token is revoked; their dashboard sessions ended."
    )
    return redirect(request, back, "success", text)


# -- workers and the audit --------------------------------------------------------------------


@pages.get("/operators/workers")
def workers(request: Request, user: Operator) -> Response:
    return page(
        request, "operators/workers.html", user, workers=parts(request).operators.workers(user)
    )


@pages.get("/operators/audit")
def audit(
    request: Request, user: Operator, person: str = "", action: str = "", cursor: str = ""
) -> Response:
    filters = {"person": person.strip(), "action": action if action in AUDIT_ACTIONS else ""}
    problem = None
    try:
        found = parts(request).operators.audit(
            user,
            person=filters["person"] or None,
            action=filters["action"] or None,
            before=_cursor(cursor),
            limit=PAGE_SIZE,
        )
        records, next_cursor = found.records, found.next_cursor
    except ServiceError as exc:
        records, next_cursor, problem = (), None, exc.detail
    return page(
        request,
        "operators/audit.html",
        user,
        status=422 if problem else 200,
        records=records,
        filters=filters,
        actions=AUDIT_ACTIONS,
        problem=problem,
        pages=Pager.of(request, next_cursor, PAGE_SIZE),
    )


for guarded in (pages, side_effect_forms, webhook_forms, people_forms):
    router.include_router(guarded)
