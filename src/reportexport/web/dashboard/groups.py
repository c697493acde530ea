"""The operators' group pages: the groups (make one), a group's members (add someone, remove
them, delete the group) and what the saved queries' access rules give the group.

Removing a member or deleting the group takes their access away at once (see
`services.access`); the page that answers says what that canceled and paused.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from reportexport.core.catalog import GROUP_NAME
from reportexport.core.records import User
from reportexport.core.text import quoted
from reportexport.services.access import Withdrawn
from reportexport.services.errors import ConflictError, InvalidInputError, NotFoundError
from reportexport.web.dashboard.guards import OPERATOR, Operator, form_router, page_router, to_page
from reportexport.web.dashboard.ui import page, redirect
from reportexport.web.deps import parts

router = APIRouter(include_in_schema=False)
pages = page_router(OPERATOR)
GROUPS = "/operators/groups"


def group_href(name: str) -> str:
    return f"{GROUPS}/{quote(name, safe='')}"


def _back_to_group(request: Request, fields: Mapping[str, str]) -> str:
    name = str(request.path_params.get("group", ""))
    return group_href(name) if GROUP_NAME.fullmatch(name) else GROUPS


group_forms = form_router(to_page(GROUPS), operators=True)
member_forms = form_router(_back_to_group, operators=True)


@pages.get(GROUPS)
def groups_page(request: Request, user: Operator) -> Response:
    return _groups(request, user)


def _groups(
    request: Request,
    user: User,
    *,
    form: dict[str, str] | None = None,
    form_problem: str | None = None,
    status: int = 200,
) -> Response:
    access = parts(request).access
    return page(
        request,
        "operators/groups.html",
        user,
        status=status,
        groups=access.list_groups(user),
        rules=_rules_by_group(request),
        form=form or {"name": "", "description": ""},
        form_problem=form_problem,
    )


@group_forms.post(GROUPS)
def create_group(
    request: Request, user: Operator, name: str = Form(""), description: str = Form("")
) -> Response:
    try:
        group = parts(request).access.create_group(user, name.strip(), description.strip())
    except (InvalidInputError, ConflictError) as exc:
        status = 409 if isinstance(exc, ConflictError) else 422
        form = {"name": name, "description": description}
        return _groups(request, user, form=form, form_problem=exc.detail, status=status)
    return redirect(request, group_href(group.name), "success", f"The group {group.name} exists.")


@pages.get(GROUPS + "/{group}")
def group_page(request: Request, user: Operator, group: str) -> Response:
    return _group(request, user, group)


def _group(
    request: Request,
    user: User,
    group: str,
    *,
    person: str = "",
    form_problem: str | None = None,
    status: int = 200,
) -> Response:
    access = parts(request).access
    try:
        members = access.members(user, group)
    except NotFoundError:
        return redirect(request, GROUPS, "warning", f"There is no group {quoted(group[:63])}.")
    found = next(g for g in access.list_groups(user) if g.name == group)
    return page(
        request,
        "operators/group.html",
        user,
        status=status,
        group=found,
        members=members,
        rules=_rules_by_group(request).get(group, []),
        person=person,
        form_problem=form_problem,
    )


@member_forms.post(GROUPS + "/{group}/members")
def add_member(request: Request, user: Operator, group: str, name: str = Form("")) -> Response:
    try:
        added = parts(request).access.add_member(user, group, name.strip())
    except NotFoundError as exc:
        if "group" in exc.detail:
            return redirect(request, GROUPS, "warning", f"There is no group {quoted(group[:63])}.")
        return _group(request, user, group, person=name, form_problem=exc.detail, status=404)
    text = f"{name.strip()} {'is now in' if added else 'was already in'} {group}."
    return redirect(request, group_href(group), "success", text)


@member_forms.post(GROUPS + "/{group}/members/{name}/remove")
def remove_member(
    request: Request, user: Operator, group: str, name: str, confirmed: str = Form("")
) -> Response:
    back = group_href(group) if GROUP_NAME.fullmatch(group) else GROUPS
    if confirmed != "yes":
        return page(
            request,
            "confirm.html",
            user,
            title=f"Remove {quoted(name[:100])} from {quoted(group[:63])}?",
            detail="They lose what the group gives at once: their queued and running exports of "
            "its queries are canceled, their schedules of them pause, and their files of them "
            "can no longer be downloaded by them.",
            action=request.url.path,
            label="Remove them",
            back=back,
            fields=[],
        )
    try:
        withdrawn = parts(request).access.remove_member(user, group, name)
    except NotFoundError as exc:
        return redirect(request, back, "warning", f"{exc.detail[:1].upper()}{exc.detail[1:]}.")
    return redirect(request, back, "success", f"{name} left {group}. {_said(withdrawn)}")


@member_forms.post(GROUPS + "/{group}/delete")
def delete_group(
    request: Request, user: Operator, group: str, confirmed: str = Form("")
) -> Response:
    if confirmed != "yes":
        return page(
            request,
            "confirm.html",
            user,
            title=f"Delete the group {quoted(group[:63])}?",
            detail="Every member loses what it gives at once (their exports of its queries "
            "canceled, their schedules of them paused). Saved queries that name it in their "
            "access admit nobody through it until a group of that name is made again.",
            action=request.url.path,
            label="Delete the group",
            back=group_href(group) if GROUP_NAME.fullmatch(group) else GROUPS,
            fields=[],
        )
    try:
        withdrawn = parts(request).access.delete_group(user, group)
    except NotFoundError as exc:
        return redirect(request, GROUPS, "warning", f"{exc.detail[:1].upper()}{exc.detail[1:]}.")
    return redirect(request, GROUPS, "success", f"The group {group} is deleted. {_said(withdrawn)}")


def _said(withdrawn: Withdrawn) -> str:
    parts_said = []
    if withdrawn.canceled:
        listed = ", ".join(f"#{job}" for job in withdrawn.canceled)
        parts_said.append(f"Canceled, access withdrawn: export {listed}.")
    if withdrawn.paused:
        listed = ", ".join(f"#{schedule}" for schedule in withdrawn.paused)
        parts_said.append(f"Paused: schedule {listed}.")
    return " ".join(parts_said) or "Nothing was queued, running or scheduled that this withdraws."


def _rules_by_group(request: Request) -> dict[str, list[str]]:
    """Where the catalog names each group: `queries.invoices.access`, `sources.hr.access`."""
    found: dict[str, set[str]] = {}
    for query in parts(request).exports.catalog.queries.values():
        for rule in query.access.rules:
            for group in rule.groups:
                found.setdefault(group, set()).add(rule.where)
    return {group: sorted(places) for group, places in found.items()}


router.include_router(pages)
router.include_router(group_forms)
router.include_router(member_forms)
