"""What operators read over HTTP: the audit of operator actions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from reportexport.core.records import AuditAction, AuditObject
from reportexport.services.exports import MAX_ID, MAX_PAGE
from reportexport.web.api.models import AuditEntryOut, AuditPageOut, problems
from reportexport.web.deps import CurrentUser, Parts, text_query

router = APIRouter(responses=problems(405, 503))  # a wrong method; an outage


@router.get(
    "/api/audit",
    response_model=AuditPageOut,
    tags=["operators"],
    operation_id="list_audit",
    responses=problems(401, 403, 422),
)
def list_audit(
    parts: Parts,
    user: CurrentUser,
    person: Annotated[str | None, text_query(100, "one operator's")] = None,
    action: AuditAction | None = None,
    object_kind: AuditObject | None = None,
    object_id: Annotated[str | None, text_query(200, "one object's")] = None,
    before: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
) -> AuditPageOut:
    """Operators: what operators did (through the dashboard, the API or the command line),
    newest first; each entry was written in the same transaction as its action."""
    page = parts.operators.audit(
        user,
        person=person,
        action=action,
        object_kind=object_kind,
        object_id=object_id,
        before=before,
        limit=limit,
    )
    return AuditPageOut(
        entries=[AuditEntryOut.of(r) for r in page.records], next_cursor=page.next_cursor
    )
