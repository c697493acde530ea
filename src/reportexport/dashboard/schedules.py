"""The schedules' pages: "Schedule this" from the New export form, the list with each next run,
a schedule with its next five firing times and recent firings (each with its export or why
none was made), and pause, resume, run now and delete.

Times of a schedule are shown as its own zone's clock reads them (the zone the person chose,
their browser's by default); the page's script adds the reader's own time where it differs.
"""

from __future__ import annotations

import secrets
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from reportexport.api.deps import parts
from reportexport.api.problems import ProblemError, status_of
from reportexport.dashboard import forms
from reportexport.dashboard.format import parameter_value, zoned_text
from reportexport.dashboard.routes import new_export_page, shown_values
from reportexport.dashboard.session import CSRF_FIELD, csrf_holds, dashboard_user
from reportexport.dashboard.ui import (
    Pager,
    form_expired,
    form_fields,
    id_of,
    page,
    problem_page,
    redirect,
    to_sign_in,
)
from reportexport.parameters import InvalidParametersError, ParameterError, single_values
from reportexport.records import User
from reportexport.services.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    OverLimitError,
    ServiceError,
)
from reportexport.services.schedules import ScheduleService
from reportexport.text import quoted

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 50
# A schedule's fields as the service names them, and the form's field each belongs beside.
SCHEDULE_FIELDS = {
    "cron": "cron",
    "time_zone": "time_zone",
    "last_day": "last_day",
    "ends_at": "last_day",
}


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


@router.post("/schedules/new")
async def create(request: Request) -> Response:
    pairs = await form_fields(request)
    return await run_in_threadpool(_create, request, pairs)


def _create(request: Request, pairs: list[tuple[str, str]]) -> Response:
    user = dashboard_user(request)
    if user is None:
        return to_sign_in(request)
    fields = [(k, v) for k, v in pairs if k not in (CSRF_FIELD, forms.BOOLEAN_FIELD)]
    booleans = [v for k, v in pairs if k == forms.BOOLEAN_FIELD]
    given = dict(fields)
    back = f"/exports/new?saved_query={quote(given.get(forms.QUERY_FIELD, ''))}"
    if not csrf_holds(request, next((v for k, v in pairs if k == CSRF_FIELD), "")):
        return form_expired(request, user, back)
    schedules = parts(request).schedules
    queries = parts(request).exports.saved_queries()
    repeated: ParameterError | None = None
    try:
        form = single_values(fields)
    except ParameterError as exc:
        form, repeated = dict(fields), exc
    name = form.pop(forms.QUERY_FIELD, "")
    key = form.pop(forms.KEY_FIELD, "") or None
    query = next((q for q in queries if q.name == name), None)
    if query is None:
        return problem_page(
            request,
            user,
            404,
            "No such saved query",
            f"There is no saved query {quoted(name)}.",
            actions=[("Choose a saved query", "/exports/new"), ("Your schedules", "/schedules")],
        )
    day, day_problem = forms.last_day(form.get(forms.SCHEDULE_PREFIX + "last-day", ""))
    try:
        if repeated is not None:
            raise repeated
        if day_problem is not None:
            raise InvalidInputError("last_day", "date", f"the last day {day_problem}")
        view = schedules.create(
            user,
            name,
            forms.schedule_parameters(query.parameters, form, booleans),
            cron=form.get(forms.SCHEDULE_PREFIX + "cron", ""),
            time_zone=form.get(forms.SCHEDULE_PREFIX + "time-zone", ""),
            last_day=day,
            from_text=True,
            every_problem=True,
        )
    except (ParameterError, ServiceError) as exc:
        beside: dict[str, str] = {}
        above: list[str] = []
        on_schedule: dict[str, str] = {}
        status = 422
        if isinstance(exc, ParameterError):
            found = exc.problems if isinstance(exc, InvalidParametersError) else (exc,)
            beside, above = forms.problems_by_field(query.parameters, found)
        else:
            status = status_of(exc)
            field_name = getattr(exc, "field", "")
            parameter = field_name.removeprefix("parameters.")
            if field_name in SCHEDULE_FIELDS:
                on_schedule[SCHEDULE_FIELDS[field_name]] = exc.detail
            elif parameter in query.parameters:
                beside[parameter] = exc.detail
            else:
                above.append(exc.detail)
        return new_export_page(
            request,
            user,
            status=status,
            queries=queries,
            query=query,
            fields=forms.controls(query.parameters, shown_values(form, booleans), beside),
            schedule=forms.schedule_form(query.parameters, form, on_schedule, above),
            key=key,
        )
    schedule = view.schedule
    first = view.next_times[0] if view.next_times else None
    when = f" It first runs {zoned_text(first, schedule.time_zone)}." if first else ""
    text = f"Schedule #{schedule.id}: {view.description}.{when}"
    return redirect(request, f"/schedules/{schedule.id}", "success", text)


