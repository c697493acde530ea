"""Scheduled exports: create, list, show (with the next firing times), pause, resume,
delete, run now; the people each firing's announcement goes to."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response
from fastapi import Path as PathParam

from reportexport.services.exports import MAX_ID
from reportexport.services.schedules import ADDRESS_PATTERN, MAX_ATTACH_BYTES
from reportexport.timetable.firings import CRON_PATTERN, TIME_ZONE_PATTERN
from reportexport.web.api.models import (
    JobOut,
    RecipientOut,
    ScheduleAddressOut,
    ScheduleChannelOut,
    ScheduleIn,
    ScheduleOut,
    SchedulePreviewOut,
    problems,
)
from reportexport.web.api.routes.exports import job_created
from reportexport.web.api.routes.groups import PersonName
from reportexport.web.deps import ChannelIdIn, CurrentUser, IdempotencyKey, Parts
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
    "ListRecipients": {
        "operationId": "list_schedule_recipients",
        "parameters": {"schedule_id": "$response.body#/id"},
    },
    "AddOwnerAsRecipient": {
        "operationId": "add_schedule_recipient",
        "description": "Its owner gets an e-mail at each firing",
        "parameters": {"schedule_id": "$response.body#/id", "person": "$response.body#/owner"},
    },
    "ListScheduleChannels": {
        "operationId": "list_schedule_channels",
        "parameters": {"schedule_id": "$response.body#/id"},
    },
    "ListScheduleAddresses": {
        "operationId": "list_schedule_addresses",
        "parameters": {"schedule_id": "$response.body#/id"},
    },
    "AddScheduleAddress": {
        "operationId": "add_schedule_address",
        "description": "An outside address gets each firing's announcement",
        "parameters": {"schedule_id": "$response.body#/id"},
    },
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


RECIPIENT_LINKS = {
    "RemoveRecipient": {
        "operationId": "remove_schedule_recipient",
        "parameters": {
            "schedule_id": "$response.body#/schedule_id",
            "person": "$response.body#/person",
        },
    },
    "ListRecipients": {
        "operationId": "list_schedule_recipients",
        "parameters": {"schedule_id": "$response.body#/schedule_id"},
    },
    "GetSchedule": {
        "operationId": "get_schedule",
        "parameters": {"schedule_id": "$response.body#/schedule_id"},
    },
}


# From the list: a recipient added to the schedule the list was asked of, or its first taken off.
LISTED_RECIPIENTS_LINKS = {
    "AddScheduleRecipient": {
        "operationId": "add_schedule_recipient",
        "parameters": {"schedule_id": "$request.path.schedule_id"},
    },
    "RemoveFirstRecipient": {
        "operationId": "remove_schedule_recipient",
        "parameters": {
            "schedule_id": "$request.path.schedule_id",
            "person": "$response.body#/0/person",
        },
    },
}


@router.get(
    "/api/schedules/{schedule_id}/recipients",
    response_model=list[RecipientOut],
    tags=["schedules"],
    operation_id="list_schedule_recipients",
    responses={
        200: {"description": "Its recipients (none: an empty list)",
              "links": LISTED_RECIPIENTS_LINKS},
        **problems(401, 404, 422),
    },
)  # fmt: skip
def list_schedule_recipients(
    schedule_id: ScheduleIdIn, parts: Parts, user: CurrentUser
) -> list[RecipientOut]:
    """The people each firing's announcement goes to by e-mail besides the schedule's owner."""
    return [RecipientOut.of(r) for r in parts.schedules.recipients(user, schedule_id)]


@router.put(
    "/api/schedules/{schedule_id}/recipients/{person}",
    response_model=RecipientOut,
    status_code=201,
    tags=["schedules"],
    operation_id="add_schedule_recipient",
    responses={
        200: {
            "model": RecipientOut,
            "description": "They were a recipient already",
            "links": RECIPIENT_LINKS,
        },
        201: {"description": "They get each firing's announcement from now on",
              "links": RECIPIENT_LINKS},
        **problems(401, 403, 404, 422),
    },
)  # fmt: skip
def add_schedule_recipient(
    schedule_id: ScheduleIdIn,
    person: PersonName,
    parts: Parts,
    user: CurrentUser,
    response: Response,
) -> RecipientOut:
    """The person gets each firing's announcement by e-mail, with a link to the export, which
    they may open and download while they may run its saved query themselves with the values
    bound to the schedule's owner. The owner or an operator adds (the owner themself too: an
    e-mail at each firing): 404 for no such person, 403 when they may not run it (naming the
    access rule to operators alone), 422 naming `person` when they have no e-mail address or
    one outside `email_domains`."""
    recipient, added = parts.schedules.add_recipient(user, schedule_id, person)
    if not added:
        response.status_code = 200
    return RecipientOut.of(recipient)


@router.delete(
    "/api/schedules/{schedule_id}/recipients/{person}",
    status_code=204,
    tags=["schedules"],
    operation_id="remove_schedule_recipient",
    responses=problems(401, 404, 422),
)
def remove_schedule_recipient(
    schedule_id: ScheduleIdIn, person: PersonName, parts: Parts, user: CurrentUser
) -> Response:
    """The person no longer gets the schedule's announcements, nor sees its exports. The owner
    or an operator removes anyone; a recipient removes themselves."""
    parts.schedules.remove_recipient(user, schedule_id, person)
    return Response(status_code=204)


SCHEDULE_CHANNEL_LINKS = {
    "RemoveScheduleChannel": {
        "operationId": "remove_schedule_channel",
        "parameters": {
            "schedule_id": "$response.body#/schedule_id",
            "channel_id": "$response.body#/channel_id",
        },
    },
    "ListScheduleChannels": {
        "operationId": "list_schedule_channels",
        "parameters": {"schedule_id": "$response.body#/schedule_id"},
    },
    "GetSchedule": {
        "operationId": "get_schedule",
        "parameters": {"schedule_id": "$response.body#/schedule_id"},
    },
}


# From the list: a channel added to (or taken off) the schedule the list was asked of.
LISTED_CHANNELS_LINKS = {
    "AddScheduleChannel": {
        "operationId": "add_schedule_channel",
        "description": "A chat channel gets each firing's announcement",
        "parameters": {"schedule_id": "$request.path.schedule_id"},
    },
    "RemoveScheduleChannel": {
        "operationId": "remove_schedule_channel",
        "parameters": {"schedule_id": "$request.path.schedule_id"},
    },
}


@router.get(
    "/api/schedules/{schedule_id}/channels",
    response_model=list[ScheduleChannelOut],
    tags=["schedules"],
    operation_id="list_schedule_channels",
    responses={
        200: {"description": "Its channels (none: an empty list)", "links": LISTED_CHANNELS_LINKS},
        **problems(401, 404, 422),
    },
)
def list_schedule_channels(
    schedule_id: ScheduleIdIn, parts: Parts, user: CurrentUser
) -> list[ScheduleChannelOut]:
    """The chat channels each firing's announcement goes to besides the owner's channels and
    the global ones (without their URLs)."""
    return [ScheduleChannelOut.of(c) for c in parts.schedules.schedule_channels(user, schedule_id)]


@router.put(
    "/api/schedules/{schedule_id}/channels/{channel_id}",
    response_model=ScheduleChannelOut,
    status_code=201,
    tags=["schedules"],
    operation_id="add_schedule_channel",
    responses={
        200: {
            "model": ScheduleChannelOut,
            "description": "It was one of the schedule's channels already",
            "links": SCHEDULE_CHANNEL_LINKS,
        },
        201: {"description": "It gets each firing's announcement from now on",
              "links": SCHEDULE_CHANNEL_LINKS},
        **problems(401, 404, 422),
    },
)  # fmt: skip
def add_schedule_channel(
    schedule_id: ScheduleIdIn,
    channel_id: ChannelIdIn,
    parts: Parts,
    user: CurrentUser,
    response: Response,
) -> ScheduleChannelOut:
    """The chat channel gets each firing's announcement: one message with the saved query's
    title, the parameters, the rows or the reason, and a link to the export. Operators
    register channels and add any; the schedule's owner adds those registered for them (a
    channel registered `schedules_only` gets nothing else). 404 for a channel that does not
    exist, was removed, or is not the owner's to add."""
    added, now = parts.schedules.add_channel(user, schedule_id, channel_id)
    if not now:
        response.status_code = 200
    return ScheduleChannelOut.of(added)


