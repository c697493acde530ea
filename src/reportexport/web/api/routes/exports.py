"""Saved queries, exports and their downloads: each handler is one call to the export service."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse, StreamingResponse

from reportexport.services.exports import (
    MAX_ID,
    MAX_PAGE,
    StoredFile,
)
from reportexport.web.api.head import is_head
from reportexport.web.api.models import (
    CsvSchemaOut,
    ExportIn,
    JobDetailOut,
    JobOut,
    JobPageOut,
    JobStatus,
    ProblemOut,
    SavedQueryOut,
    problems,
)
from reportexport.web.api.ranges import (
    Unsatisfiable,
    entity_tag,
    http_date,
    matches_any,
    requested_part,
    still_current,
    unchanged_since,
)
from reportexport.web.deps import CurrentUser, IdempotencyKey, JobIdIn, Parts, text_query
from reportexport.web.problems import ProblemError, require_json

router = APIRouter(responses=problems(405, 503))  # a wrong method; an outage

# The links between operations (OpenAPI `links`): how a client, or schemathesis' stateful
# phase, goes from one answer to the next request. Every operation that takes a token is
# reached by one.
JOB_OPERATIONS = (
    ("GetExport", "get_export"),
    ("CancelExport", "cancel_export"),
    ("NotifyExport", "notify_export"),
    ("RerunExport", "rerun_export"),
    ("DownloadExport", "download_export"),
    ("ExportSchema", "export_schema"),
    ("RedriveSideEffect", "redrive_side_effect"),
)


def job_links(job_id: str) -> dict[str, Any]:
    """Links to what can be done to the job whose id is at `job_id` (a runtime expression)."""
    return {
        name: {"operationId": operation, "parameters": {"job_id": job_id}}
        for name, operation in JOB_OPERATIONS
    }


QUERY_LINKS = {
    "SavedQueryOfExport": {
        "operationId": "get_saved_query",
        "parameters": {"name": "$response.body#/saved_query"},
    },
    "ExportsOfQuery": {
        "operationId": "list_exports",
        "parameters": {"saved_query": "$response.body#/saved_query"},
    },
    "AccessOfOwner": {
        "operationId": "person_access",
        "parameters": {"person": "$response.body#/owner"},
    },
    "NotifyOwnerAlways": {
        "operationId": "set_notify_always",
        "description": "An e-mail to the owner when any of their exports ends (or no more)",
        "parameters": {"person": "$response.body#/owner"},
    },
    "ScheduleThis": {
        "operationId": "create_schedule",
        "description": "The same export every day at 08:00 UTC",
        "requestBody": {
            "saved_query": "$response.body#/saved_query",
            "parameters": "$response.body#/parameters",
            "cron": "0 8 * * *",
            "time_zone": "UTC",
        },
    },
}
JOB_LINKS = {**job_links("$response.body#/id"), **QUERY_LINKS}


def job_created(description: str, *statuses: int) -> dict[int | str, dict[str, Any]]:
    """A new job (201) or, for a repeated Idempotency-Key, the earlier one (200)."""
    again = "The job an earlier request with this Idempotency-Key created"
    return {
        200: {"model": JobOut, "description": again, "links": JOB_LINKS},
        201: {"description": description, "links": JOB_LINKS},
        **problems(*statuses),
    }


@router.get(
    "/api/saved-queries",
    response_model=list[SavedQueryOut],
    tags=["saved queries"],
    operation_id="list_saved_queries",
    responses={
        200: {
            "description": "The catalog's saved queries",
            "links": {
                "GetSavedQuery": {
                    "operationId": "get_saved_query",
                    "parameters": {"name": "$response.body#/0/name"},
                }
            },
        },
        **problems(401),
    },
)
def saved_queries(parts: Parts, user: CurrentUser) -> list[SavedQueryOut]:
    return [SavedQueryOut.of(q) for q in parts.exports.saved_queries(user)]


@router.get(
    "/api/saved-queries/{name}",
    response_model=SavedQueryOut,
    tags=["saved queries"],
    operation_id="get_saved_query",
    responses={
        200: {
            "description": "The saved query and its parameters",
            "links": {
                "ExportsOfQuery": {
                    "operationId": "list_exports",
                    "parameters": {"saved_query": "$response.body#/name"},
                }
            },
        },
        **problems(401, 404),
    },
)
def saved_query(name: str, parts: Parts, user: CurrentUser) -> SavedQueryOut:
    return SavedQueryOut.of(parts.exports.saved_query(user, name))


@router.post(
    "/api/exports",
    response_model=JobOut,
    status_code=201,
    tags=["exports"],
    operation_id="create_export",
    dependencies=[Depends(require_json)],
    responses=job_created("The new job, queued", 400, 401, 409, 415, 422, 429),
)
def create_export(
    body: ExportIn,
    parts: Parts,
    user: CurrentUser,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> JobOut:
    created = parts.exports.create(
        user,
        body.saved_query,
        body.parameters,
        idempotency_key=idempotency_key,
        notify=body.notify,
    )
    if not created.created:
        response.status_code = 200
    return JobOut.of(created.job)


@router.get(
    "/api/exports",
    response_model=JobPageOut,
    tags=["exports"],
    operation_id="list_exports",
    responses=problems(401, 422),
)
def list_exports(
    parts: Parts,
    user: CurrentUser,
    status: JobStatus | None = None,
    saved_query: Annotated[str | None, text_query(100)] = None,
    owner: Annotated[str | None, text_query(100, "operators: one person's jobs")] = None,
    before: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
) -> JobPageOut:
    page = parts.exports.jobs_of(
        user, status=status, saved_query=saved_query, owner=owner, before=before, limit=limit
    )
    return JobPageOut(jobs=[JobOut.of(j) for j in page.jobs], next_cursor=page.next_cursor)


@router.get(
    "/api/exports/{job_id}",
    response_model=JobDetailOut,
    tags=["exports"],
    operation_id="get_export",
    responses={
        200: {
            "description": "The job, its history, its side effects and where it was announced",
            "links": {
                **job_links("$response.body#/job/id"),
                "RedriveDelivery": {
                    "operationId": "redrive_delivery",
                    "parameters": {"delivery_id": "$response.body#/deliveries/0/id"},
                },
            },
        },
        **problems(401, 404, 422),
    },
)
def get_export(job_id: JobIdIn, parts: Parts, user: CurrentUser) -> JobDetailOut:
    return JobDetailOut.of(parts.exports.job(user, job_id, with_deliveries=True))


@router.post(
    "/api/exports/{job_id}/cancel",
    response_model=JobOut,
    tags=["exports"],
    operation_id="cancel_export",
    responses=problems(401, 404, 409, 422),
)
def cancel_export(job_id: JobIdIn, parts: Parts, user: CurrentUser) -> JobOut:
    return JobOut.of(parts.exports.cancel(user, job_id))


@router.post(
    "/api/exports/{job_id}/notify",
    response_model=JobOut,
    tags=["exports"],
    operation_id="notify_export",
    responses={
        200: {"description": "The job, which now says notify: true"},
        **problems(401, 403, 404, 409, 422),
    },
)
def notify_export(job_id: JobIdIn, parts: Parts, user: CurrentUser) -> JobOut:
    """E-mail me when my export ends: asked for while it has not ended (409 once it has; 422
    naming `notify` while I have no e-mail address, or one e-mail may not go to)."""
    return JobOut.of(parts.exports.notify(user, job_id))


@router.post(
    "/api/exports/{job_id}/rerun",
    response_model=JobOut,
    status_code=201,
    tags=["exports"],
    operation_id="rerun_export",
    responses=job_created(
        "The new job, owned by the old job's owner", 401, 403, 404, 409, 422, 429
    ),
)
def rerun_export(
    job_id: JobIdIn,
    parts: Parts,
    user: CurrentUser,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> JobOut:
    created = parts.exports.rerun(user, job_id, idempotency_key=idempotency_key)
    if not created.created:
        response.status_code = 200
    return JobOut.of(created.job)


@router.get(
    "/api/exports/{job_id}/download",
    tags=["exports"],
    status_code=302,
    operation_id="download_export",
    response_class=RedirectResponse,
    responses={
        302: {
            "description": "A signed, expiring link to the file (Location)",
            "links": {
                # The token is the link's last segment: a regex extractor of schemathesis (an
                # extension of runtime expressions); other tools follow Location itself.
                "ServeDownload": {
                    "operationId": "serve_download",
                    "parameters": {
                        "token": "$response.header.Location#regex:/api/downloads/([^/?#]+)"
                    },
                }
            },
        },
        **problems(401, 403, 404, 409, 410, 422),
    },
)
def download_export(job_id: JobIdIn, parts: Parts, user: CurrentUser) -> RedirectResponse:
    link = parts.exports.download(user, job_id)
    return RedirectResponse(link.url, status_code=302)


@router.get(
    "/api/exports/{job_id}/schema",
    tags=["exports"],
    operation_id="export_schema",
    response_model=CsvSchemaOut,
    responses=problems(401, 403, 404, 409, 422),
)
def export_schema(job_id: JobIdIn, parts: Parts, user: CurrentUser) -> JSONResponse:
    """The small JSON schema next to the CSV: dialect, column names and types."""
    name, schema = parts.exports.file_schema(user, job_id)
    return JSONResponse(schema, headers={"Content-Disposition": f'inline; filename="{name}"'})


@router.get(
    "/api/downloads/{token}",
    tags=["exports"],
    operation_id="serve_download",
    response_class=StreamingResponse,
    responses={
        200: {"description": "The file", "content": {"text/csv": {}, "application/gzip": {}}},
        206: {
            "description": "The part of the file one Range asks for (Content-Range)",
            "content": {"text/csv": {}, "application/gzip": {}},
        },
        304: {
            "description": "Unchanged since the ETag in If-None-Match (or, without it, since "
            "the date in If-Modified-Since)"
        },
        416: {
            "model": ProblemOut,
            "description": "The Range asks for no byte of the file (Content-Range: bytes */size)",
            "content": {"application/problem+json": {"schema": ProblemOut.model_json_schema()}},
        },
        **problems(403, 410),
    },
)
def serve_download(token: str, parts: Parts, request: Request) -> Response:
    """The file a signed link names (the local object store's links; S3 links go to S3).

    HEAD answers the headers alone; one `Range` is answered with 206 and that part, a range past
    the end with 416; ETag and Last-Modified let a browser resume (If-Range) or revalidate
    (If-None-Match, If-Modified-Since: 304). A
    browser that opens an expired or forged link gets a page, an API client a problem.
    """
    return _file_answer(request, parts.exports.open_link(token))


def _file_answer(request: Request, stored: StoredFile) -> Response:
    media = "application/gzip" if stored.file_name.endswith(".gz") else "text/csv; charset=utf-8"
    etag = entity_tag(stored.key, stored.size, stored.modified)
    headers = {
        "Content-Disposition": _disposition(stored.file_name),
        "Accept-Ranges": "bytes",
        "ETag": etag,
        "Last-Modified": http_date(stored.modified),
        "Cache-Control": "private, max-age=0, must-revalidate",
    }
    if_none_match = request.headers.get("if-none-match")
    if matches_any(if_none_match, etag) or (
        if_none_match is None
        and unchanged_since(request.headers.get("if-modified-since"), stored.modified)
    ):
        stored.stream.close()
        return Response(status_code=304, headers=headers)
    part = None
    if still_current(request.headers.get("if-range"), etag, stored.modified):
        try:
            part = requested_part(request.headers.get("range"), stored.size)
        except Unsatisfiable:
            stored.stream.close()
            refused = {**headers, "Content-Range": f"bytes */{stored.size}"}
            raise ProblemError(
                416,
                "Range Not Satisfiable",
                f"the file has {stored.size} bytes; the range asks for none of them",
                headers=refused,
            ) from None
    status, length = 200, stored.size
    if part is not None:
        status, length = 206, part.length
        headers["Content-Range"] = f"bytes {part.start}-{part.end}/{stored.size}"
    headers["Content-Length"] = str(length)
    if is_head(request):  # the headers only: no need to read the file
        stored.stream.close()
        return Response(status_code=status, media_type=media, headers=headers)
    start = part.start if part is not None else 0
    return StreamingResponse(
        _chunks(stored, start, length), status_code=status, media_type=media, headers=headers
    )


def _disposition(file_name: str) -> str:
    """An attachment with the file's name, plain where it can be and RFC 5987 where not."""
    plain = "".join(
        c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in file_name
    )
    if plain == file_name:
        return f'attachment; filename="{plain}"'
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(file_name, safe='')}"


def _chunks(stored: StoredFile, start: int, length: int) -> Any:
    with stored.stream as handle:
        handle.seek(start)
        left = length
        while left > 0 and (chunk := handle.read(min(1 << 20, left))):
            left -= len(chunk)
            yield chunk
