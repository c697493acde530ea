"""Scheduled exports: create, list, show (with the next firing times), pause, resume,
delete, run now."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response
from fastapi import Path as PathParam

from reportexport.services.exports import MAX_ID
from reportexport.timetable.firings import CRON_PATTERN, TIME_ZONE_PATTERN
from reportexport.web.api.models import (
    JobOut,
    ScheduleIn,
    ScheduleOut,
    SchedulePreviewOut,
    problems,
)
from reportexport.web.api.routes.exports import job_created
from reportexport.web.deps import CurrentUser, IdempotencyKey, Parts
from reportexport.web.problems import require_json

router = APIRouter(responses=problems(405, 503))  # a wrong method; an outage

ScheduleIdIn = Annotated[int, PathParam(ge=1, le=MAX_ID, description="the schedule's id")]
SCHEDULE_LINKS = {
    **{
        name: {"operationId": operation, "parameters": {"schedule_id": "$response.body#/id"}}
        for name, operation in (
            ("GetSchedule", "get_schedule"),
            ("PauseSchedule", "pause_schedule"),
            ("ResumeSchedule", "resume_schedule"),
            ("RunSchedule", "run_schedule"),
            ("DeleteSchedule", "delete_schedule"),
        )
    },
    "ListSchedules": {"operationId": "list_schedules"},
    # The schedule's cron expression and zone read again, as a preview reads them.
    "PreviewSchedule": {
        "operationId": "preview_schedule",
        "parameters": {
            "query.cron": "$response.body#/cron",
            "query.time_zone": "$response.body#/time_zone",
        },
    },
}


@router.post(
    "/api/schedules",
    response_model=ScheduleOut,
    status_code=201,
    tags=["schedules"],
    operation_id="create_schedule",
    dependencies=[Depends(require_json)],
    responses={
        200: {
            "model": ScheduleOut,
            "description": "The schedule an earlier request with this Idempotency-Key created",
            "links": SCHEDULE_LINKS,
        },
        201: {"description": "The schedule and its next firing times", "links": SCHEDULE_LINKS},
        **problems(400, 401, 409, 415, 422, 429),
    },
)
def create_schedule(
    body: ScheduleIn,
    parts: Parts,
    user: CurrentUser,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> ScheduleOut:
    """A schedule of a saved query; 200 with the same schedule when an `Idempotency-Key` was
    sent before (409 when that key named another request)."""
    view = parts.schedules.create(
        user, body.saved_query, body.parameters,
        cron=body.cron, time_zone=body.time_zone, ends_at=body.ends_at,
        idempotency_key=idempotency_key,
    )  # fmt: skip
    if not view.created:
        response.status_code = 200
    return ScheduleOut.of(view)


@router.get(
    "/api/schedules",
    response_model=list[ScheduleOut],
    tags=["schedules"],
    operation_id="list_schedules",
    responses=problems(401),
)
def list_schedules(parts: Parts, user: CurrentUser) -> list[ScheduleOut]:
    """Your schedules (an operator's: everyone's), newest first."""
    return [ScheduleOut.of(view) for view in parts.schedules.list(user)]


@router.get(
    "/api/schedule-preview",
    response_model=SchedulePreviewOut,
    tags=["schedules"],
    operation_id="preview_schedule",
    responses=problems(401, 422),
)
def preview_schedule(
    parts: Parts,
    user: CurrentUser,
    cron: Annotated[
        str,
        Query(
            min_length=1,
            max_length=200,
            examples=["0 8 * * *"],
            json_schema_extra={"pattern": CRON_PATTERN},
        ),
    ],
    time_zone: Annotated[
        str,
        Query(
            min_length=1,
            max_length=64,
            examples=["Europe/Paris"],
            json_schema_extra={"pattern": TIME_ZONE_PATTERN},
        ),
    ],
) -> SchedulePreviewOut:
    """A cron expression in a time zone as a schedule would read it (nothing is saved): in
    words, its next times, and the shortest gap between two of its firings over the next
    year; 422 naming `cron` when that gap is below the minimum period, as creating refuses."""
    return SchedulePreviewOut.of(parts.schedules.preview(cron, time_zone))


@router.get(
    "/api/schedules/{schedule_id}",
    response_model=ScheduleOut,
    tags=["schedules"],
    operation_id="get_schedule",
    responses=problems(401, 404, 422),
)
def get_schedule(schedule_id: ScheduleIdIn, parts: Parts, user: CurrentUser) -> ScheduleOut:
    return ScheduleOut.of(parts.schedules.show(user, schedule_id))


@router.post(
    "/api/schedules/{schedule_id}/pause",
    response_model=ScheduleOut,
    tags=["schedules"],
    operation_id="pause_schedule",
    responses=problems(401, 404, 409, 422),
)
def pause_schedule(schedule_id: ScheduleIdIn, parts: Parts, user: CurrentUser) -> ScheduleOut:
    return ScheduleOut.of(parts.schedules.pause(user, schedule_id))


@router.post(
    "/api/schedules/{schedule_id}/resume",
    response_model=ScheduleOut,
    tags=["schedules"],
    operation_id="resume_schedule",
    responses=problems(401, 403, 404, 409, 422),
)
def resume_schedule(schedule_id: ScheduleIdIn, parts: Parts, user: CurrentUser) -> ScheduleOut:
    """Fire again from the next time after now; times missed while paused are not made up."""
    return ScheduleOut.of(parts.schedules.resume(user, schedule_id))


@router.post(
    "/api/schedules/{schedule_id}/run",
    response_model=JobOut,
    status_code=201,
    tags=["schedules"],
    operation_id="run_schedule",
    responses=job_created(
        "The new job, made as a firing would make it", 401, 403, 404, 409, 422, 429
    ),
)
def run_schedule(
    schedule_id: ScheduleIdIn,
    parts: Parts,
    user: CurrentUser,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> JobOut:
    """An export now, as a firing of the schedule would make it; 200 with the same export
    when an `Idempotency-Key` was sent before."""
    created = parts.schedules.run_now(user, schedule_id, idempotency_key=idempotency_key)
    if not created.created:
        response.status_code = 200
    return JobOut.of(created.job)


@router.delete(
    "/api/schedules/{schedule_id}",
    status_code=204,
    tags=["schedules"],
    operation_id="delete_schedule",
    responses=problems(401, 404, 422),
)
def delete_schedule(schedule_id: ScheduleIdIn, parts: Parts, user: CurrentUser) -> Response:
    """It never fires again and leaves the lists; the exports it made stay."""
    parts.schedules.delete(user, schedule_id)
    return Response(status_code=204)
