"""The dashboard's pages: each translates a form or a link into one service call.

People sign in with their token once and are then known by a session (see `session`); every
form carries the session's CSRF token and is refused without it. Destructive actions ask first
(in a dialog, or on a page of their own without script). Forms that create a job carry a
one-time key, so a double submit makes one job. Every refusal is a page in the dashboard's own
style with a way forward; a signed-in person never meets the sign-in form by accident.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from markupsafe import Markup

from frozen_lifecycle.render import TABLE_HEADER, decision_rows, render_svg
from reportexport.core.job_status import CANCELS, TransitionError
from reportexport.core.parameters import ParameterError
from reportexport.core.records import Delivery, Job, User
from reportexport.core.text import quoted
from reportexport.services.errors import (
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidInputError,
    NotFoundError,
    ServiceError,
)
from reportexport.services.exports import JobView
from reportexport.services.sessions import SignInLimitError
from reportexport.web.dashboard import forms
from reportexport.web.dashboard.format import (
    elapsed,
    moment,
    ordered_parameters,
    parameter_types,
    parameter_value,
)
from reportexport.web.dashboard.guards import (
    FEED,
    SIGNED_IN,
    SignedIn,
    SignedInFeed,
    form_router,
    new_export_form,
    page_of,
    page_router,
    sent_from,
    to_page,
)
from reportexport.web.dashboard.live import EventStream, StreamsFullError, live_state, watched_ids
from reportexport.web.dashboard.sent_form import Refusal, SentForm, refusal
from reportexport.web.dashboard.session import (
    CSRF_FIELD,
    client_address,
    csrf_token,
    dashboard_user,
    end_session,
    keep_sign_in_token,
    sign_in_token,
    sign_in_token_holds,
    start_session,
)
from reportexport.web.dashboard.ui import (
    Pager,
    back_within,
    form_fields,
    id_of,
    page,
    problem_page,
    redirect,
    safe_next,
    sort_href,
)
from reportexport.web.deps import parts
from reportexport.web.problems import ProblemError, status_of

if TYPE_CHECKING:
    from reportexport.core.catalog import SavedQuery

router = APIRouter(include_in_schema=False)
anyone = page_router()
pages = page_router(SIGNED_IN)
feeds = page_router(FEED)
signing_out = form_router(to_page("/jobs"))
job_forms = form_router(page_of("/jobs", "job_id"))
list_forms = form_router(sent_from("/jobs"))
new_export_forms = form_router(new_export_form)
CANCELABLE = [move.from_status for move in CANCELS]
PAGE_SIZE = 100


def _not_found(request: Request, user: User, job_id: str) -> HTMLResponse:
    shown = job_id if len(job_id) <= 40 else job_id[:40] + "…"
    return problem_page(
        request,
        user,
        404,
        "No such export",
        f"There is no export {shown} for you: it does not exist, or it is someone else's.",
        actions=[("Back to your exports", "/jobs"), ("Start a new export", "/exports/new")],
    )


# -- signing in and out ------------------------------------------------------------------------


@anyone.get("/")
def home(request: Request) -> Response:
    return RedirectResponse("/jobs" if dashboard_user(request) else "/sign-in", status_code=303)


@anyone.get("/sign-in")
def sign_in_page(request: Request, next: str = "/jobs") -> Response:
    if dashboard_user(request) is not None:
        return RedirectResponse(safe_next(next), status_code=303)
    return sign_in_form(request, next)


def sign_in_form(
    request: Request, next: str, problem: str | None = None, status: int = 200
) -> Response:
    token = sign_in_token(request)
    response = page(
        request,
        "sign_in.html",
        None,
        status=status,
        next=safe_next(next),
        problem=problem,
        form_token=token,
        company=parts(request).company is not None,
    )
    keep_sign_in_token(request, response, token)
    return response


@anyone.post("/sign-in")
def sign_in(
    request: Request,
    token: str = Form(""),
    form_token: str = Form(""),
    next: str = Form("/jobs"),
) -> Response:
    if not sign_in_token_holds(request, form_token):
        why = "The sign-in form expired or came from another site; please sign in again."
        return sign_in_form(request, next, why, status=400)
    try:
        started = parts(request).sessions.sign_in(token, client=client_address(request))
    except SignInLimitError as exc:
        waiting = problem_page(
            request,
            None,
            429,
            "Too many sign-in attempts",
            f"{exc.detail[:1].upper()}{exc.detail[1:]}.",
            actions=[("Back to the sign-in page", "/sign-in")],
        )
        waiting.headers["Retry-After"] = str(exc.retry_after)
        return waiting
    except ServiceError as exc:
        return sign_in_form(request, next, exc.detail, status=401)
    response = redirect(request, safe_next(next), "success", f"Signed in as {started.user.name}.")
    start_session(request, response, started)
    return response


@signing_out.post("/sign-out")
def sign_out(request: Request) -> Response:
    response = redirect(request, "/sign-in", "info", "You are signed out.")
    end_session(request, response)
    return response


# -- the list --------------------------------------------------------------------------------


@pages.get("/jobs")
def jobs(
    request: Request,
    user: SignedIn,
    status: str = "",
    owner: str = "",
    saved_query: str = "",
    q: str = "",
    sort: str = "newest",
    cursor: str = "",
) -> Response:
    exports = parts(request).exports
    oldest = sort == "oldest"
    filters = {
        "status": status,
        "saved_query": saved_query,
        "owner": owner if user.is_operator else "",
        "q": q.strip(),
        "sort": "oldest" if oldest else "newest",
    }
    problem = None
    position = id_of(cursor) if cursor else None
    try:
        found = exports.jobs_of(
            user,
            status=status or None,
            saved_query=saved_query or None,
            owner=filters["owner"] or None,
            search=filters["q"] or None,
            oldest_first=oldest,
            before=position,
            after=position,
            limit=PAGE_SIZE,
        )
        listed, next_cursor = found.jobs, found.next_cursor
    except ServiceError as exc:
        listed, next_cursor, problem = (), None, exc.detail
    queries = exports.saved_queries(user)
    return page(
        request,
        "jobs.html",
        user,
        status=422 if problem else 200,
        jobs=listed,
        filters=filters,
        filtered=any(filters[k] for k in ("status", "saved_query", "owner", "q")),
        filter_words=_filter_words(filters, {x.name: x.title for x in queries}),
        caption=_caption(len(listed), cursor_given=bool(cursor), more=next_cursor is not None),
        queries=queries,
        problem=problem,
        pages=Pager.of(request, next_cursor, PAGE_SIZE),
        sort_toggle=sort_href(request, "sort", "newest" if oldest else "oldest"),
        cancelable=CANCELABLE,
        elapsed=elapsed,
        file_expired=_expired,
        here=request.url.path + (f"?{request.url.query}" if request.url.query else ""),
    )


def _filter_words(filters: Mapping[str, str], titles: Mapping[str, str]) -> str:
    """What the list is filtered by, in words, for its empty state."""
    words = []
    if filters["q"]:
        words.append(f"the search {quoted(filters['q'])}")
    if filters["status"]:
        words.append(f"status {filters['status']}")
    if filters["saved_query"]:
        words.append(
            f"saved query {quoted(titles.get(filters['saved_query'], filters['saved_query']))}"
        )
    if filters["owner"]:
        words.append(f"owner {quoted(filters['owner'])}")
    return " and ".join(words)


def _caption(count: int, *, cursor_given: bool, more: bool) -> str:
    noun = "export" if count == 1 else "exports"
    where = "on this page" if cursor_given or more else "in all"
    return f"{count:,} {noun} {where}"


# -- live updates ------------------------------------------------------------------------------


@feeds.get("/jobs/events")
async def job_events(request: Request, user: SignedInFeed, ids: str = "") -> Response:
    """The watched jobs' changes as Server-Sent Events (event `status`), until all are terminal."""
    exports = parts(request).exports
    found = await run_in_threadpool(partial(exports.jobs_by_ids, watched_ids(ids), person=user))
    feed = request.app.state.feed
    try:
        subscription = feed.subscribe(found)
    except StreamsFullError:
        raise ProblemError(
            503,
            "Too many live pages",
            f"this server keeps at most {feed.max_streams} live pages open; the page polls instead",
            headers={"Retry-After": "10"},
        ) from None
    return _Streamed(EventStream(feed, subscription, found))