@router.delete(
    "/api/schedules/{schedule_id}/channels/{channel_id}",
    status_code=204,
    tags=["schedules"],
    operation_id="remove_schedule_channel",
    responses=problems(401, 404, 422),
)
def remove_schedule_channel(
    schedule_id: ScheduleIdIn, channel_id: ChannelIdIn, parts: Parts, user: CurrentUser
) -> Response:
    """The chat channel no longer gets the schedule's announcements. Its owner or an operator
    removes it."""
    parts.schedules.remove_channel(user, schedule_id, channel_id)
    return Response(status_code=204)


AddressIn = Annotated[
    str,
    PathParam(max_length=254, pattern=ADDRESS_PATTERN,
              description="an e-mail address, one plain mailbox"),
]  # fmt: skip
SCHEDULE_ADDRESS_LINKS = {
    "RemoveScheduleAddress": {
        "operationId": "remove_schedule_address",
        "parameters": {
            "schedule_id": "$response.body#/schedule_id",
            "address": "$response.body#/address",
        },
    },
    "ListScheduleAddresses": {
        "operationId": "list_schedule_addresses",
        "parameters": {"schedule_id": "$response.body#/schedule_id"},
    },
    "GetSchedule": {
        "operationId": "get_schedule",
        "parameters": {"schedule_id": "$response.body#/schedule_id"},
    },
}
# From the list: an address added to the schedule the list was asked of, or its first taken off.
LISTED_ADDRESSES_LINKS = {
    "AddScheduleAddress": {
        "operationId": "add_schedule_address",
        "parameters": {"schedule_id": "$request.path.schedule_id"},
    },
    "RemoveFirstAddress": {
        "operationId": "remove_schedule_address",
        "parameters": {
            "schedule_id": "$request.path.schedule_id",
            "address": "$response.body#/0/address",
        },
    },
}


