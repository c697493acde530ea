"""Groups and people's attributes: operators manage them, and losing access takes effect at once.

Who may run a saved query is decided in the export service (core/access.py has the rules);
this service changes what those rules read, and enforces the loss right away. When a person
leaves a group, the group goes, or an attribute they had is removed or changed, every queued or
running export of theirs that their record no longer admits is canceled along the graph's
`user` cancel edge, the person recorded being the operator who made the change (the identity
provider's sync records `PROVIDER`), and every schedule of theirs that could no longer fire is
paused, each with the reason. Their finished files of such queries stop being downloadable
because the export service checks access at every download.

Every change is written with its audit entry in one transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reportexport.core.access import EVERYONE, Member, Refusal
from reportexport.core.catalog import ATTRIBUTE_NAME, GROUP_NAME
from reportexport.core.job_status import TransitionError
from reportexport.core.lifecycle import Status
from reportexport.core.records import (
    AuditAction,
    AuditEntry,
    Group,
    Job,
    JobFilter,
    JobId,
    PersonAccess,
)
from reportexport.core.text import quoted, unsafe_text
from reportexport.services.errors import (
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
)
from reportexport.services.exports import MAX_PAGE, ExportService, Person
from reportexport.services.people import PeopleService
from reportexport.store import JobStore, ScheduleStore, StaleStatusError, Users
from reportexport.store.groups import PROVIDER_NAME, Groups

# The name recorded when the identity provider's sign-in took a group or attribute away.
PROVIDER = PROVIDER_NAME
MAX_DESCRIPTION = 500
MAX_VALUE = 200
ACTIVE: tuple[Status, ...] = ("queued", "running")

log = logging.getLogger("reportexport.access")


class StoreMembers:
    """People as access sees them, read from the job store each time (no cache: a change an
    operator makes holds at the next request)."""

    def __init__(self, *, users: Users, groups: Groups) -> None:
        self.users = users
        self.groups = groups

    def member(self, name: str) -> Member | None:
        user = self.users.user_by_name(name)
        if user is None or user.revoked_at is not None or user.suspended_at is not None:
            return None  # no groups, no attributes: only what is open to everyone
        access = self.groups.access_of(name)
        return Member(
            name=name,
            is_operator=user.is_operator,
            groups=access.group_names,
            attributes=access.attribute_values,
            email=user.email,
        )


@dataclass(frozen=True, kw_only=True)
class Withdrawn:
    """What a loss of access did: the exports canceled and the schedules paused."""

    canceled: tuple[int, ...] = ()
    paused: tuple[int, ...] = ()


class AccessService:
    def __init__(
        self,
        *,
        groups: Groups,
        users: Users,
        jobs: JobStore,
        schedules: ScheduleStore,
        exports: ExportService,
        people: PeopleService,
    ) -> None:
        self.people = people
        self.groups = groups
        self.users = users
        self.jobs = jobs
        self.schedules = schedules
        self.exports = exports

    # -- groups ----------------------------------------------------------------------------------

    def list_groups(self, by: Person) -> list[Group]:
        _operator(by)
        return self.groups.list_groups()

    def members(self, by: Person, group: str) -> list[str]:
        _operator(by)
        self._group(group)
        return self.groups.members(group)

    def create_group(self, by: Person, name: str, description: str = "") -> Group:
        audit = _audit(by, "add_group", "group", name, description or None)
        if unsafe_text(name) is not None or not GROUP_NAME.fullmatch(name) or name == EVERYONE:
            raise InvalidInputError(
                "name", "pattern",
                "a group's name is 1 to 63 lower-case letters, digits and . _ -, starting with "
                f"a letter or digit, and not {EVERYONE}",
            )  # fmt: skip
        _text("description", description, MAX_DESCRIPTION)
        group = self.groups.create_group(name, description, by=by.name, audit=audit)
        if group is None:
            raise ConflictError(f"a group named {name} exists already", title="Group exists")
        log.info("group %s made by %s", name, by.name)
        return group

    def delete_group(self, by: Person, name: str) -> Withdrawn:
        """The group goes; each of its members loses what it gave them, at once."""
        audit = _audit(by, "delete_group", "group", name)
        members = self.groups.delete_group(name, audit=audit) if _plain(name) else None
        if members is None:
            raise NotFoundError(f"no group {quoted(name)}")
        return self._withdraw_all(members, by.name, f"the group {name} was deleted")

    def add_member(self, by: Person, group: str, person: str) -> bool:
        """The person joins the group (False: they were in it already)."""
        audit = _audit(by, "add_member", "group", group, f"added {person}")
        self._group(group)
        self._person(person)
        return self.groups.add_member(group, person, origin="operator", by=by.name, audit=audit)

    def remove_member(self, by: Person, group: str, person: str) -> Withdrawn:
        """The person leaves the group and loses at once what it gave them."""
        audit = _audit(by, "remove_member", "group", group, f"removed {person}")
        self._group(group)
        self._person(person)
        if not self.groups.remove_member(group, person, audit=audit):
            raise NotFoundError(f"{person} is not a member of {group}")
        return self.withdraw(person, by.name, f"{person} left the group {group}")

    # -- attributes ------------------------------------------------------------------------------

    def access_of(self, by: Person, person: str) -> PersonAccess:
        """A person's groups and attributes (operators; anyone their own)."""
        if by.name != person:
            _operator(by)
        self._person(person)
        return self.groups.access_of(person)

    def set_attribute(self, by: Person, person: str, attribute: str, value: str) -> Withdrawn:
        """The attribute takes `value`; exports made with another value are canceled."""
        audit = _audit(by, "set_attribute", "person", person, f"{attribute} = {value}")
        _attribute_name(attribute)
        _text("value", value, MAX_VALUE)
        if not value:
            raise InvalidInputError("value", "required", "an attribute's value is not empty")
        self._person(person)
        self.groups.set_attribute(
            person, attribute, value, origin="operator", by=by.name, audit=audit
        )
        return self.withdraw(person, by.name, f"{person}'s {attribute} became {value}")

    def unset_attribute(self, by: Person, person: str, attribute: str) -> Withdrawn:
        audit = _audit(by, "unset_attribute", "person", person, f"{attribute} removed")
        _attribute_name(attribute)
        self._person(person)
        if not self.groups.unset_attribute(person, attribute, audit=audit):
            raise NotFoundError(f"{person} has no attribute {attribute}")
        return self.withdraw(person, by.name, f"{person}'s {attribute} was removed")

    def known_names(self) -> tuple[frozenset[str], frozenset[str]]:
        """The groups and the attribute names of the job store (`queries check` reads them)."""
        return (
            frozenset(group.name for group in self.groups.list_groups()),
            self.groups.known_attributes(),
        )

    # -- losing access ---------------------------------------------------------------------------

    def withdraw(self, person: str, by: str, why: str) -> Withdrawn:
        """Cancel the person's queued and running exports their record no longer admits, and
        pause their schedules that could not fire; `by` is recorded on each."""
        member = self.exports.owner(person)
        canceled: list[int] = []
        for job in self._active_jobs(person):
            refusal = self._refusal(member, job.saved_query, job.parameters)
            if refusal is None:
                continue
            reason = f"access withdrawn ({why}): {refusal.reason_for(person)}"
            audit = AuditEntry(
                person=by, action="cancel_job", object_kind="job", object_id=str(job.id),
                detail=reason,
            )  # fmt: skip
            try:
                self.jobs.cancel_job(JobId(job.id), person=by, reason=reason, audit=audit)
            except (TransitionError, StaleStatusError):
                continue  # it ended meanwhile; the worker's own check refuses a late claim
            canceled.append(job.id)
            log.info("export %s of %s canceled: %s", job.id, person, reason)
        paused: list[int] = []
        for schedule in self.schedules.listed(person, limit=MAX_PAGE):
            if schedule.paused_at is not None:
                continue
            refusal = self._refusal(member, schedule.saved_query, None)
            if refusal is None:
                continue
            reason = f"access withdrawn ({why}): {refusal.reason_for(person)}"
            audit = _pause_entry(by, schedule.id, reason)
            if self.schedules.pause(
                schedule.id, now=self.exports.clock(), reason=reason, audit=audit
            ):
                paused.append(schedule.id)
                log.info("schedule %s of %s paused: %s", schedule.id, person, reason)
        return Withdrawn(canceled=tuple(canceled), paused=tuple(paused))

    def suspend(self, by: Person, person: str, reason: str = "") -> Withdrawn:
        """Suspend a person (their token and sessions stop at once) and end what they had going:
        every queued and running export canceled, every schedule paused, with the reason."""
        if not self.people.suspend(person, by=by, reason=reason):
            raise NotFoundError(f"no active, unsuspended person {quoted(person)}")
        why = f"{person} was suspended" + (f": {reason.strip()}" if reason.strip() else "")
        return self._end_everything(person, by.name, why)

    def resume(self, by: Person, person: str) -> None:
        """Their token works again; their paused schedules wait for them to resume them."""
        if not self.people.resume(person, by=by):
            raise NotFoundError(f"{person} is not suspended")

    def _end_everything(self, person: str, by: str, why: str) -> Withdrawn:
        canceled: list[int] = []
        for job in self._active_jobs(person):
            audit = AuditEntry(
                person=by, action="cancel_job", object_kind="job", object_id=str(job.id),
                detail=why,
            )  # fmt: skip
            try:
                self.jobs.cancel_job(JobId(job.id), person=by, reason=why, audit=audit)
            except (TransitionError, StaleStatusError):
                continue
            canceled.append(job.id)
        paused = [
            schedule.id
            for schedule in self.schedules.listed(person, limit=MAX_PAGE)
            if schedule.paused_at is None
            and self.schedules.pause(
                schedule.id,
                now=self.exports.clock(),
                reason=why,
                audit=_pause_entry(by, schedule.id, why),
            )
        ]
        return Withdrawn(canceled=tuple(canceled), paused=tuple(paused))

    def _withdraw_all(self, people: list[str], by: str, why: str) -> Withdrawn:
        canceled: list[int] = []
        paused: list[int] = []
        for person in people:
            withdrawn = self.withdraw(person, by, why)
            canceled += withdrawn.canceled
            paused += withdrawn.paused
        return Withdrawn(canceled=tuple(canceled), paused=tuple(paused))

    def _refusal(
        self, member: Member, saved_query: str, parameters: Mapping[str, Any] | None
    ) -> Refusal | None:
        """Why the member may not run it now, or (for a job) why its bound values are no
        longer theirs."""
        query = self.exports.catalog.queries.get(saved_query)
        if query is None or query.access.for_everyone:
            return None
        if parameters is None:
            return query.access.refusal(member)
        return query.access.job_refusal(member, parameters)

    def _active_jobs(self, person: str) -> list[Job]:
        found: list[Job] = []
        for status in ACTIVE:
            before = None
            while True:
                page = self.jobs.list_jobs(
                    JobFilter(owner=person, status=status, before=before, limit=MAX_PAGE)
                )
                found += page.jobs
                if page.next_cursor is None:
                    break
                before = JobId(page.next_cursor)
        return found

    def _group(self, name: str) -> None:
        if not _plain(name) or name not in {g.name for g in self.groups.list_groups()}:
            raise NotFoundError(f"no group {quoted(name)}")

    def _person(self, name: str) -> None:
        user = self.users.user_by_name(name) if _plain(name) else None
        if user is None or user.revoked_at is not None:
            raise NotFoundError(f"no person {quoted(name)}")