class _Streamed(Response):
    """A route's answer that is an ASGI app of its own (the event stream)."""

    def __init__(self, app: EventStream) -> None:
        super().__init__()
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


@feeds.get("/jobs/state")
def job_states(request: Request, user: SignedInFeed, ids: str = "") -> Response:
    """The same states as the event stream, for pages that poll."""
    found = parts(request).exports.jobs_by_ids(watched_ids(ids), person=user)
    now = datetime.now(UTC)
    return JSONResponse(
        {"jobs": [live_state(job, now) for job in found]}, headers={"Cache-Control": "no-store"}
    )


# -- one job ---------------------------------------------------------------------------------


@pages.get("/jobs/{job_id}")
def job_page(request: Request, user: SignedIn, job_id: str) -> Response:
    number = id_of(job_id)
    try:
        view = (
            parts(request).exports.job(user, number, with_previous=True, with_deliveries=True)
            if number is not None
            else None
        )
    except NotFoundError:
        view = None
    if view is None:
        return _not_found(request, user, job_id)
    return _job_page(request, user, view)


def _job_page(
    request: Request, user: User, view: JobView, problem: str | None = None, status: int = 200
) -> HTMLResponse:
    detail = view.detail
    job = detail.job
    gone = parts(request).webhooks.disabled(
        user, [d.endpoint_id for d in view.deliveries if d.endpoint_id is not None]
    )
    email, always = _email_of(request, user)
    return page(
        request,
        "job.html",
        user,
        status=status,
        job=job,
        changeable=user.is_operator or job.owner == user.name,  # a recipient only sees it
        download_refused=_download_refused(request, user, job),
        history=detail.history,
        side_effects=detail.side_effects,
        deliveries=view.deliveries,
        disabled_endpoints=gone,
        gave_up=_gave_up(view.deliveries, gone),
        downloads=view.downloads,
        firing=view.firing,
        previous=view.previous,
        file_expired=_expired(job),
        types=parameter_types(job),
        parameter_value=parameter_value,
        ordered_parameters=ordered_parameters,
        elapsed=elapsed,
        cancelable=CANCELABLE,
        rerun_key=secrets.token_urlsafe(16),
        problem=problem,
        email=email,
        notify_always=always,
    )


