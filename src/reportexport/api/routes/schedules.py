"""Scheduled exports: create, list, show (with the next firing times), pause, resume,
delete, run now."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response
from fastapi import Path as PathParam

from reportexport.api.deps import CurrentUser, IdempotencyKey, Parts
from reportexport.api.models import JobOut, ScheduleIn, ScheduleOut, problems
from reportexport.api.problems import require_json
from reportexport.api.routes.exports import job_created
from reportexport.services.exports import MAX_ID

router = APIRouter(responses=problems(405, 503))  # a wrong method; an outage

ScheduleIdIn = Annotated[int, PathParam(ge=1, le=MAX_ID, description="the schedule's id")]
SCHEDULE_LINKS = {
    name: {"operationId": operation, "parameters": {"schedule_id": "$response.body#/id"}}
    for name, operation in (
        ("GetSchedule", "get_schedule"),
        ("PauseSchedule", "pause_schedule"),
        ("ResumeSchedule", "resume_schedule"),
        ("RunSchedule", "run_schedule"),
        ("DeleteSchedule", "delete_schedule"),
    )
}


@router.post(
    "/api/schedules",
    response_model=ScheduleOut,
    status_code=201,
    tags=["schedules"],
    operation_id="create_schedule",
    dependencies=[Depends(require_json)],
    responses={
        201: {"description": "The schedule and its next firing times", "links": SCHEDULE_LINKS},
        **problems(400, 401, 415, 422, 429),
    },
)
def create_schedule(body: ScheduleIn, parts: Parts, user: CurrentUser) -> ScheduleOut:
    view = parts.schedules.create(
        user, body.saved_query, body.parameters,
        cron=body.cron, time_zone=body.time_zone, ends_at=body.ends_at,
    )  # fmt: skip
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
    responses=problems(401, 404, 409, 422),
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
    responses=job_created("The new job, made as a firing would make it", 401, 404, 409, 422, 429),
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
