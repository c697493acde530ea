"""Scheduled exports: the same saved query on a cron, an ordinary job at each firing.

Every entry point (API, command line, dashboard) and the scheduler loop call this service.
A firing creates its job through the export service, so validation, the owner's limits and
idempotency hold as for any export; the job's idempotency key is the firing's, so a firing
retried after a crash still makes one job. What a firing could not do is recorded on it:
the owner's limits (the schedule keeps firing), or parameters that no longer validate and a
saved query that left the catalog (the schedule pauses itself, with the reason).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from reportexport.core.catalog import Catalog, SavedQuery
from reportexport.core.parameters import (
    InvalidParametersError,
    ParameterError,
    coerce,
    json_number,
    parse_timestamp,
)
from reportexport.core.records import (
    AuditAction,
    AuditEntry,
    ChatChannel,
    Firing,
    Recipient,
    Schedule,
    ScheduleAddress,
    ScheduleChannel,
)
from reportexport.core.settings import default
from reportexport.core.text import quoted
from reportexport.mail.message import domain_refusal, is_mailbox
from reportexport.services.chat import ChannelView
from reportexport.services.errors import (
    AccessRefusedError,
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    KeyReusedError,
    NotFoundError,
    OverLimitError,
)
from reportexport.services.exports import (
    MAX_ID,
    MAX_PAGE,
    Created,
    ExportService,
    Person,
    checked_idempotency_key,
)
from reportexport.services.people import NAME as PERSON_NAME
from reportexport.store import ChatChannels, ScheduleStore
from reportexport.timetable.firings import Cron, ScheduleError, end_of_day, is_relative, resolve
from reportexport.timetable.gaps import Gap, shortest_gap

log = logging.getLogger("reportexport.schedules")

NEXT_SHOWN = 5
# A firing left with neither a job nor a refusal this long (its process stopped in between) is
# taken up again by any scheduler; its job's idempotency key keeps it to one job.
UNSETTLED_AFTER = timedelta(seconds=60)
# The largest file an outside address may be sent attached (a limit a schedule sets is at most
# this): mail servers commonly refuse messages over 10-25 MB.
MAX_ATTACH_BYTES = 10_000_000
# An outside address: one plain mailbox (mail.message.MAILBOX) without the characters that cannot
# stand in a URL's path unencoded (/ ? # %), so the API names it in its path as it is.
ADDRESS_PATTERN = r"^[A-Za-z0-9.!$&'*+=^_`{|}~-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})+$"
OUTSIDE_ADDRESS = re.compile(ADDRESS_PATTERN)


@dataclass(frozen=True, kw_only=True)
class ScheduleLimits:
    max_per_person: int = default("max_schedules")
    # The shortest gap a schedule may leave between two firings over its next year.
    min_period_seconds: int = default("min_schedule_period_seconds")

    @property
    def min_period(self) -> timedelta:
        return timedelta(seconds=self.min_period_seconds)


@dataclass(frozen=True, kw_only=True)
class ScheduleChannelView:
    """A chat channel of a schedule: the channel as it is shown (never its URL), who added
    it and when."""

    schedule_id: int
    channel: ChannelView
    added_by: str
    added_at: datetime


@dataclass(frozen=True, kw_only=True)
class ScheduleDestinations:
    """Where a schedule's announcements go besides its owner, as its page shows them: its
    recipients, chat channels (and those the reader may add) and outside addresses."""

    recipients: tuple[Recipient, ...]
    channels: tuple[ScheduleChannelView, ...]
    channels_to_add: tuple[ChannelView, ...]
    addresses: tuple[ScheduleAddress, ...]


@dataclass(frozen=True, kw_only=True)
class ScheduleView:
    """A schedule with what people look for: its cron in words, its next firing times and
    its recent firings."""

    schedule: Schedule
    description: str
    next_times: list[datetime]
    firings: list[Firing]
    created: bool = True  # False: an Idempotency-Key named this earlier schedule


@dataclass(frozen=True, kw_only=True)
class SchedulePage:
    views: list[ScheduleView]
    next_cursor: int | None


@dataclass(frozen=True, kw_only=True)
class Preview:
    """A cron expression in a time zone, as a form shows it while it is typed: in words, its
    next times, and how close together its firings come (over the next year) against the
    shortest gap allowed."""

    description: str
    time_zone: str
    next_times: list[datetime]
    shortest_gap: timedelta | None  # None: it fires once at most in the next year
    min_period: timedelta

    @property
    def period(self) -> str:
        """The gap, said in a sentence."""
        allowed = f"the shortest gap allowed is {say_length(self.min_period)}"
        if self.shortest_gap is None:
            return f"It fires once at most in the next year; {allowed}."
        return f"Firings at least {say_length(self.shortest_gap)} apart; {allowed}."


class ScheduleService:
    def __init__(
        self,
        *,
        schedules: ScheduleStore,
        exports: ExportService,
        catalog: Catalog,
        limits: ScheduleLimits | None = None,
        process: str = "scheduler",
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        channels: ChatChannels | None = None,
    ) -> None:
        self.schedules = schedules
        self.channels = channels
        self.exports = exports
        self.catalog = catalog
        self.limits = limits or ScheduleLimits()
        self.process = process
        self.clock = clock

    # -- what people do ------------------------------------------------------------------------

    def create(
        self,
        person: Person,
        saved_query: str,
        parameters: Mapping[str, Any],
        *,
        cron: str,
        time_zone: str,
        ends_at: datetime | str | None = None,
        last_day: date | None = None,
        from_text: bool = False,
        every_problem: bool = False,
        idempotency_key: str | None = None,
    ) -> ScheduleView:
        """A schedule of `saved_query` owned by `person`; its parameters are checked now as a
        firing would resolve them. Once per `idempotency_key` of `person`: the same request
        again gets the schedule the first one made (`created` False), another request with
        the same key a ConflictError.

        `ends_at` may be RFC 3339 text (JSON, the command line); `last_day` ends it after that
        local day in its time zone (instead of `ends_at`).
        `from_text` takes parameter values as text (a form), a relative one as
        `{"relative": word}`; with `every_problem`, InvalidParametersError names every
        parameter that is wrong.
        """
        key = checked_idempotency_key(idempotency_key)
        now = self.clock()
        parsed = _cron(cron, time_zone)
        if isinstance(ends_at, str):
            ends_at = _instant("ends_at", ends_at)
        self._often_enough(parsed, now)
        query = self._runnable(person, saved_query)
        if query is None:
            raise InvalidInputError(
                "saved_query", "unknown", f"no saved query {quoted(saved_query)}",
                title="Unknown saved query",
            )  # fmt: skip
        if last_day is not None:
            if ends_at is not None:
                raise InvalidInputError("last_day", "either", "give ends_at or last_day, not both")
            ends_at = end_of_day(last_day, parsed.zone)
            if ends_at <= now:
                raise InvalidInputError("last_day", "future", "the last day is today or later")
        if ends_at is not None and (ends_at.tzinfo is None or ends_at <= now):
            raise InvalidInputError(
                "ends_at", "future", "ends_at is a moment with its UTC offset, in the future"
            )
        first = parsed.next_after(now)
        if first is None or (ends_at is not None and first > ends_at):
            raise InvalidInputError(
                "cron", "never", f"{cron!r} has no time before the schedule ends"
            )
        parameters = self._checked(
            person, query, parameters, parsed, first, from_text, every_problem
        )
        created = self.schedules.create(
            owner=person.name,
            saved_query=saved_query,
            parameters=dict(parameters),
            cron=parsed.expression,
            time_zone=parsed.time_zone,
            ends_at=ends_at,
            next_fire_at=first,
            created_by=person.name,
            max_per_owner=self.limits.max_per_person,
            idempotency_key=key,
        )
        if created is None:
            raise OverLimitError(
                f"{person.name} has {self.limits.max_per_person} schedules, the most a person "
                "may have; delete one first",
                limit="max_schedules",
                retry_after=60,
            )
        schedule, made = created
        if not made:
            return self._earlier(schedule, saved_query, parameters, parsed, ends_at)
        log.info("schedule %s created by %s: %s", schedule.id, person.name, parsed.describe())
        return self._view(schedule)

    def _earlier(
        self,
        earlier: Schedule,
        saved_query: str,
        parameters: Mapping[str, Any],
        parsed: Cron,
        ends_at: datetime | None,
    ) -> ScheduleView:
        """The schedule an earlier request with the same key made, if this is that request."""
        asked = (saved_query, dict(parameters), parsed.expression, parsed.time_zone,
                 _to_millisecond(ends_at))  # fmt: skip
        made = (earlier.saved_query, dict(earlier.parameters), earlier.cron, earlier.time_zone,
                _to_millisecond(earlier.ends_at))  # fmt: skip
        if asked != made:
            raise KeyReusedError(earlier.id, made="schedule")
        if self.schedules.get(earlier.id) is None:
            raise KeyReusedError(earlier.id, made="schedule", gone=True)
        return dataclasses.replace(self._view(earlier), created=False)

    def list(self, person: Person) -> list[ScheduleView]:
        owner = None if person.is_operator else person.name
        return [self._view(s, firings=False) for s in self.schedules.listed(owner)]

    def page(self, person: Person, *, before: int | None = None, limit: int = 50) -> SchedulePage:
        """A person's schedules (an operator's: everyone's), newest first, `limit` at a time."""
        if before is not None and not 1 <= before <= MAX_ID:
            raise InvalidInputError("before", "range", f"before must be 1 to {MAX_ID}")
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInputError("limit", "range", f"limit must be 1 to {MAX_PAGE}")
        owner = None if person.is_operator else person.name
        found = self.schedules.listed(owner, limit + 1, before=before)
        views = [self._view(s, firings=False) for s in found[:limit]]
        more = len(found) > limit and views
        return SchedulePage(views=views, next_cursor=views[-1].schedule.id if more else None)

    def preview(self, cron: str, time_zone: str) -> Preview:
        """The expression in words, its next firing times from now and the shortest gap
        between two of its firings (nothing is saved); InvalidInputError naming `cron` when
        it fires more often than the minimum period allows, as `create` refuses it."""
        parsed = _cron(cron, time_zone)
        now = self.clock()
        self._often_enough(parsed, now)
        gap = shortest_gap(parsed, now)
        return Preview(
            description=parsed.describe(),
            time_zone=parsed.time_zone,
            next_times=parsed.next_times(now, NEXT_SHOWN),
            shortest_gap=gap.length if gap is not None else None,
            min_period=self.limits.min_period,
        )

    def _often_enough(self, parsed: Cron, now: datetime) -> None:
        """InvalidInputError naming `cron` when two firings come closer than the minimum
        period over the next year."""
        gap = shortest_gap(parsed, now, below=self.limits.min_period)
        if gap is not None:
            raise InvalidInputError(
                "cron", "min_period", too_often(parsed, gap, self.limits.min_period)
            )

    def show(self, person: Person, schedule_id: int) -> ScheduleView:
        return self._view(self._mine(person, schedule_id))

    def pause(self, person: Person, schedule_id: int) -> ScheduleView:
        self._mine(person, schedule_id)
        paused = self.schedules.pause(
            schedule_id, now=self.clock(), reason=f"paused by {person.name}"
        )
        if paused is None:
            raise ConflictError(f"schedule {schedule_id} is paused already", title="Paused")
        return self._view(paused)

    def resume(self, person: Person, schedule_id: int) -> ScheduleView:
        """Fire again from the next time after now; the times missed while paused are not."""
        schedule = self._mine(person, schedule_id)
        refusal = self.exports.refusal(self.exports.owner(schedule.owner), schedule.saved_query)
        if refusal is not None:
            detail = f"schedule {schedule_id} cannot fire: {refusal.reason_for(schedule.owner)}"
            self.exports.refused("resume", refusal, detail)
            raise AccessRefusedError(detail, access_rule=refusal.names)
        parsed = _cron(schedule.cron, schedule.time_zone)
        try:
            self._often_enough(parsed, self.clock())
        except InvalidInputError as exc:
            raise InvalidInputError(
                "cron", "min_period", f"{exc.detail}; delete this schedule and make one that "
                "fires less often",
            ) from None  # fmt: skip
        following = self._bounded(parsed.next_after(self.clock()), schedule)
        resumed = self.schedules.resume(schedule_id, next_fire_at=following)
        if resumed is None:
            raise ConflictError(f"schedule {schedule_id} is not paused", title="Not paused")
        return self._view(resumed)

    # -- recipients ------------------------------------------------------------------------------

    def recipients(self, person: Person, schedule_id: int) -> tuple[Recipient, ...]:
        """The people the schedule's announcements go to by e-mail besides its owner."""
        return tuple(self.schedules.recipients(self._mine(person, schedule_id).id))

    def add_recipient(self, by: Person, schedule_id: int, name: str) -> tuple[Recipient, bool]:
        """`name` gets each firing's announcement by e-mail, with a link to the export they
        may open; True when added now, False when they were a recipient already.

        The schedule's owner or an operator adds (the owner themself too: an e-mail at each
        firing of this schedule alone). The recipient is a person of this service
        (NotFoundError) who may run the saved query with the values bound to the owner (a
        person receives only what they may run themselves: ForbiddenError, naming the rule to
        operators alone, as what groups and attributes someone has is theirs to know), with an
        e-mail address it may go to (InvalidInputError naming `person`)."""
        schedule = self._mine(by, schedule_id)
        member = self.exports.known_member(name) if PERSON_NAME.fullmatch(name) else None
        if member is None:
            raise NotFoundError(f"no person {quoted(name)}")
        refusal = self.exports.recipient_refusal(member, schedule.owner, schedule.saved_query)
        if refusal is not None:
            cannot = f"{name} may not receive {quoted(schedule.saved_query)}"
            if not by.is_operator:
                raise ForbiddenError(f"{cannot}: they may not run it as its owner does")
            why = refusal.reason_for(name)
            if refusal.changed:  # a bound value other than the owner's, not a job's
                why = (
                    f"its parameter {refusal.parameter} is bound to the attribute "
                    f"{refusal.attribute}, whose value for {name} is not {schedule.owner}'s"
                )
            raise AccessRefusedError(f"{cannot}: {why}", access_rule=refusal.names)
        if member.email is None:
            raise InvalidInputError(
                "person", "email",
                f"{name} has no e-mail address; an operator sets one "
                f"(reportexport users email {name} ADDRESS)",
                title="No e-mail address",
            )  # fmt: skip
        if domain_refusal(member.email, self.exports.email_domains) is not None:
            raise InvalidInputError(
                "person", "email",
                f"{name}'s address is outside the domains e-mail goes to (email_domains)",
                title="Address not allowed",
            )  # fmt: skip
        audit = self._audit(by, schedule, "add_recipient", name)
        return self.schedules.add_recipient(schedule.id, name, added_by=by.name, audit=audit)

    def remove_recipient(self, by: Person, schedule_id: int, name: str) -> None:
        """`name` no longer gets the schedule's announcements (those of exports that end from
        now on). Its owner or an operator removes anyone; a recipient removes themselves."""
        schedule = self.schedules.get(schedule_id) if 1 <= schedule_id <= MAX_ID else None
        leaving = (
            schedule is not None
            and by.name == name
            and self.schedules.recipient(schedule.id, name) is not None
        )
        if not leaving:
            schedule = self._mine(by, schedule_id)
        assert schedule is not None
        audit = None if leaving else self._audit(by, schedule, "remove_recipient", name)
        if not self.schedules.remove_recipient(schedule.id, name, audit=audit):
            raise NotFoundError(f"{quoted(name)} is no recipient of schedule {schedule_id}")

    def destinations(self, person: Person, schedule_id: int) -> ScheduleDestinations:
        """All of the schedule's destinations `person` may see, with one look at whose it is and
        one read of the chat channels."""
        schedule = self._mine(person, schedule_id)
        everyone = {c.id: c for c in self.channels.list_chat_channels()} if self.channels else {}
        added = self._schedule_channels(schedule.id)
        taken = {a.channel_id for a in added}
        owner = None if person.is_operator else schedule.owner  # operators add any channel
        offered = tuple(
            ChannelView.of(c)
            for c in everyone.values()
            if c.disabled_at is None and (owner is None or c.owner == owner) and c.id not in taken
        )
        return ScheduleDestinations(
            recipients=tuple(self.schedules.recipients(schedule.id)),
            channels=tuple(self._channel_view(a, everyone.get(a.channel_id)) for a in added),
            channels_to_add=offered,
            addresses=tuple(self.schedules.addresses(schedule.id)),
        )

    # -- chat channels ---------------------------------------------------------------------------

    def schedule_channels(
        self, person: Person, schedule_id: int
    ) -> tuple[ScheduleChannelView, ...]:
        """The chat channels the schedule's announcements go to besides its owner's channels
        and the global ones."""
        schedule = self._mine(person, schedule_id)
        everyone = {c.id: c for c in self.channels.list_chat_channels()} if self.channels else {}
        return tuple(
            self._channel_view(c, everyone.get(c.channel_id))
            for c in self._schedule_channels(schedule.id)
        )

    def add_channel(
        self, by: Person, schedule_id: int, channel_id: int
    ) -> tuple[ScheduleChannelView, bool]:
        """Each firing's announcement goes to the chat channel too; True when added now,
        False when it was one of the schedule's channels already.

        Operators register channels (their URLs carry a credential, their hosts are an
        operator's allow-list) and add any of them; a schedule's owner adds those registered
        for them. A channel that does not exist, was removed, or (for an owner) is not theirs
        is NotFoundError: who else has channels is not theirs to learn."""
        schedule = self._mine(by, schedule_id)
        channel = self._channel(channel_id)
        if channel is None or (not by.is_operator and channel.owner != schedule.owner):
            raise NotFoundError(f"no chat channel {channel_id}")
        if channel.disabled_at is not None:
            raise NotFoundError(f"chat channel {channel_id} was removed")
        audit = self._audit(by, schedule, "add_schedule_channel", f"chat channel {channel_id}")
        added, now = self.schedules.add_channel(
            schedule.id, channel_id, added_by=by.name, audit=audit
        )
        return self._channel_view(added), now

    def remove_channel(self, by: Person, schedule_id: int, channel_id: int) -> None:
        """The chat channel no longer gets the schedule's announcements (those of exports that
        end from now on). Its owner or an operator removes it."""
        schedule = self._mine(by, schedule_id)
        detail = f"chat channel {channel_id}"
        audit = self._audit(by, schedule, "remove_schedule_channel", detail)
        valid = 1 <= channel_id <= MAX_ID
        if not valid or not self.schedules.remove_channel(schedule.id, channel_id, audit=audit):
            raise NotFoundError(f"chat channel {channel_id} is not one of schedule {schedule_id}'s")

    # -- outside addresses -----------------------------------------------------------------------

    def addresses(self, person: Person, schedule_id: int) -> tuple[ScheduleAddress, ...]:
        """The e-mail addresses outside this service's people that get each firing's
        announcement."""
        return tuple(self.schedules.addresses(self._mine(person, schedule_id).id))

    def add_address(
        self,
        by: Person,
        schedule_id: int,
        address: str,
        *,
        attach_max_bytes: int | None = None,
        attach_gzip: bool = False,
    ) -> tuple[ScheduleAddress, bool]:
        """`address` gets each firing's announcement by e-mail: a download link signed for the
        link's lifetime, or the file attached when it is at most `attach_max_bytes` (after
        gzip with `attach_gzip`); True when added now, False when it was one already (what it
        gets attached is set again).

        Sending a file outside is an operator's decision (ForbiddenError for the owner: a
        person of this service is added as a recipient, whose access is checked), and always
        recorded in the audit log. The address is one plain mailbox in a domain e-mail goes to
        (InvalidInputError naming `address`); it is kept in lower case."""
        schedule = self._mine(by, schedule_id)
        if not by.is_operator:
            raise ForbiddenError(
                "only operators add outside addresses to a schedule; a person of this "
                "service is added as a recipient"
            )
        if not is_mailbox(address) or OUTSIDE_ADDRESS.fullmatch(address) is None:
            raise InvalidInputError(
                "address", "pattern",
                "an address is one plain mailbox, like name@example.com, without / ? # or %",
            )  # fmt: skip
        address = address.lower()
        refused = domain_refusal(address, self.exports.email_domains)
        if refused is not None:
            raise InvalidInputError("address", "domain", refused, title="Address not allowed")
        person = self.schedules.person_at(address)
        if person is not None:
            raise InvalidInputError(
                "address", "person",
                f"{address} is the address of {person}, a person of this service: add them as "
                f"a recipient (reportexport schedules recipients {schedule.id} --add {person}), "
                "whose access is checked",
                title="A person's address",
            )  # fmt: skip
        if attach_max_bytes is not None and not 1 <= attach_max_bytes <= MAX_ATTACH_BYTES:
            raise InvalidInputError(
                "attach_max_bytes", "range",
                f"attach_max_bytes is from 1 to {MAX_ATTACH_BYTES:,} (bytes), or left out "
                "to send a link alone",
            )  # fmt: skip
        rule = "a link alone" if attach_max_bytes is None else (
            f"the file attached up to {attach_max_bytes:,} bytes"
            + (" after gzip" if attach_gzip else "")
        )  # fmt: skip
        audit = AuditEntry(
            person=by.name,
            action="add_schedule_address",
            object_kind="schedule",
            object_id=str(schedule.id),
            detail=f"{address} ({rule}), on the schedule of {schedule.owner}",
        )
        return self.schedules.add_address(
            schedule.id,
            address,
            attach_max_bytes=attach_max_bytes,
            attach_gzip=attach_gzip and attach_max_bytes is not None,
            added_by=by.name,
            audit=audit,
        )

    def remove_address(self, by: Person, schedule_id: int, address: str) -> None:
        """`address` no longer gets the schedule's announcements (those of exports that end
        from now on). The schedule's owner or an operator removes it; always audited."""
        schedule = self._mine(by, schedule_id)
        address = address.lower()
        audit = AuditEntry(
            person=by.name,
            action="remove_schedule_address",
            object_kind="schedule",
            object_id=str(schedule.id),
            detail=f"{address}, on the schedule of {schedule.owner}",
        )
        if not self.schedules.remove_address(schedule.id, address, audit=audit):
            raise NotFoundError(
                f"{quoted(address)} is not one of schedule {schedule_id}'s addresses"
            )

    def _schedule_channels(self, schedule_id: int) -> Sequence[ScheduleChannel]:
        return self.schedules.channels(schedule_id) if self.channels is not None else []

    def _channel(self, channel_id: int) -> ChatChannel | None:
        if self.channels is None or not 1 <= channel_id <= MAX_ID:
            return None
        try:
            return self.channels.get_chat_channel(channel_id)
        except LookupError:
            return None

    def _channel_view(
        self, added: ScheduleChannel, channel_read: ChatChannel | None = None
    ) -> ScheduleChannelView:
        assert self.channels is not None
        found = channel_read or self.channels.get_chat_channel(added.channel_id)
        channel = ChannelView.of(found)
        return ScheduleChannelView(schedule_id=added.schedule_id, channel=channel,
                                   added_by=added.added_by, added_at=added.added_at)  # fmt: skip

    def _audit(
        self, by: Person, schedule: Schedule, action: AuditAction, name: str
    ) -> AuditEntry | None:
        """What an operator does to another person's schedule is recorded."""
        if not by.is_operator or schedule.owner == by.name:
            return None
        return AuditEntry(
            person=by.name,
            action=action,
            object_kind="schedule",
            object_id=str(schedule.id),
            detail=f"{name}, on the schedule of {schedule.owner}",
        )

    def delete(self, person: Person, schedule_id: int) -> None:
        """It never fires again and leaves the lists; the jobs it made stay."""
        self._mine(person, schedule_id)
        self.schedules.delete(schedule_id, now=self.clock())

    def run_now(
        self, person: Person, schedule_id: int, *, idempotency_key: str | None = None
    ) -> Created:
        """A job now, as a firing of the schedule would make it (its limits apply); once per
        `idempotency_key` of `person`."""
        schedule = self._mine(person, schedule_id)
        if idempotency_key is not None:
            earlier = self.exports.job_by_key(person, schedule.owner, idempotency_key)
            if earlier is not None:
                if earlier.schedule_id != schedule_id:
                    raise KeyReusedError(earlier.id)
                return Created(job=earlier, created=False)
        firing = self.schedules.record_manual(
            schedule_id, now=self.clock(), fired_by=f"{self.process} ({person.name})"
        )
        created = self._make_job(
            schedule, firing, raise_refusal=True, person=person, idempotency_key=idempotency_key
        )
        assert created is not None
        return created

    # -- the scheduler ------------------------------------------------------------------------

    def fire_due(self) -> int:
        """Fire every schedule whose time has come (once per firing, whichever process gets
        it), and take up firings a stopped process left half done; how many jobs were made."""
        now = self.clock()
        made = 0
        for schedule in self.schedules.due(now):
            assert schedule.next_fire_at is not None
            due = _cron(schedule.cron, schedule.time_zone).due(schedule.next_fire_at, now)
            if due is None:
                continue
            firing = self.schedules.take(
                schedule,
                scheduled_for=due.scheduled_for,
                next_fire_at=self._bounded(due.next_fire_at, schedule),
                missed=due.missed,
                fired_by=self.process,
                fired_at=now,
            )
            if firing is None:
                continue  # another process fired it
            if due.missed:
                log.warning(
                    "schedule %s: fired once for %s, skipping %s earlier times missed",
                    schedule.id, due.scheduled_for.isoformat(), due.missed,
                )  # fmt: skip
            made += _made(self._make_job(schedule, firing))
        for firing in self.schedules.unsettled(before=now - UNSETTLED_AFTER):
            owner = self.schedules.get(firing.schedule_id)
            if owner is None:
                self.schedules.settle_refusal(
                    firing, code="schedule_deleted",
                    message="the schedule was deleted before this firing's job was made",
                )  # fmt: skip
                continue
            made += _made(self._make_job(owner, firing))
        return made

    # -- helpers ------------------------------------------------------------------------------

    def _make_job(
        self,
        schedule: Schedule,
        firing: Firing,
        *,
        raise_refusal: bool = False,
        person: Person | None = None,
        idempotency_key: str | None = None,
    ) -> Created | None:
        key = f"schedule-{schedule.id}-{firing.scheduled_for.strftime('%Y%m%dT%H%M%S.%fZ')}"
        own_key = person is None or idempotency_key is None
        if own_key:  # taken up again after a stop: the job may be there already
            earlier = self.exports.job_of_firing(schedule.owner, schedule.id, key)
            if earlier is not None:
                self.schedules.settle_job(firing, job_id=earlier.id, query_hash=earlier.query_hash)
                return Created(job=earlier, created=False)
        try:
            parsed = _cron(schedule.cron, schedule.time_zone)
            parameters = resolve(
                schedule.parameters, self._types(schedule.saved_query), firing.scheduled_for,
                parsed.zone,
            )  # fmt: skip
            created = self.exports.create_scheduled(
                schedule.owner, schedule.saved_query, parameters,
                schedule_id=schedule.id, key=key, person=person, idempotency_key=idempotency_key,
            )  # fmt: skip
        except AccessRefusedError as exc:
            reason = f"access withdrawn: {exc.detail}"
            self.schedules.settle_refusal(firing, code="access", message=exc.detail)
            self.schedules.pause(schedule.id, now=self.clock(), reason=reason)
            log.warning("schedule %s paused: %s", schedule.id, reason)
            if raise_refusal:
                raise
            return None
        except (ParameterError, ScheduleError, InvalidInputError, NotFoundError) as exc:
            reason = f"the firing of {firing.scheduled_for.isoformat()} could not run: {exc}"
            self.schedules.settle_refusal(firing, code="invalid_parameters", message=str(exc))
            self.schedules.pause(schedule.id, now=self.clock(), reason=reason)
            log.warning("schedule %s paused: %s", schedule.id, reason)
            if raise_refusal:
                raise ConflictError(reason, title="Schedule paused") from None
            return None
        except OverLimitError as exc:
            self.schedules.settle_refusal(firing, code=exc.limit, message=str(exc))
            log.warning("schedule %s: no job for %s: %s", schedule.id, firing.scheduled_for, exc)
            if raise_refusal:
                raise
            return None
        if not created.created and not own_key:  # a person's request, sent twice at once
            self.schedules.settle_refusal(
                firing, code="idempotency_key",
                message=f"the same request made export {created.job.id}",
            )  # fmt: skip
            return created
        self.schedules.settle_job(firing, job_id=created.job.id, query_hash=created.job.query_hash)
        return created

    def _types(self, saved_query: str) -> dict[str, str]:
        query = self.catalog.queries.get(saved_query)
        return {} if query is None else {n: p.type for n, p in query.parameters.items()}

    def _runnable(self, person: Person, saved_query: str) -> SavedQuery | None:
        try:
            return self.exports.saved_query(person, saved_query, path="schedule")
        except NotFoundError:
            return None

    def _checked(
        self,
        person: Person,
        query: SavedQuery,
        parameters: Mapping[str, Any],
        parsed: Cron,
        first: datetime,
        from_text: bool,
        every_problem: bool,
    ) -> dict[str, Any]:
        """The parameters as the schedule keeps them (typed JSON values, relative ones as
        given), checked as the first firing would resolve them."""
        typed: dict[str, Any] = {}
        problems: list[ParameterError] = []
        for name, value in parameters.items():
            spec = query.parameters.get(name)
            if not from_text or spec is None or is_relative(value) or not isinstance(value, str):
                typed[name] = value
            elif value != "":  # an empty field is a value not given
                try:
                    typed[name] = _json_value(coerce(spec, value, from_text=True))
                except ParameterError as exc:
                    problems.append(exc)
        failed = {problem.parameter for problem in problems}
        try:
            self._check_parameters(
                person,
                query.name,
                {k: v for k, v in typed.items() if k not in failed},
                parsed,
                first,
                every_problem=every_problem,
            )
        except InvalidParametersError as exc:
            problems += [p for p in exc.problems if p.parameter not in failed]
        except ParameterError as exc:
            if exc.parameter not in failed:
                problems.append(exc)
        if problems:
            raise InvalidParametersError(problems) if every_problem else problems[0]
        return typed

    def _check_parameters(
        self,
        person: Person,
        saved_query: str,
        parameters: Mapping[str, Any],
        parsed: Cron,
        first: datetime,
        *,
        every_problem: bool = False,
    ) -> None:
        types = self._types(saved_query)
        for name, value in parameters.items():
            if is_relative(value) and types.get(name) not in ("date", "timestamp"):
                raise InvalidInputError(
                    f"parameters.{name}", "relative",
                    "only date and timestamp parameters take a relative value",
                )  # fmt: skip
        try:
            resolved = resolve(parameters, types, first, parsed.zone)
            self.exports.check_parameters(
                person, saved_query, resolved, every_problem=every_problem
            )
        except ScheduleError as exc:
            raise InvalidInputError(exc.field, "relative", str(exc)) from None

    def _mine(self, person: Person, schedule_id: int) -> Schedule:
        schedule = self.schedules.get(schedule_id)
        if schedule is None or (not person.is_operator and schedule.owner != person.name):
            raise NotFoundError(f"no schedule {schedule_id}")
        return schedule

    def _bounded(self, moment: datetime | None, schedule: Schedule) -> datetime | None:
        if moment is None or (schedule.ends_at is not None and moment > schedule.ends_at):
            return None
        return moment

    def _view(self, schedule: Schedule, *, firings: bool = True) -> ScheduleView:
        parsed = _cron(schedule.cron, schedule.time_zone)
        after = max(self.clock(), schedule.next_fire_at or self.clock())
        upcoming = []
        if schedule.paused_at is None and schedule.next_fire_at is not None:
            upcoming = [schedule.next_fire_at]
            upcoming += [
                t
                for t in parsed.next_times(after, NEXT_SHOWN)
                if schedule.ends_at is None or t <= schedule.ends_at
            ]
        return ScheduleView(
            schedule=schedule,
            description=parsed.describe(),
            next_times=sorted(set(upcoming))[:NEXT_SHOWN],
            firings=self.schedules.firings(schedule.id) if firings else [],
        )