@router.get("/schedules/preview")
def preview(request: Request, cron: str = "", time_zone: str = "UTC") -> Response:
    """The cron expression in words and its next times, for the form while it is typed."""
    user = dashboard_user(request)
    if user is None:
        raise ProblemError(401, "Unauthorized", "sign in to the dashboard first")
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
            "time_zone": shown.time_zone,
            "next_times": [
                {"at": t.isoformat(), "local": zoned_text(t, shown.time_zone)}
                for t in shown.next_times
            ],
        },
        headers={"Cache-Control": "no-store"},
    )


# -- the list and one schedule ---------------------------------------------------------------


@router.get("/schedules")
def schedules_list(request: Request, cursor: str = "") -> Response:
    user = dashboard_user(request)
    if user is None:
        return to_sign_in(request)
    problem = None
    try:
        found = parts(request).schedules.page(
            user, before=id_of(cursor) if cursor else None, limit=PAGE_SIZE
        )
        views, next_cursor = found.views, found.next_cursor
    except ServiceError as exc:
        views, next_cursor, problem = [], None, exc.detail
    titles = {q.name: q.title for q in parts(request).exports.saved_queries()}
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


@router.get("/schedules/{schedule_id}")
def schedule_page(request: Request, schedule_id: str) -> Response:
    user = dashboard_user(request)
    if user is None:
        return to_sign_in(request)
    number = id_of(schedule_id)
    try:
        if number is None:
            raise NotFoundError(f"no schedule {schedule_id[:40]}")
        view = parts(request).schedules.show(user, number)
    except NotFoundError:
        return _not_found(request, user, schedule_id)
    queries = {q.name: q for q in parts(request).exports.saved_queries()}
    query = queries.get(view.schedule.saved_query)
    return page(
        request,
        "schedule.html",
        user,
        view=view,
        schedule=view.schedule,
        title=query.title if query else view.schedule.saved_query,
        in_catalog=query is not None,
        types={n: spec.type for n, spec in query.parameters.items()} if query else {},
        parameter_value=parameter_value,
        run_key=secrets.token_urlsafe(16),
    )


# -- what people do to a schedule ------------------------------------------------------------


@router.post("/schedules/{schedule_id}/pause")
def pause(request: Request, schedule_id: str, csrf: str = Form("", alias=CSRF_FIELD)) -> Response:
    return _act(request, schedule_id, csrf, "pause")


@router.post("/schedules/{schedule_id}/resume")
def resume(request: Request, schedule_id: str, csrf: str = Form("", alias=CSRF_FIELD)) -> Response:
    return _act(request, schedule_id, csrf, "resume")


@router.post("/schedules/{schedule_id}/run")
def run_now(
    request: Request,
    schedule_id: str,
    csrf: str = Form("", alias=CSRF_FIELD),
    key: str = Form(""),
) -> Response:
    return _act(request, schedule_id, csrf, "run", key=key)


@router.post("/schedules/{schedule_id}/delete")
def delete(
    request: Request,
    schedule_id: str,
    csrf: str = Form("", alias=CSRF_FIELD),
    confirmed: str = Form(""),
) -> Response:
    return _act(request, schedule_id, csrf, "delete", confirmed=confirmed)


def _act(
    request: Request,
    schedule_id: str,
    csrf: str,
    action: str,
    *,
    key: str = "",
    confirmed: str = "",
) -> Response:
    user = dashboard_user(request)
    if user is None:
        return to_sign_in(request)
    number = id_of(schedule_id)
    if number is None:
        return _not_found(request, user, schedule_id)
    here = f"/schedules/{number}"
    if not csrf_holds(request, csrf):
        return form_expired(request, user, here)
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
            f"Export #{job.id} runs schedule #{number} now."
            if made.created
            else f"Export #{job.id} was already started by this button."
        )
        return redirect(request, f"/jobs/{job.id}", "success", text)
    schedules.delete(user, number)
    return redirect(request, "/schedules", "success", f"Schedule #{number} is deleted.")