def _email_of(request: Request, user: User) -> tuple[str | None, bool]:
    """The person's e-mail address as it is now, and whether they asked for an e-mail when
    any of their exports ends (on only with an address: the e-mail goes nowhere without)."""
    person = parts(request).people.get(user.name)
    if person is None or person.email is None:
        return None, False
    return person.email, person.notify_always


def _gave_up(deliveries: Sequence[Delivery], disabled: Mapping[int, str]) -> dict[str, str]:
    """By announcement: the destinations it gave up on and why, in words (a disabled endpoint
    by what disabled it). An announcement is complete once no destination is left to try, so
    its row alone would say "completed" of one that reached nobody."""
    said: dict[str, list[str]] = {}
    for d in deliveries:
        if d.given_up_at is None:
            continue
        where = d.address or f"webhook endpoint {d.endpoint_id}"
        endpoint_gone = disabled.get(d.endpoint_id) if d.endpoint_id is not None else None
        why = endpoint_gone or d.last_error or "no reason was recorded"
        said.setdefault(d.effect, []).append(f"{where}: {why}")
    return {effect: "; ".join(reasons) for effect, reasons in said.items()}


def _download_refused(request: Request, user: User, job: Job) -> str | None:
    """Why the owner may no longer download their file (their access to its query went);
    None when they may, and for anyone else (an operator downloads anyone's)."""
    if job.status != "succeeded" or job.owner != user.name:
        return None
    exports = parts(request).exports
    refusal = exports.refusal(exports.member(user), job.saved_query)
    return refusal.reason_for(user.name) if refusal is not None else None


def _expired(job: Job) -> bool:
    return job.object_expires_at is not None and job.object_expires_at <= datetime.now(UTC)


@pages.get("/jobs/{job_id}/download")
def download(request: Request, user: SignedIn, job_id: str) -> Response:
    """To the file's signed link; an expired or missing file is a page that offers a rerun."""
    number = id_of(job_id)
    if number is None:
        return _not_found(request, user, job_id)
    try:
        link = parts(request).exports.download(user, number)
    except NotFoundError:
        return _not_found(request, user, job_id)
    except GoneError as exc:
        return _gone(request, user, number, exc.detail)
    except ForbiddenError as exc:  # no longer theirs to download: said as written (a name)
        return problem_page(
            request,
            user,
            status_of(exc),
            exc.title,
            f"{exc.detail}.",
            actions=[(f"Back to export #{number}", f"/jobs/{number}")],
        )
    except ServiceError as exc:
        return problem_page(
            request,
            user,
            status_of(exc),
            "Nothing to download yet",
            f"{exc.detail[:1].upper()}{exc.detail[1:]}.",
            actions=[(f"Back to export #{number}", f"/jobs/{number}")],
        )
    return RedirectResponse(link.url, status_code=302)


