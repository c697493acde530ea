"""The schedules' pages: "Schedule this" from the New export form, the list with each next run,
a schedule with its next five firing times and recent firings (each with its export or why
none was made), and pause, resume, run now and delete; its recipients, chat channels and
outside addresses, added and removed.

Times of a schedule are shown as its own zone's clock reads them (the zone the person chose,
their browser's by default); the page's script adds the reader's own time where it differs.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from fastapi import APIRouter, Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from reportexport.core.parameters import ParameterError
from reportexport.core.records import User
from reportexport.core.text import quoted
from reportexport.services.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    OverLimitError,
    ServiceError,
)
from reportexport.services.schedules import MAX_ATTACH_BYTES, ScheduleService
from reportexport.web.dashboard import forms
from reportexport.web.dashboard.format import parameter_value, zoned_text
from reportexport.web.dashboard.guards import (
    FEED,
    SIGNED_IN,
    SignedIn,
    form_router,
    new_export_form,
    page_of,
    page_router,
)
from reportexport.web.dashboard.routes import form_again
from reportexport.web.dashboard.sent_form import SentForm, refusal
from reportexport.web.dashboard.ui import (
    Pager,
    form_fields,
    id_of,
    page,
    problem_page,
    redirect,
)
from reportexport.web.deps import parts
from reportexport.web.problems import status_of

router = APIRouter(include_in_schema=False)
pages = page_router(SIGNED_IN)
feeds = page_router(FEED)
new_schedule_forms = form_router(new_export_form)
schedule_forms = form_router(page_of("/schedules", "schedule_id"))
PAGE_SIZE = 50


def _not_found(request: Request, user: User, schedule_id: str) -> Response:
    shown = schedule_id if len(schedule_id) <= 40 else schedule_id[:40] + "…"
    return problem_page(
        request,
        user,
        404,
        "No such schedule",
        f"There is no schedule {shown} for you: it does not exist, it was deleted, or it is "
        "someone else's.",
        actions=[("Your schedules", "/schedules"), ("Back to your exports", "/jobs")],
    )


# -- creating one, from the New export form ---------------------------------------------------


@new_schedule_forms.post("/schedules/new")
async def create(request: Request, user: SignedIn) -> Response:
    pairs = await form_fields(request)
    return await run_in_threadpool(_create, request, user, pairs)


def _create(request: Request, user: User, pairs: list[tuple[str, str]]) -> Response:
    sent = SentForm.read(pairs)
    queries = parts(request).exports.saved_queries(user)
    query = next((q for q in queries if q.name == sent.saved_query), None)
    if query is None:
        return problem_page(
            request,
            user,
            404,
            "No such saved query",
            forms.unreadable_query(sent.saved_query)
            or f"There is no saved query {quoted(sent.saved_query)}.",
            actions=[("Choose a saved query", "/exports/new"), ("Your schedules", "/schedules")],
        )
    try:
        asked = sent.schedule(query.parameters)
        view = parts(request).schedules.create(
            user,
            query.name,
            asked.parameters,
            cron=asked.cron,
            time_zone=asked.time_zone,
            last_day=asked.last_day,
            from_text=True,
            every_problem=True,
            idempotency_key=sent.key,
        )
    except (ParameterError, ServiceError) as exc:
        refused = refusal(exc, query.parameters, scheduling=True)
        return form_again(request, user, queries, query, sent, refused, scheduling=True)
    schedule = view.schedule
    if not view.created:
        said = f"Schedule #{schedule.id} was already made by this form."
        return redirect(request, f"/schedules/{schedule.id}", "success", said)
    first = view.next_times[0] if view.next_times else None
    when = f" It first runs {zoned_text(first, schedule.time_zone)}." if first else ""
    text = f"Schedule #{schedule.id}: {view.description}.{when}"
    return redirect(request, f"/schedules/{schedule.id}", "success", text)


@feeds.get("/schedules/preview")
def preview(request: Request, cron: str = "", time_zone: str = "UTC") -> Response:
    """The cron expression in words and its next times, for the form while it is typed."""
    try:
        shown = parts(request).schedules.preview(cron[:200], time_zone[:64])
    except InvalidInputError as exc:
        return JSONResponse(
            {"field": exc.field, "problem": exc.detail},
            status_code=422,
            headers={"Cache-Control": "no-store"},
        )
    return JSONResponse(
        {
            "description": shown.description,
            "period": shown.period,
            "time_zone": shown.time_zone,
            "next_times": [
                {"at": t.isoformat(), "local": zoned_text(t, shown.time_zone)}
                for t in shown.next_times
            ],
        },
        headers={"Cache-Control": "no-store"},
    )


# -- the list and one schedule ---------------------------------------------------------------


@pages.get("/schedules")
def schedules_list(request: Request, user: SignedIn, cursor: str = "") -> Response:
    problem = None
    try:
        found = parts(request).schedules.page(
            user, before=id_of(cursor) if cursor else None, limit=PAGE_SIZE
        )
        views, next_cursor = found.views, found.next_cursor
    except ServiceError as exc:
        views, next_cursor, problem = [], None, exc.detail
    titles = {q.name: q.title for q in parts(request).exports.saved_queries(user)}
    return page(
        request,
        "schedules.html",
        user,
        status=422 if problem else 200,
        views=views,
        titles=titles,
        problem=problem,
        pages=Pager.of(request, next_cursor, PAGE_SIZE),
    )


@pages.get("/schedules/{schedule_id}")
def schedule_page(request: Request, user: SignedIn, schedule_id: str) -> Response:
    number = id_of(schedule_id)
    try:
        if number is None:
            raise NotFoundError(f"no schedule {schedule_id[:40]}")
        view = parts(request).schedules.show(user, number)
    except NotFoundError:
        return _not_found(request, user, schedule_id)
    exports = parts(request).exports
    schedule = view.schedule
    destinations = parts(request).schedules.destinations(user, number)
    queries = {q.name: q for q in exports.saved_queries(user)}
    query = queries.get(schedule.saved_query)
    access_lost = None  # its owner's refusal: told to them, and to who may see the query
    if query is not None or schedule.owner == user.name:
        refused = exports.refusal(exports.owner(schedule.owner), schedule.saved_query)
        access_lost = refused.reason_for(schedule.owner) if refused is not None else None
    return page(
        request,
        "schedule.html",
        user,
        view=view,
        schedule=schedule,
        title=query.title if query else None,  # no title: the name is shown once, as it is
        in_catalog=query is not None or access_lost is not None,
        access_lost=access_lost,
        types={n: spec.type for n, spec in query.parameters.items()} if query else {},
        parameter_value=parameter_value,
        run_key=secrets.token_urlsafe(16),
        recipients=destinations.recipients,
        channels=destinations.channels,
        channels_to_add=destinations.channels_to_add,
        addresses=destinations.addresses,
        max_attach_bytes=MAX_ATTACH_BYTES,
    )


# -- what people do to a schedule ------------------------------------------------------------


@schedule_forms.post("/schedules/{schedule_id}/pause")
def pause(request: Request, user: SignedIn, schedule_id: str) -> Response:
    return _act(request, user, schedule_id, "pause")


@schedule_forms.post("/schedules/{schedule_id}/resume")
def resume(request: Request, user: SignedIn, schedule_id: str) -> Response:
    return _act(request, user, schedule_id, "resume")


@schedule_forms.post("/schedules/{schedule_id}/run")
def run_now(request: Request, user: SignedIn, schedule_id: str, key: str = Form("")) -> Response:
    return _act(request, user, schedule_id, "run", key=key)


@schedule_forms.post("/schedules/{schedule_id}/delete")
def delete(
    request: Request, user: SignedIn, schedule_id: str, confirmed: str = Form("")
) -> Response:
    return _act(request, user, schedule_id, "delete", confirmed=confirmed)


def _act(
    request: Request,
    user: User,
    schedule_id: str,
    action: str,
    *,
    key: str = "",
    confirmed: str = "",
) -> Response:
    number = id_of(schedule_id)
    if number is None:
        return _not_found(request, user, schedule_id)
    here = f"/schedules/{number}"
    if action == "delete" and confirmed != "yes":
        return page(
            request,
            "confirm.html",
            user,
            title=f"Delete schedule #{number}?",
            detail="It never fires again and leaves the list. The exports it made stay. This "
            "cannot be undone.",
            action=f"{here}/delete",
            label="Delete the schedule",
            back=here,
        )
    schedules = parts(request).schedules
    try:
        return _done(request, user, number, action, key, schedules)
    except NotFoundError:
        return _not_found(request, user, schedule_id)
    except (ConflictError, OverLimitError, InvalidInputError) as exc:
        said = f"{exc.detail[:1].upper()}{exc.detail[1:]}."
        if action != "run":
            return redirect(request, here, "warning", said)
        refused = problem_page(  # no export was made: say why, as a new export's form does
            request,
            user,
            status_of(exc),
            exc.title,
            said,
            actions=[(f"Back to schedule #{number}", here), ("Your exports", "/jobs")],
        )
        if isinstance(exc, OverLimitError):
            refused.headers["Retry-After"] = str(exc.retry_after)
        return refused
    except ServiceError as exc:  # refused access, or another refusal: a page, as rerun's is
        return problem_page(
            request,
            user,
            status_of(exc),
            exc.title,
            exc.detail,  # as written: it may begin with the person's name
            actions=[(f"Back to schedule #{number}", here), ("Your schedules", "/schedules")],
        )


def _done(
    request: Request, user: User, number: int, action: str, key: str, schedules: ScheduleService
) -> Response:
    """One service call for `action`, and the page it leads to."""
    here = f"/schedules/{number}"
    if action == "pause":
        schedules.pause(user, number)
        return redirect(request, here, "success", f"Schedule #{number} is paused.")
    if action == "resume":
        view = schedules.resume(user, number)
        first = view.next_times[0] if view.next_times else None
        then = f" Its next run is {zoned_text(first, view.schedule.time_zone)}." if first else ""
        return redirect(request, here, "success", f"Schedule #{number} fires again.{then}")
    if action == "run":
        made = schedules.run_now(user, number, idempotency_key=key or None)
        job = made.job
        text = (
            f"Export #{job.id} was created to run schedule #{number} now."
            if made.created
            else f"Export #{job.id} was already started by this button."
        )
        return redirect(request, f"/jobs/{job.id}", "success", text)
    schedules.delete(user, number)
    return redirect(request, "/schedules", "success", f"Schedule #{number} is deleted.")


# -- its recipients ---------------------------------------------------------------------------


@schedule_forms.post("/schedules/{schedule_id}/recipients")
def add_recipient(
    request: Request, user: SignedIn, schedule_id: str, person: str = Form("")
) -> Response:
    return _recipients(request, user, schedule_id, person.strip(), add=True)


@schedule_forms.post("/schedules/{schedule_id}/recipients/{person}/remove")
def remove_recipient(request: Request, user: SignedIn, schedule_id: str, person: str) -> Response:
    return _recipients(request, user, schedule_id, person, add=False)


def _recipients(
    request: Request, user: User, schedule_id: str, person: str, *, add: bool
) -> Response:
    def change(schedules: ScheduleService, number: int) -> str:
        if not add:
            schedules.remove_recipient(user, number, person)
            return f"{person} no longer gets the exports of schedule #{number}."
        _, added = schedules.add_recipient(user, number, person)
        if added:
            return f"{person} gets an e-mail each time an export of schedule #{number} ends."
        return f"{person} was a recipient already."

    return _changed(request, user, schedule_id, change, "added" if add else "removed")


# -- its chat channels ------------------------------------------------------------------------


@schedule_forms.post("/schedules/{schedule_id}/channels")
def add_channel(
    request: Request, user: SignedIn, schedule_id: str, channel: str = Form("")
) -> Response:
    return _channels(request, user, schedule_id, channel, add=True)


@schedule_forms.post("/schedules/{schedule_id}/channels/{channel_id}/remove")
def remove_channel(request: Request, user: SignedIn, schedule_id: str, channel_id: str) -> Response:
    return _channels(request, user, schedule_id, channel_id, add=False)


def _channels(
    request: Request, user: User, schedule_id: str, channel_id: str, *, add: bool
) -> Response:
    def change(schedules: ScheduleService, number: int) -> str:
        channel = id_of(channel_id)
        if channel is None:
            raise NotFoundError(f"no chat channel {quoted(channel_id[:40])}")
        if not add:
            schedules.remove_channel(user, number, channel)
            return f"Chat channel #{channel} no longer gets the exports of schedule #{number}."
        added, now = schedules.add_channel(user, number, channel)
        name = added.channel.name
        if now:
            return f"{name} gets a message each time an export of schedule #{number} ends."
        return f"{name} was one of its chat channels already."

    return _changed(request, user, schedule_id, change, "added" if add else "removed")


# -- its outside addresses --------------------------------------------------------------------


@schedule_forms.post("/schedules/{schedule_id}/addresses")
def add_address(
    request: Request,
    user: SignedIn,
    schedule_id: str,
    address: str = Form(""),
    attach_max_bytes: str = Form(""),
    attach_gzip: str = Form(""),
) -> Response:
    def change(schedules: ScheduleService, number: int) -> str:
        limit = attach_max_bytes.strip()
        if limit and not (limit.isascii() and limit.isdigit() and len(limit) <= 12):
            raise InvalidInputError(
                "attach_max_bytes", "type",
                f"the attachment's size is a whole number of bytes, not {quoted(limit[:40])}",
            )  # fmt: skip
        added, now = schedules.add_address(
            user, number, address.strip(), attach_max_bytes=int(limit) if limit else None,
            attach_gzip=bool(attach_gzip),
        )  # fmt: skip
        if now:
            return f"{added.address} gets an e-mail each time an export of schedule #{number} ends."
        return f"{added.address} was one of its addresses already; what it gets is set again."

    return _changed(request, user, schedule_id, change, "added")


@schedule_forms.post("/schedules/{schedule_id}/addresses/{address}/remove")
def remove_address(request: Request, user: SignedIn, schedule_id: str, address: str) -> Response:
    def change(schedules: ScheduleService, number: int) -> str:
        schedules.remove_address(user, number, address)
        return f"{address.lower()} no longer gets the exports of schedule #{number}."

    return _changed(request, user, schedule_id, change, "removed")


def _changed(
    request: Request,
    user: User,
    schedule_id: str,
    change: Callable[[ScheduleService, int], str],
    done: str,
) -> Response:
    """Make `change` to the schedule the person may see, and come back to its page saying what
    it did, or why it was not done."""
    number = id_of(schedule_id)
    schedules = parts(request).schedules
    try:
        if number is None:
            raise NotFoundError(f"no schedule {schedule_id[:40]}")
        schedules.show(user, number)
    except NotFoundError:
        return _not_found(request, user, schedule_id)
    here = f"/schedules/{number}"
    try:
        text = change(schedules, number)
    except ServiceError as exc:  # said as written: it may begin with the person's name
        return redirect(request, here, "warning", f"Not {done}: {exc.detail}.")
    return redirect(request, here, "success", text)


# In this order: /schedules/preview before /schedules/{schedule_id}.
for guarded in (feeds, pages, new_schedule_forms, schedule_forms):
    router.include_router(guarded)