def _plain(text: str) -> bool:
    return unsafe_text(text) is None


def _operator(by: Person) -> None:
    if not by.is_operator:
        raise ForbiddenError("only operators manage groups and people's attributes")


def _audit(
    by: Person, action: AuditAction, kind: Any, object_id: str, detail: str | None = None
) -> AuditEntry:
    _operator(by)
    return AuditEntry(
        person=by.name, action=action, object_kind=kind, object_id=object_id, detail=detail
    )


def _pause_entry(by: str, schedule_id: int, reason: str) -> AuditEntry:
    """A schedule paused because its owner lost access, as done by `by` (an operator, or the
    identity provider)."""
    return AuditEntry(
        person=by,
        action="pause_schedule",
        object_kind="schedule",
        object_id=str(schedule_id),
        detail=reason,
    )


def _attribute_name(name: str) -> None:
    if unsafe_text(name) is not None or not ATTRIBUTE_NAME.fullmatch(name):
        raise InvalidInputError(
            "attribute", "pattern",
            "an attribute's name is 1 to 63 lower-case letters, digits and _, starting with a "
            "letter",
        )  # fmt: skip


def _text(field: str, value: str, most: int) -> None:
    problem = unsafe_text(value)
    if problem is not None:
        raise InvalidInputError(field, "text", f"{field} {problem}")
    if len(value) > most:
        raise InvalidInputError(field, "max_length", f"{field} is at most {most} characters")