def _gone(request: Request, user: User, number: int, detail: str) -> HTMLResponse:
    expires = parts(request).exports.job(user, number).detail.job.object_expires_at
    said: str | Markup = f"{detail[:1].upper()}{detail[1:]}."
    if expires is not None and expires <= datetime.now(UTC):
        said = Markup("The file of export #{} expired {}.").format(number, moment(expires, "exact"))
    return problem_page(
        request,
        user,
        410,
        "This file has expired",
        said + " Run the export again for a fresh file.",
        actions=[(f"Back to export #{number}", f"/jobs/{number}"), ("Your exports", "/jobs")],
        form={
            "action": f"/jobs/{number}/rerun",
            "fields": [
                (CSRF_FIELD, csrf_token(request)),
                ("key", secrets.token_urlsafe(16)),
            ],
            "label": "Run again",
        },
    )


@pages.get("/jobs/{job_id}/schema")
def schema(request: Request, user: SignedIn, job_id: str) -> Response:
    number = id_of(job_id)
    if number is None:
        return _not_found(request, user, job_id)
    try:
        name, content = parts(request).exports.file_schema(user, number)
    except NotFoundError:
        return _not_found(request, user, job_id)
    except ServiceError as exc:
        return problem_page(
            request,
            user,
            status_of(exc),
            "No schema yet",
            f"{exc.detail[:1].upper()}{exc.detail[1:]}.",
            actions=[(f"Back to export #{number}", f"/jobs/{number}")],
        )
    return JSONResponse(content, headers={"Content-Disposition": f'inline; filename="{name}"'})


@job_forms.post("/jobs/{job_id}/cancel")
def cancel(request: Request, user: SignedIn, job_id: str, confirmed: str = Form("")) -> Response:
    number = id_of(job_id)
    if number is None:
        return _not_found(request, user, job_id)
    exports = parts(request).exports
    if confirmed != "yes":
        # A page loaded before the export ended still shows its Cancel button: say it ended,
        # rather than ask to confirm what cannot be done.
        try:
            now = exports.job(user, number).detail.job.status
        except NotFoundError:
            return _not_found(request, user, job_id)
        if now not in CANCELABLE:
            return redirect(request, f"/jobs/{number}", "warning", _ended(number, now))
        return page(
            request,
            "confirm.html",
            user,
            title=f"Cancel export #{number}?",
            detail="It stops, and whatever it wrote so far is deleted. This cannot be undone.",
            action=f"/jobs/{number}/cancel",
            label="Cancel the export",
            back=f"/jobs/{number}",
        )
    try:
        exports.cancel(user, number)
    except NotFoundError:
        return _not_found(request, user, job_id)
    except TransitionError:
        now = exports.job(user, number).detail.job.status
        return redirect(request, f"/jobs/{number}", "warning", _ended(number, now))
    return redirect(request, f"/jobs/{number}", "success", f"Export #{number} is canceled.")


@job_forms.post("/jobs/{job_id}/notify")
def notify(request: Request, user: SignedIn, job_id: str) -> Response:
    """E-mail me when my export ends (asked while it has not ended)."""
    number = id_of(job_id)
    if number is None:
        return _not_found(request, user, job_id)
    back = f"/jobs/{number}"
    try:
        job = parts(request).exports.notify(user, number)
    except NotFoundError:
        return _not_found(request, user, job_id)
    except ConflictError:
        ended = f"Export #{number} has already ended: an e-mail is asked for before it ends."
        return redirect(request, back, "warning", ended)
    except (InvalidInputError, ForbiddenError) as exc:
        return redirect(
            request, back, "warning", f"No e-mail: {exc.detail.removeprefix('notify: ')}."
        )
    email, _ = _email_of(request, user)
    text = f"You will get an e-mail at {email} when export #{job.id} ends."
    return redirect(request, back, "success", text)


def _ended(number: int, status: str) -> str:
    return f"Export #{number} has already ended ({status}): there is nothing to cancel."