@router.get(
    "/api/schedules/{schedule_id}/addresses",
    response_model=list[ScheduleAddressOut],
    tags=["schedules"],
    operation_id="list_schedule_addresses",
    responses={
        200: {"description": "Its outside addresses (none: an empty list)",
              "links": LISTED_ADDRESSES_LINKS},
        **problems(401, 404, 422),
    },
)  # fmt: skip
def list_schedule_addresses(
    schedule_id: ScheduleIdIn, parts: Parts, user: CurrentUser
) -> list[ScheduleAddressOut]:
    """The e-mail addresses outside this service's people that each firing's announcement
    goes to. The schedule's owner and operators see them."""
    return [ScheduleAddressOut.of(a) for a in parts.schedules.addresses(user, schedule_id)]


@router.put(
    "/api/schedules/{schedule_id}/addresses/{address}",
    response_model=ScheduleAddressOut,
    status_code=201,
    tags=["schedules"],
    operation_id="add_schedule_address",
    responses={
        200: {
            "model": ScheduleAddressOut,
            "description": "It was one of the schedule's addresses already; what it gets "
            "attached is set again",
            "links": SCHEDULE_ADDRESS_LINKS,
        },
        201: {"description": "It gets each firing's announcement from now on",
              "links": SCHEDULE_ADDRESS_LINKS},
        **problems(401, 403, 404, 422),
    },
)  # fmt: skip
def add_schedule_address(
    schedule_id: ScheduleIdIn,
    address: AddressIn,
    parts: Parts,
    user: CurrentUser,
    response: Response,
    attach_max_bytes: Annotated[
        int | None,
        Query(
            ge=1,
            le=MAX_ATTACH_BYTES,
            description="attach the file when it is at most this many bytes (after gzip "
            "with attach_gzip); left out: send a download link alone",
        ),
    ] = None,
    attach_gzip: Annotated[
        bool, Query(description="compress the attached file with gzip (name.csv.gz)")
    ] = False,
) -> ScheduleAddressOut:
    """Operators: the address, outside this service's people (a partner, a shared mailbox),
    gets each firing's announcement by e-mail: the saved query's title, the parameters and
    the rows, with the file attached when it is at most `attach_max_bytes` or a download link
    signed for the link's lifetime; a failure without its reason; no link to the dashboard.
    Always recorded in the audit log. 403 for the schedule's owner (a person of this service
    is added as a recipient); 422 naming `address` for one that is not one plain mailbox or
    outside `email_domains`."""
    added, now = parts.schedules.add_address(
        user, schedule_id, address, attach_max_bytes=attach_max_bytes, attach_gzip=attach_gzip
    )
    if not now:
        response.status_code = 200
    return ScheduleAddressOut.of(added)


@router.delete(
    "/api/schedules/{schedule_id}/addresses/{address}",
    status_code=204,
    tags=["schedules"],
    operation_id="remove_schedule_address",
    responses=problems(401, 404, 422),
)
def remove_schedule_address(
    schedule_id: ScheduleIdIn, address: AddressIn, parts: Parts, user: CurrentUser
) -> Response:
    """The address no longer gets the schedule's announcements. The schedule's owner or an
    operator removes it (recorded in the audit log)."""
    parts.schedules.remove_address(user, schedule_id, address)
    return Response(status_code=204)
