"""Groups, their members and people's attributes over HTTP (operators; a person may read their
own). Removing a membership or an attribute answers with what the loss of access did."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Path, Response

from reportexport.core.catalog import ATTRIBUTE_NAME
from reportexport.core.text import NO_NUL_PATTERN
from reportexport.services.access import Withdrawn
from reportexport.web.api.models import (
    GroupIn,
    GroupOut,
    NotifyAlwaysIn,
    NotifyAlwaysOut,
    PersonAccessOut,
    ValueIn,
    WithdrawnOut,
    problems,
)
from reportexport.web.deps import CurrentUser, Parts

router = APIRouter(responses=problems(405, 503))

GroupName = Annotated[
    str, Path(max_length=63, pattern=NO_NUL_PATTERN, description="a group's name")
]
PersonName = Annotated[
    str, Path(max_length=100, pattern=NO_NUL_PATTERN, description="a person's name")
]
Attribute = Annotated[
    str,
    Path(
        max_length=63,
        pattern=f"^{ATTRIBUTE_NAME.pattern}$",
        description="an attribute's name, like country: lower-case letters, digits and _, "
        "starting with a letter",
    ),
]


def _link(operation: str, **parameters: str) -> dict[str, object]:
    return {"operationId": operation, "parameters": parameters}


# The links between operations (OpenAPI `links`), as for exports: from a new group to what can
# be done to it and to the list of groups, from the list to a group's members, from a
# membership to its removal and the member's access, from a person's access to their
# attributes and memberships, from an attribute set to its removal. A person's name comes from
# the request or the answer that named them.
GROUP_LINKS = {
    "DeleteGroup": _link("delete_group", name="$response.body#/name"),
    "MembersOfGroup": _link("list_members", name="$response.body#/name"),
    "AddMember": _link("add_member", name="$response.body#/name"),
    "AllGroups": _link("list_groups"),
}
GROUPS_LINKS = {"MembersOfFirstGroup": _link("list_members", name="$response.body#/0/name")}
ACCESS_LINKS = {
    "SetAttributeOfPerson": _link("set_attribute", person="$response.body#/name"),
    "NotifyAlwaysOfPerson": _link("set_notify_always", person="$response.body#/name"),
    "UnsetFirstAttribute": _link(
        "unset_attribute",
        person="$response.body#/name",
        attribute="$response.body#/attributes/0/name",
    ),
    "LeaveFirstGroup": _link(
        "remove_member", name="$response.body#/groups/0/group", person="$response.body#/name"
    ),
}
MEMBER_LINKS = {
    "RemoveMember": _link(
        "remove_member", name="$request.path.name", person="$request.path.person"
    ),
    "AccessOfMember": _link("person_access", person="$request.path.person"),
    "SetAttributeOfMember": _link("set_attribute", person="$request.path.person"),
}
ATTRIBUTE_LINKS = {
    "UnsetAttribute": _link(
        "unset_attribute", person="$request.path.person", attribute="$request.path.attribute"
    ),
    "AccessOfPerson": _link("person_access", person="$request.path.person"),
}


@router.get(
    "/api/groups",
    response_model=list[GroupOut],
    tags=["groups"],
    operation_id="list_groups",
    responses={
        200: {"description": "Every group", "links": GROUPS_LINKS},
        **problems(401, 403),
    },
)
def list_groups(parts: Parts, user: CurrentUser) -> list[GroupOut]:
    """Operators: every group, by name, with its number of members."""
    return [GroupOut.of(group) for group in parts.access.list_groups(user)]


@router.post(
    "/api/groups",
    response_model=GroupOut,
    status_code=201,
    tags=["groups"],
    operation_id="create_group",
    responses={
        201: {"description": "The new group", "links": GROUP_LINKS},
        **problems(400, 401, 403, 409, 415, 422),
    },
)
def create_group(body: GroupIn, parts: Parts, user: CurrentUser) -> GroupOut:
    """Operators: a new group, which saved queries and sources may name in `access`."""
    return GroupOut.of(parts.access.create_group(user, body.name, body.description))


@router.delete(
    "/api/groups/{name}",
    response_model=WithdrawnOut,
    tags=["groups"],
    operation_id="delete_group",
    responses=problems(401, 403, 404, 422),
)
def delete_group(name: GroupName, parts: Parts, user: CurrentUser) -> WithdrawnOut:
    """Operators: the group goes; its members lose at once what it gave them (their exports of
    it canceled, their schedules of it paused)."""
    return _withdrawn(parts.access.delete_group(user, name))


@router.get(
    "/api/groups/{name}/members",
    response_model=list[str],
    tags=["groups"],
    operation_id="list_members",
    responses=problems(401, 403, 404, 422),
)
def list_members(name: GroupName, parts: Parts, user: CurrentUser) -> list[str]:
    """Operators: the names of a group's members."""
    return parts.access.members(user, name)