@list_forms.post("/jobs/cancel")
async def cancel_several(request: Request, user: SignedIn) -> Response:
    """Operators: cancel the exports ticked in the list (each by the rules of one cancel)."""
    form = await request.form()
    chosen = [str(v) for v in form.getlist("job")]
    given = {k: str(v) for k, v in form.items() if k != "job"}
    return await run_in_threadpool(_cancel_several, request, user, chosen, given)


def _cancel_several(
    request: Request, user: User, chosen: list[str], given: Mapping[str, str]
) -> Response:
    back = back_within(given.get("back", "/jobs"), "/jobs")
    ids = sorted({number for text in chosen if (number := id_of(text)) is not None})
    if not ids:
        return redirect(request, back, "info", "No export was ticked: nothing was canceled.")
    if given.get("confirmed") != "yes":
        return page(
            request,
            "confirm.html",
            user,
            title=f"Cancel {len(ids)} {'export' if len(ids) == 1 else 'exports'}?",
            detail=f"{_ids(ids)}: each stops, and whatever it wrote so far is deleted. This "
            "cannot be undone.",
            action="/jobs/cancel",
            label="Cancel them",
            back=back,
            fields=[("back", back)] + [("job", str(number)) for number in ids],
        )
    try:
        done = parts(request).exports.cancel_many(user, ids)
    except ServiceError as exc:
        return redirect(request, back, "warning", f"Nothing was canceled: {exc.detail}.")
    return redirect(request, back, *_bulk_words(done.canceled, done.refused))


def _ids(ids: list[int], shown: int = 12) -> str:
    listed = ", ".join(f"#{number}" for number in ids[:shown])
    return listed + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def _bulk_words(canceled: list[int], refused: list[tuple[int, str]]) -> tuple[str, str]:
    """The flash message of a bulk cancel: how many were canceled, and every ticked export that
    was not, by reason (so the message stays short enough to show whole)."""
    parts_of_text = []
    if canceled:
        noun = "export is" if len(canceled) == 1 else "exports are"
        parts_of_text.append(f"{len(canceled)} {noun} canceled ({_ids(canceled, 8)}).")
    if refused:
        by_reason: dict[str, list[int]] = {}
        for number, reason in refused:
            by_reason.setdefault(reason, []).append(number)
        why = "; ".join(f"{_ids(numbers, 4)}: {reason}" for reason, numbers in by_reason.items())
        noun = "export" if len(refused) == 1 else "exports"
        parts_of_text.append(f"{len(refused)} {noun} could not be: {why}.")
    kind = "success" if not refused else "warning"
    return kind, " ".join(parts_of_text)


@job_forms.post("/jobs/{job_id}/rerun")
def rerun(request: Request, user: SignedIn, job_id: str, key: str = Form("")) -> Response:
    number = id_of(job_id)
    if number is None:
        return _not_found(request, user, job_id)
    try:
        created = parts(request).exports.rerun(user, number, idempotency_key=key or None)
    except NotFoundError:
        return _not_found(request, user, job_id)
    except ServiceError as exc:
        return problem_page(
            request,
            user,
            status_of(exc),
            exc.title,
            exc.detail,
            actions=[(f"Back to export #{number}", f"/jobs/{number}"), ("Your exports", "/jobs")],
        )
    new = created.job.id
    text = (
        f"Export #{new} was created to run export #{number} again."
        if created.created
        else f"Export #{new} was already started for this."
    )
    return redirect(request, f"/jobs/{new}", "success", text)


# -- a new export ------------------------------------------------------------------------------


@pages.get("/exports/new")
def new_page(request: Request, user: SignedIn, saved_query: str = "") -> Response:
    queries = parts(request).exports.saved_queries(user)
    query = next((q for q in queries if q.name == saved_query), None)
    if saved_query and query is None:
        return _no_such_query(request, user, saved_query)
    query = query or (queries[0] if queries else None)
    return new_export_page(
        request,
        user,
        queries=queries,
        query=query,
        fields=forms.controls(query.parameters) if query else [],
        schedule=forms.schedule_form(query.parameters if query else {}),
    )


def _no_such_query(request: Request, user: User, name: str) -> HTMLResponse:
    return problem_page(
        request,
        user,
        404,
        "No such saved query",
        forms.unreadable_query(name)
        or f"There is no saved query {quoted(name)} for you: it is not in the catalog, or not "
        "one you may export.",
        actions=[("Choose a saved query", "/exports/new"), ("Back to your exports", "/jobs")],
    )


