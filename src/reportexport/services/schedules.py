"""Scheduled exports: the same saved query on a cron, an ordinary job at each firing.

Every entry point (API, command line, dashboard) and the scheduler loop call this service.
A firing creates its job through the export service, so validation, the owner's limits and
idempotency hold as for any export; the job's idempotency key is the firing's, so a firing
retried after a crash still makes one job. What a firing could not do is recorded on it:
the owner's limits (the schedule keeps firing), or parameters that no longer validate and a
saved query that left the catalog (the schedule pauses itself, with the reason).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from reportexport.catalog import Catalog, SavedQuery
from reportexport.parameters import InvalidParametersError, ParameterError, coerce, parse_timestamp
from reportexport.records import Firing, Schedule
from reportexport.schedules import Cron, ScheduleError, end_of_day, is_relative, resolve
from reportexport.services.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    OverLimitError,
)
from reportexport.services.exports import (
    MAX_ID,
    MAX_PAGE,
    Created,
    ExportService,
    Person,
    is_operator,
)
from reportexport.settings import default
from reportexport.store import ScheduleStore
from reportexport.text import quoted

log = logging.getLogger("reportexport.schedules")

NEXT_SHOWN = 5
# A firing left with neither a job nor a refusal this long (its process stopped in between) is
# taken up again by any scheduler; its job's idempotency key keeps it to one job.
UNSETTLED_AFTER = timedelta(seconds=60)


@dataclass(frozen=True, kw_only=True)
class ScheduleLimits:
    max_per_person: int = default("max_schedules")


@dataclass(frozen=True, kw_only=True)
class ScheduleView:
    """A schedule with what people look for: its cron in words, its next firing times and
    its recent firings."""

    schedule: Schedule
    description: str
    next_times: list[datetime]
    firings: list[Firing]


@dataclass(frozen=True, kw_only=True)
class SchedulePage:
    views: list[ScheduleView]
    next_cursor: int | None


@dataclass(frozen=True, kw_only=True)
class Preview:
    """A cron expression in a time zone, as a form shows it while it is typed."""

    description: str
    time_zone: str
    next_times: list[datetime]


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
    ) -> None:
        self.schedules = schedules
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
    ) -> ScheduleView:
        """A schedule of `saved_query` owned by `person`; its parameters are checked now as a
        firing would resolve them.

        `ends_at` may be RFC 3339 text (JSON, the command line); `last_day` ends it after that
        local day in its time zone (instead of `ends_at`).
        `from_text` takes parameter values as text (a form), a relative one as
        `{"relative": word}`; with `every_problem`, InvalidParametersError names every
        parameter that is wrong.
        """
        now = self.clock()
        parsed = _cron(cron, time_zone)
        if isinstance(ends_at, str):
            ends_at = _instant("ends_at", ends_at)
        query = self.catalog.queries.get(saved_query)
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
        parameters = self._checked(query, parameters, parsed, first, from_text, every_problem)
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
        )
        if created is None:
            raise OverLimitError(
                f"{person.name} has {self.limits.max_per_person} schedules, the most a person "
                "may have; delete one first",
                limit="max_schedules",
                retry_after=60,
            )
        log.info("schedule %s created by %s: %s", created.id, person.name, parsed.describe())
        return self._view(created)

    def list(self, person: Person) -> list[ScheduleView]:
        owner = None if is_operator(person) else person.name
        return [self._view(s, firings=False) for s in self.schedules.listed(owner)]

    def page(self, person: Person, *, before: int | None = None, limit: int = 50) -> SchedulePage:
        """A person's schedules (an operator's: everyone's), newest first, `limit` at a time."""
        if before is not None and not 1 <= before <= MAX_ID:
            raise InvalidInputError("before", "range", f"before must be 1 to {MAX_ID}")
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInputError("limit", "range", f"limit must be 1 to {MAX_PAGE}")
        owner = None if is_operator(person) else person.name
        found = self.schedules.listed(owner, limit + 1, before=before)
        views = [self._view(s, firings=False) for s in found[:limit]]
        more = len(found) > limit and views
        return SchedulePage(views=views, next_cursor=views[-1].schedule.id if more else None)

    def preview(self, cron: str, time_zone: str) -> Preview:
        """The expression in words and its next firing times from now (nothing is saved)."""
        parsed = _cron(cron, time_zone)
        return Preview(
            description=parsed.describe(),
            time_zone=parsed.time_zone,
            next_times=parsed.next_times(self.clock(), NEXT_SHOWN),
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
        parsed = _cron(schedule.cron, schedule.time_zone)
        following = self._bounded(parsed.next_after(self.clock()), schedule)
        resumed = self.schedules.resume(schedule_id, next_fire_at=following)
        if resumed is None:
            raise ConflictError(f"schedule {schedule_id} is not paused", title="Not paused")
        return self._view(resumed)

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
                    raise ConflictError(
                        f"this Idempotency-Key already names export {earlier.id}, a different "
                        "request",
                        title="Idempotency key reused",
                    )
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

    def _checked(
        self,
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
            self.exports.check_parameters(saved_query, resolved, every_problem=every_problem)
        except ScheduleError as exc:
            raise InvalidInputError("parameters", "relative", str(exc)) from None

    def _mine(self, person: Person, schedule_id: int) -> Schedule:
        schedule = self.schedules.get(schedule_id)
        if schedule is None or (not is_operator(person) and schedule.owner != person.name):
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
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


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