@router.put(
    "/api/groups/{name}/members/{person}",
    status_code=204,
    tags=["groups"],
    operation_id="add_member",
    responses={
        204: {"description": "The person is a member", "links": MEMBER_LINKS},
        **problems(401, 403, 404, 422),
    },
)
def add_member(name: GroupName, person: PersonName, parts: Parts, user: CurrentUser) -> Response:
    """Operators: the person joins the group (again: nothing changes)."""
    parts.access.add_member(user, name, person)
    return Response(status_code=204)


@router.delete(
    "/api/groups/{name}/members/{person}",
    response_model=WithdrawnOut,
    tags=["groups"],
    operation_id="remove_member",
    responses=problems(401, 403, 404, 422),
)
def remove_member(
    name: GroupName, person: PersonName, parts: Parts, user: CurrentUser
) -> WithdrawnOut:
    """Operators: the person leaves the group and loses at once what it gave them."""
    return _withdrawn(parts.access.remove_member(user, name, person))


@router.get(
    "/api/people/{person}/access",
    response_model=PersonAccessOut,
    tags=["groups"],
    operation_id="person_access",
    responses={
        200: {"description": "The person's groups and attributes", "links": ACCESS_LINKS},
        **problems(401, 403, 404, 422),
    },
)
def person_access(person: PersonName, parts: Parts, user: CurrentUser) -> PersonAccessOut:
    """A person's groups and attributes, each with where it came from (operators; anyone
    their own)."""
    return PersonAccessOut.of(parts.access.access_of(user, person))


@router.put(
    "/api/people/{person}/attributes/{attribute}",
    response_model=WithdrawnOut,
    tags=["groups"],
    operation_id="set_attribute",
    responses={
        200: {
            "description": "What the new value withdrew",
            "links": ATTRIBUTE_LINKS,
        },
        **problems(400, 401, 403, 404, 415, 422),
    },
)
def set_attribute(
    person: PersonName,
    attribute: Attribute,
    body: Annotated[ValueIn, Body()],
    parts: Parts,
    user: CurrentUser,
) -> WithdrawnOut:
    """Operators: the attribute takes the value; the person's exports made with another value
    of it are canceled."""
    return _withdrawn(parts.access.set_attribute(user, person, attribute, body.value))


@router.delete(
    "/api/people/{person}/attributes/{attribute}",
    response_model=WithdrawnOut,
    tags=["groups"],
    operation_id="unset_attribute",
    responses=problems(401, 403, 404, 422),
)
def unset_attribute(
    person: PersonName, attribute: Attribute, parts: Parts, user: CurrentUser
) -> WithdrawnOut:
    """Operators: the attribute goes, and what was bound to it with it."""
    return _withdrawn(parts.access.unset_attribute(user, person, attribute))


@router.put(
    "/api/people/{person}/notify-always",
    response_model=NotifyAlwaysOut,
    tags=["groups"],
    operation_id="set_notify_always",
    responses=problems(400, 401, 403, 404, 415, 422),
)
def set_notify_always(
    person: PersonName,
    body: Annotated[NotifyAlwaysIn, Body()],
    parts: Parts,
    user: CurrentUser,
) -> NotifyAlwaysOut:
    """An e-mail when any of the person's exports ends, or not: a person sets their own
    (operators anyone's)."""
    found = parts.people.set_notify_always(person, body.notify_always, by=user)
    return NotifyAlwaysOut(name=found.name, email=found.email, notify_always=found.notify_always)


def _withdrawn(withdrawn: Withdrawn) -> WithdrawnOut:
    return WithdrawnOut(
        canceled_exports=list(withdrawn.canceled), paused_schedules=list(withdrawn.paused)
    )