def _json_value(value: Any) -> Any:
    """A typed parameter value as the schedule keeps it: JSON's own number, ISO text."""
    if isinstance(value, Decimal):
        return json_number(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def pause_too_frequent(
    store: ScheduleStore, min_period: timedelta, now: datetime
) -> list[tuple[Schedule, str]]:
    """Pause, with the reason, every schedule still firing whose firings come closer than
    `min_period` over its next year (schedules made before there was a minimum, or under a
    lower one); each one paused and why."""
    paused: list[tuple[Schedule, str]] = []
    before: int | None = None
    while True:
        found = store.listed(None, 100, before=before)
        for schedule in found:
            if schedule.paused_at is not None or schedule.next_fire_at is None:
                continue
            try:
                parsed = Cron.parse(schedule.cron, schedule.time_zone)
            except ScheduleError:
                continue  # a zone the database no longer has: its firings say so
            gap = shortest_gap(parsed, now, below=min_period)
            if gap is None:
                continue
            reason = (
                f"{too_often(parsed, gap, min_period)}; delete this schedule and make one that "
                "fires less often"
            )
            if store.pause(schedule.id, now=now, reason=reason) is not None:
                log.warning("schedule %s paused: %s", schedule.id, reason)
                paused.append((schedule, reason))
        if len(found) < 100:
            return paused
        before = found[-1].id


def too_often(parsed: Cron, gap: Gap, min_period: timedelta) -> str:
    """Why a cron expression fires too often: where its firings come closest, and the rule."""
    local = gap.after.astimezone(parsed.zone)
    return (
        f"{parsed.expression!r} fires {say_length(gap.length)} after its firing of "
        f"{local:%Y-%m-%d %H:%M:%S} ({parsed.time_zone}): the shortest gap allowed between two "
        f"firings is {say_length(min_period)}"
    )


def say_length(length: timedelta) -> str:
    """A gap in words: `1 second`, `90 seconds`, `30 minutes`, `23 hours`, `3 days`."""
    seconds = int(length.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'' if count == 1 else 's'}"
    return f"{seconds} second{'' if seconds == 1 else 's'}"


def _to_millisecond(moment: datetime | None) -> datetime | None:
    """A moment as precisely as every job store keeps it."""
    return None if moment is None else moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _made(created: Created | None) -> bool:
    return created is not None and created.created


def _instant(field: str, text: str) -> datetime:
    try:
        return parse_timestamp(field, text)
    except ParameterError as exc:
        raise InvalidInputError(field, exc.rule, f"{field}: {exc.message}") from None


def _cron(expression: str, time_zone: str) -> Cron:
    try:
        return Cron.parse(expression, time_zone)
    except ScheduleError as exc:
        raise InvalidInputError(exc.field, exc.field, str(exc)) from None