def new_export_page(
    request: Request,
    user: User,
    *,
    queries: list[SavedQuery],
    query: SavedQuery | None,
    fields: list[forms.Control],
    schedule: forms.ScheduleForm,
    problems: Mapping[str, str] | None = None,
    general: list[str] | None = None,
    key: str | None = None,
    status: int = 200,
    notify: bool = False,
) -> HTMLResponse:
    """The New export form (with its "Schedule this" part), fresh or with what was sent."""
    email, always = _email_of(request, user)
    return page(
        request,
        "new_export.html",
        user,
        status=status,
        queries=queries,
        query=query,
        fields=fields,
        problems=problems or {},
        general=general or [],
        key=key or secrets.token_urlsafe(16),
        schedule=schedule,
        email=email,
        notify_always=always,
        notify_checked=notify,
    )


@new_export_forms.post("/exports/new")
async def create(request: Request, user: SignedIn) -> Response:
    pairs = await form_fields(request)
    return await run_in_threadpool(_create, request, user, pairs)


def _create(request: Request, user: User, pairs: list[tuple[str, str]]) -> Response:
    sent = SentForm.read(pairs)
    exports = parts(request).exports
    queries = exports.saved_queries(user)
    query = next((q for q in queries if q.name == sent.saved_query), None)
    if query is None:
        return _no_such_query(request, user, sent.saved_query)
    try:
        created = exports.create(
            user,
            query.name,
            sent.parameters(query.parameters),
            idempotency_key=sent.key,
            from_text=True,
            every_problem=True,
            notify=sent.notify,
        )
    except (ParameterError, ServiceError) as exc:
        refused = refusal(exc, query.parameters, scheduling=False)
        return form_again(request, user, queries, query, sent, refused, scheduling=False)
    job = created.job
    # No status in the message: the export may have ended by the time the page shows it, and
    # the page shows its status as it is then.
    text = (
        f"Export #{job.id} was created."
        if created.created
        else f"Export #{job.id} was already started by this form."
    )
    return redirect(request, f"/jobs/{job.id}", "success", text)


def form_again(
    request: Request,
    user: User,
    queries: list[SavedQuery],
    query: SavedQuery,
    sent: SentForm,
    refused: Refusal,
    *,
    scheduling: bool,
) -> HTMLResponse:
    """The New export form as it was sent, each problem beside its field and the rest above the
    part that was sent (the export's, or "Schedule this")."""
    specs = query.parameters
    return new_export_page(
        request,
        user,
        status=refused.status,
        queries=queries,
        query=query,
        fields=forms.controls(specs, sent.shown(), refused.beside),
        schedule=(
            forms.schedule_form(specs, sent.values, refused.on_schedule, refused.above)
            if scheduling
            else forms.schedule_form(specs)
        ),
        problems=None if scheduling else refused.beside,
        general=None if scheduling else refused.above,
        key=None if refused.new_key else sent.key,  # a refused key: the form gets a new one
        notify=sent.notify,
    )


@new_export_forms.post("/exports/notify-always")
def notify_always(
    request: Request,
    user: SignedIn,
    switch: str = Form(""),
    saved_query: str = Form("", alias=forms.QUERY_FIELD),
) -> Response:
    """The person's own preference: an e-mail when any of their exports ends, or not."""
    back = forms.form_href(saved_query)
    on = switch == "on"
    try:
        person = parts(request).people.set_notify_always(user.name, on, by=user)
    except (InvalidInputError, NotFoundError) as exc:
        return redirect(request, back, "warning", f"Not changed: {exc.detail}.")
    text = (
        f"You will get an e-mail at {person.email} when any of your exports ends."
        if person.notify_always
        else "You will get an e-mail only for the exports you ask it for."
    )
    return redirect(request, back, "success", text)


# -- the lifecycle -------------------------------------------------------------------------------


@anyone.get("/lifecycle")
def lifecycle(request: Request) -> HTMLResponse:
    graph = parts(request).graph
    return page(
        request,
        "lifecycle.html",
        dashboard_user(request),
        diagram=render_svg(graph),
        header=TABLE_HEADER,
        rows=decision_rows(graph),
        fingerprint=graph.fingerprint,
    )


# In this order: /jobs/events and /jobs/state before /jobs/{job_id}.
for guarded in (anyone, feeds, pages, signing_out, job_forms, list_forms, new_export_forms):
    router.include_router(guarded)
