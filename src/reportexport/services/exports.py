"""The export service: every rule about exports, in one place that every entry point calls.

The HTTP API, the dashboard, the command line and the scheduler only translate requests into
these calls and the results (or `services.errors`) into their own answers. Here live:

- **creation**: a saved query and its parameters become a job in the initial state; text that
  could poison the store is refused; the owner's fairness limits and `Idempotency-Key` hold on
  every path that creates a job (rerun included), checked and inserted atomically by the store;
- **rerun**: a new job with the old one's parameters, owned by the old job's owner and counted
  against their limits, recording who asked;
- **access**: a person sees, runs and reruns only the saved queries whose access rules
  include them (core/access.py), and downloads a file only while its query's rules still
  include them; a query they may not run does not exist for them. Parameters bound to an
  attribute take their value from the owner's record as it is when the job is made;
- **visibility**: people see, cancel and download their own jobs; operators see everyone's;
  another person's job does not exist for you;
- **cancel**, along the fixture's `user` edges, one job or several (an operator's cancel and
  re-drive are recorded in the audit, in the action's own transaction);
- **downloads**: only a `succeeded` job's object, until it expires, through a signed link.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO, Protocol

from reportexport.core.access import Member, Refusal
from reportexport.core.catalog import Catalog, SavedQuery
from reportexport.core.csvschema import file_schema, schema_file_name
from reportexport.core.job_status import TransitionError
from reportexport.core.lifecycle import TERMINAL, is_effect, is_status
from reportexport.core.links import LinkError, verify_download
from reportexport.core.parameters import ParameterError, validate
from reportexport.core.records import (
    AuditEntry,
    Delivery,
    Firing,
    InRole,
    Job,
    JobDetail,
    JobFilter,
    JobId,
    JobPage,
    NewJob,
    OwnerLimits,
    Recipient,
    SideEffect,
)
from reportexport.core.settings import default
from reportexport.core.text import quoted, unsafe_text
from reportexport.mail.message import domain_refusal
from reportexport.objects import ObjectKeyError, ObjectStore, final_key_job
from reportexport.pipeline.export import new_export, with_bound, without_bound
from reportexport.services.errors import (
    AccessRefusedError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidInputError,
    KeyReusedError,
    NotFoundError,
    OverLimitError,
)
from reportexport.services.refusals import AccessRefusals, RefusedPath
from reportexport.store import (
    Deliveries,
    EffectStore,
    JobNotFoundError,
    JobStore,
    OwnerLimitError,
    StaleStatusError,
)

MAX_ID = 2**63 - 1  # ids are 64-bit in both databases
MAX_KEY_LENGTH = 200
# An Idempotency-Key is printable ASCII (HTTP header values are bytes; a UUID or a request id).
KEY_PATTERN = r"^[\x20-\x7e]+$"
MAX_PAGE = 200


class Person(Protocol):
    """Who is acting: a signed-in user, or an operator at the command line."""

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> str: ...

    @property
    def is_operator(self) -> bool: ...


@dataclass(frozen=True, kw_only=True)
class Acting(InRole):
    """A person known by name and role alone (the command line acting for someone)."""

    name: str
    role: str = "user"


class MemberBook(Protocol):
    def member(self, name: str) -> Member | None:
        """A person's role, groups and attributes as they are now; None for no such person."""
        ...


class AuditLog(Protocol):
    def record(self, entry: AuditEntry) -> None: ...


class DownloadLog(Protocol):
    def record_download(self, job_id: int, person: str) -> None: ...

    def job_downloads(self, job_id: int) -> list[tuple[str, datetime]]: ...


class FiringLog(Protocol):
    def firing_of_job(self, job_id: int) -> Firing | None: ...

    def recipient(self, schedule_id: int, person: str) -> Recipient | None:
        """`person` as a recipient of the schedule; None when they are not one."""
        ...


@dataclass(frozen=True, kw_only=True)
class Fairness:
    """Per-owner limits: at most `max_active` queued or running at once, and at most
    `max_per_window` created per `window_seconds`."""

    max_active: int = default("max_active_exports")
    max_per_window: int = default("max_exports_per_minute")
    window_seconds: int = 60  # the window of max_exports_per_minute


@dataclass(frozen=True, kw_only=True)
class Created:
    job: Job
    created: bool  # False: the Idempotency-Key named an earlier job, which is returned


@dataclass(frozen=True, kw_only=True)
class JobView:
    """A job with everything that explains it, and who was given its file."""

    detail: JobDetail
    downloads: list[tuple[str, datetime]]
    firing: Firing | None = None  # the schedule's firing that made the job
    previous: Job | None = None  # the owner's last success of the same query and parameters
    deliveries: tuple[Delivery, ...] = ()  # where its announcements went, one per destination


@dataclass(frozen=True, kw_only=True)
class BulkCancel:
    """What a cancel of several jobs did: the jobs canceled, and why each other one was not."""

    canceled: list[int]
    refused: list[tuple[int, str]]  # (job id, why)


@dataclass(frozen=True, kw_only=True)
class DownloadLink:
    url: str
    expires_at: datetime
    file_name: str


@dataclass(frozen=True, kw_only=True)
class StoredFile:
    """An object opened for reading through a download link; close `stream` when done."""

    stream: BinaryIO
    key: str
    file_name: str
    size: int
    modified: datetime


class ExportService:
    def __init__(
        self,
        *,
        jobs: JobStore,
        effects: EffectStore,
        downloads: DownloadLog,
        catalog: Catalog,
        objects: ObjectStore,
        link_secret: bytes,
        fairness: Fairness | None = None,
        link_seconds: int = default("link_seconds"),
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        firings: FiringLog | None = None,
        members: MemberBook | None = None,
        audit: AuditLog | None = None,
        deliveries: Deliveries | None = None,
        refusals: AccessRefusals | None = None,
        email_domains: Sequence[str] | None = None,
    ) -> None:
        self.refusals = refusals or AccessRefusals()
        self.email_domains = tuple(email_domains or ())  # empty (the setting's): any domain
        self.members = members
        self.deliveries = deliveries
        self.audit = audit
        self.jobs = jobs
        self.firings = firings
        self.effects = effects
        self.downloads = downloads
        self.catalog = catalog
        self.objects = objects
        self.link_secret = link_secret
        self.fairness = fairness or Fairness()
        self.link_seconds = link_seconds
        self.clock = clock

    # -- saved queries -------------------------------------------------------------------------

    def saved_queries(self, person: Person) -> list[SavedQuery]:
        """The saved queries `person` may run."""
        queries = list(self.catalog.queries.values())
        if all(query.access.for_everyone for query in queries):
            return queries
        member = self.member(person)
        return [query for query in queries if query.access.refusal(member) is None]

    def public_queries(self) -> list[SavedQuery]:
        """The saved queries anyone signed in may run as they are (what the OpenAPI document
        describes one by one; it is the same for everyone)."""
        return [query for query in self.catalog.queries.values() if query.access.for_everyone]

    def saved_query(self, person: Person, name: str, *, path: RefusedPath = "show") -> SavedQuery:
        """A saved query `person` may run; NotFoundError for any other, as for none (`path`
        names what they were doing, for the count of refusals)."""
        query = self._runnable(person, name, path=path)
        if query is None:
            raise NotFoundError(f"no saved query {quoted(name)}")
        return query

    # -- access ----------------------------------------------------------------------------------

    def member(self, person: Person) -> Member:
        """`person` as access sees them now: their role, groups and attributes from the store
        (the command line's operator, known to no store, by its role alone)."""
        found = self.members.member(person.name) if self.members is not None else None
        if found is None:
            return Member(name=person.name, is_operator=person.is_operator)
        return found

    def owner(self, name: str) -> Member:
        """The owner of a job or schedule as access sees them now."""
        found = self.members.member(name) if self.members is not None else None
        return found if found is not None else Member(name=name)

    def refusal(self, member: Member, saved_query: str) -> Refusal | None:
        """Why `member` may not run `saved_query` now (None when they may, or when the query
        left the catalog: what refuses that is elsewhere)."""
        query = self.catalog.queries.get(saved_query)
        if query is None or query.access.for_everyone:
            return None
        return query.access.refusal(member)

    def _runnable(self, person: Person, name: str, *, path: RefusedPath) -> SavedQuery | None:
        """The saved query when `person` may run it; None when it is missing or hidden from
        them (a hidden one is logged and counted as a refusal of `path`)."""
        query = self.catalog.queries.get(name)
        if query is None:
            return None
        if query.access.for_everyone:
            return query
        member = self.member(person)
        refusal = query.access.refusal(member)
        if refusal is None:
            return query
        reason = refusal.reason_for(person.name)
        self.refused(path, refusal, f"{person.name} asked for {quoted(name)}, hidden: {reason}")
        return None

    def _require_access(self, member: Member, saved_query: str, *, path: RefusedPath) -> None:
        refusal = self.refusal(member, saved_query)
        if refusal is not None:
            doing = "download" if path in ("download", "link") else "run"
            reason = refusal.reason_for(member.name)
            detail = f"{member.name} may not {doing} {quoted(saved_query)}: {reason}"
            self.refused(path, refusal, detail)
            raise AccessRefusedError(detail, access_rule=refusal.names)

    def refused(self, path: RefusedPath, refusal: Refusal, message: str) -> None:
        """Log and count one refusal of `path` by `refusal` (`message`: who, what, why)."""
        self.refusals.refused(path, "group" if refusal.rule is not None else "bind", message)

    # -- creating jobs -------------------------------------------------------------------------

    def create(
        self,
        person: Person,
        saved_query: str,
        parameters: Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        from_text: bool = False,
        every_problem: bool = False,
        notify: bool = False,
    ) -> Created:
        """A new job of `saved_query` owned by `person`.

        `from_text` takes parameter values as text (a form, the command line); otherwise as
        typed JSON. ParameterError names a parameter and its rule (with `every_problem`,
        InvalidParametersError names every one); OverLimitError a limit. With `notify`, an
        e-mail goes to the person's address when the export ends (InvalidInputError naming
        `notify` when they have none, or one e-mail may not go to).
        """
        key = _scoped_key(checked_idempotency_key(idempotency_key), person.name, person.name)
        query = self._runnable(person, saved_query, path="create")
        if query is None:
            raise InvalidInputError(
                "saved_query",
                "unknown",
                f"no saved query {quoted(saved_query)}",
                title="Unknown saved query",
            )
        new = new_export(
            query,
            parameters,
            owner=person.name,
            requested_by=person.name,
            idempotency_key=key,
            from_text=from_text,
            every_problem=every_problem,
            bound=query.access.bound_values(self.member(person)) if query.access.bound else None,
        )
        if notify:
            self.notify_address(person)
            new = replace(new, options={**new.options, "notify": True})
        return self._insert(new)

    def notify_address(self, person: Person) -> str:
        """Where `person`'s e-mail goes when an export of theirs ends: InvalidInputError naming
        `notify` when they have no address, or one outside `email_domains` (refused now rather
        than given up when the export ends)."""
        address = self.member(person).email
        if address is None:
            raise InvalidInputError(
                "notify",
                "email",
                "notify: you have no e-mail address here; an operator sets it "
                "(reportexport users email NAME ADDRESS)",
                title="No e-mail address",
            )
        refused = domain_refusal(address, self.email_domains)
        if refused is not None:
            raise InvalidInputError(
                "notify", "domain", f"notify: {refused}", title="E-mail domain not allowed"
            )
        return address

    def notify(self, person: Person, job_id: int) -> Job:
        """An e-mail to `person` when their export ends, asked for while it has not ended: the
        e-mail goes to the job's owner, so only they ask (an operator too, for their own);
        ConflictError once it has ended, InvalidInputError (`notify`) as `create`'s."""
        job = self._changeable(person, job_id)
        if job.owner != person.name:
            raise ForbiddenError(
                f"the e-mail of export {job_id} would go to its owner, {job.owner}; "
                "only they ask for it"
            )
        ended = ConflictError(
            f"export {job_id} has ended; an e-mail is asked for before it ends",
            title="Export ended",
        )
        if job.status in TERMINAL:
            raise ended
        self.notify_address(person)
        try:
            return self.jobs.set_notify(JobId(job_id), owner=person.name)
        except JobNotFoundError:
            raise NotFoundError(f"no export {job_id}") from None
        except StaleStatusError:  # it ended meanwhile
            raise ended from None

    def check_parameters(
        self,
        person: Person,
        saved_query: str,
        parameters: Mapping[str, Any],
        *,
        every_problem: bool = False,
    ) -> None:
        """ParameterError unless `parameters` (typed JSON values) fit `saved_query` as
        `person` would run it (with `every_problem`, InvalidParametersError names every one);
        NotFoundError for a saved query they may not run."""
        query = self.saved_query(person, saved_query)
        bound = query.access.bound_values(self.member(person)) if query.access.bound else {}
        validate(
            query.parameters,
            with_bound(query, parameters, bound),
            from_text=False,
            every_problem=every_problem,
        )

    def create_scheduled(
        self,
        owner: str,
        saved_query: str,
        parameters: Mapping[str, Any],
        *,
        schedule_id: int,
        key: str,
        person: Person | None = None,
        idempotency_key: str | None = None,
    ) -> Created:
        """A schedule's job for its owner, under the owner's limits, once per `key` (the
        firing), or once per `person`'s `idempotency_key` when they ran it by hand:
        ParameterError when the parameters no longer validate, OverLimitError at a limit,
        NotFoundError when the saved query left the catalog, AccessRefusedError when the
        owner may no longer run it."""
        query = self.catalog.queries.get(saved_query)
        if query is None:
            gone = f"the saved query {quoted(saved_query)} is no longer in the catalog"
            raise NotFoundError(gone)
        member = self.owner(owner)
        self._require_access(member, saved_query, path="schedule")
        new = new_export(
            query,
            without_bound(query, parameters),
            bound=query.access.bound_values(member) if query.access.bound else None,
            owner=owner,
            requested_by=owner if person is None else person.name,
            idempotency_key=self._firing_key(schedule_id, key, person, idempotency_key, owner),
            schedule_id=schedule_id,
        )
        return self._insert(new)

    @staticmethod
    def _firing_key(
        schedule_id: int, key: str, person: Person | None, given: str | None, owner: str
    ) -> str | None:
        """A person's own key when they gave one; otherwise the firing's."""
        if person is not None and given is not None:
            return _scoped_key(checked_idempotency_key(given), person.name, owner)
        return _schedule_key(schedule_id, key)

    def job_of_firing(self, owner: str, schedule_id: int, key: str) -> Job | None:
        """The job a schedule's firing made already, if it made one."""
        return self.jobs.job_by_key(owner, _schedule_key(schedule_id, key))

    def job_by_key(self, person: Person, owner: str, idempotency_key: str) -> Job | None:
        """The job `person`'s earlier request with this key made for `owner`, if any."""
        key = _scoped_key(checked_idempotency_key(idempotency_key), person.name, owner)
        assert key is not None
        return self.jobs.job_by_key(owner, key)

    def rerun(self, person: Person, job_id: int, *, idempotency_key: str | None = None) -> Created:
        """The job again, as the catalog has its saved query now, for the job's owner (whose
        access rules decide, and whose record gives the bound parameters as it is now)."""
        old = self._changeable(person, job_id)
        key = _scoped_key(checked_idempotency_key(idempotency_key), person.name, old.owner)
        query = self.catalog.queries.get(old.saved_query)
        if query is None:
            raise ConflictError(
                f"the saved query {quoted(old.saved_query)} is no longer in the catalog",
                title="Saved query removed",
            )
        owner = self.member(person) if old.owner == person.name else self.owner(old.owner)
        self._require_access(owner, old.saved_query, path="rerun")
        try:
            new = new_export(
                query,
                without_bound(query, old.parameters),
                bound=query.access.bound_values(owner) if query.access.bound else None,
                owner=old.owner,
                requested_by=person.name,
                idempotency_key=key,
                rerun_of=old.id,
                from_text=True,
            )
        except ParameterError as exc:
            raise ConflictError(
                f"the saved query {quoted(old.saved_query)} changed and no longer takes this job's "
                f"parameters: {exc}",
                title="Saved query changed",
            ) from None
        return self._insert(new)

    def _insert(self, new: NewJob) -> Created:
        rules = self.fairness
        limits = OwnerLimits(
            max_active=rules.max_active,
            max_recent=rules.max_per_window,
            since=self.clock() - timedelta(seconds=rules.window_seconds),
        )
        try:
            job, created = self.jobs.create_job(new, limits=limits)
        except OwnerLimitError as exc:
            raise self._over_limit(exc, new.owner) from None
        if not created and (job.saved_query, dict(job.parameters), job.rerun_of) != (
            new.saved_query,
            dict(new.parameters),
            new.rerun_of,
        ):
            raise KeyReusedError(job.id)
        return Created(job=job, created=created)

    def _over_limit(self, exc: OwnerLimitError, owner: str) -> OverLimitError:
        rules = self.fairness
        if exc.limit == "max_active":
            return OverLimitError(
                f"{exc.count} {'export' if exc.count == 1 else 'exports'} of {owner} "
                f"{'is' if exc.count == 1 else 'are'} queued or running; "
                f"at most {exc.maximum} may be at once",
                limit="max_active",
                retry_after=10,
            )
        return OverLimitError(
            f"{owner} created {exc.count} exports in the last {rules.window_seconds} s; "
            f"at most {exc.maximum} are allowed",
            limit="max_per_window",
            retry_after=rules.window_seconds,
        )

    # -- seeing and changing jobs ----------------------------------------------------------------

    def job(
        self,
        person: Person,
        job_id: int,
        *,
        with_previous: bool = False,
        with_deliveries: bool = False,
    ) -> JobView:
        """A job you may see; `with_previous` adds its owner's last success of the same saved
        query with the same parameters (what the dashboard estimates from), `with_deliveries`
        each destination of its announcements."""
        detail = self._detail(job_id)
        mine = person.is_operator or detail.job.owner == person.name
        if not mine and not self._received(person, detail.job):
            raise NotFoundError(f"no export {job_id}")  # another person's job does not exist
        if not mine:  # a recipient: the owner's destinations and their problems are the owner's
            quiet = tuple(replace(e, last_error=None) for e in detail.side_effects)
            detail = replace(detail, side_effects=quiet)
        firing = None
        if detail.job.schedule_id is not None and self.firings is not None:
            firing = self.firings.firing_of_job(detail.job.id)
        previous = self.jobs.previous_success(detail.job) if with_previous and mine else None
        return JobView(
            detail=detail,
            downloads=self.downloads.job_downloads(detail.job.id) if mine else [],
            firing=firing,
            previous=previous,
            deliveries=self._deliveries_for(person, detail.job)
            if with_deliveries and self.deliveries is not None and mine
            else (),
        )

    def _deliveries_for(self, person: Person, job: Job) -> tuple[Delivery, ...]:
        """Where `job`'s announcements went, as `person` (its owner, or an operator) may see
        them: an owner sees their recipients by name, not their addresses nor why an e-mail
        to one was given up (that may say what the recipient's access is)."""
        found = self._deliveries().job_deliveries(job.id)
        if person.is_operator:
            return tuple(found)
        return tuple(
            replace(d, address=d.person, last_error=None)
            if d.person is not None and d.person != job.owner
            else d
            for d in found
        )

    def _received(self, person: Person, job: Job) -> bool:
        """Does `person` see `job` as a recipient of the schedule that made it?"""
        return self.recipient_job_refusal(person.name, job) is None

    def recipient_job_refusal(self, name: str, job: Job, address: str | None = None) -> str | None:
        """Why `name` may not see `job` (nor be sent its announcement at `address`) as a
        recipient of the schedule that made it, or None when they may: while they are one (of
        a schedule not deleted), may run its saved query with the job's bound values as theirs,
        and (`address`) that is still their address. A recipient sees and downloads; they
        change nothing."""
        if job.schedule_id is None or self.firings is None:
            return f"export {job.id} was made by no schedule"
        if self.firings.recipient(job.schedule_id, name) is None:
            return f"{name} is no longer a recipient of schedule {job.schedule_id}"
        member = self.known_member(name)
        if member is None:
            return f"{name} is no longer a person of this service, or is suspended"
        if address is not None and (member.email or "").lower() != address.lower():
            return f"{name}'s address is no longer {address}"
        query = self.catalog.queries.get(job.saved_query)
        if query is None:
            return f"the saved query {quoted(job.saved_query)} is no longer in the catalog"
        refusal = query.access.job_refusal(member, job.parameters)
        return None if refusal is None else refusal.reason_for(name)

    def known_member(self, name: str) -> Member | None:
        """A person of this service as access sees them now; None for no such person, or one
        revoked or suspended."""
        return self.members.member(name) if self.members is not None else None

    def recipient_refusal(self, member: Member, owner: str, saved_query: str) -> Refusal | None:
        """Why `member` may not receive the files of `owner`'s schedule of `saved_query` (None
        when they may): they may run it themselves, with the values bound to its owner."""
        query = self.catalog.queries.get(saved_query)
        if query is None:
            return None  # the schedule pauses itself at its next firing
        bound = query.access.bound_values(self.owner(owner)) if query.access.bound else {}
        return query.access.job_refusal(member, bound)

    def _changeable(self, person: Person, job_id: int) -> Job:
        """A job `person` may act on: their own, or anyone's for an operator (a recipient of
        its schedule only sees it)."""
        job = self._detail(job_id).job
        if not person.is_operator and job.owner != person.name:
            raise NotFoundError(f"no export {job_id}")
        return job

    def jobs_by_ids(self, ids: Collection[int], *, person: Person | None = None) -> list[Job]:
        """The jobs of these ids that exist and `person` may see (without a person: all of
        them, for the live pages' change feed, whose pages were checked when they subscribed)."""
        wanted = sorted({job_id for job_id in ids if 1 <= job_id <= MAX_ID})
        found = self.jobs.jobs_by_ids(wanted) if wanted else []
        if person is None or person.is_operator:
            return found
        return [job for job in found if job.owner == person.name or self._received(person, job)]

    def jobs_of(
        self,
        person: Person,
        *,
        status: str | None = None,
        saved_query: str | None = None,
        owner: str | None = None,
        before: int | None = None,
        limit: int = 50,
        search: str | None = None,
        oldest_first: bool = False,
        after: int | None = None,
    ) -> JobPage:
        """A person's jobs newest first (an operator's: everyone's, or one `owner`'s).

        `search` finds a job by its id (`42` or `#42`) or by words of its saved query's title
        or name; `oldest_first` turns the order, paginated from `after` instead of `before`.
        """
        if status is not None and not is_status(status):
            raise InvalidInputError("status", "state", f"{quoted(status)} is not a state")
        for field, value in (("saved_query", saved_query), ("owner", owner), ("search", search)):
            if value is not None and unsafe_text(value) is not None:
                raise InvalidInputError(field, "text", f"{field} {unsafe_text(value)}")
        for field, cursor in (("before", before), ("after", after)):
            if cursor is not None and not 1 <= cursor <= MAX_ID:
                raise InvalidInputError(field, "range", f"{field} must be 1 to {MAX_ID}")
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInputError("limit", "range", f"limit must be 1 to {MAX_PAGE}")
        job_id, titled = self.search_terms(search)
        return self.jobs.list_jobs(
            JobFilter(
                owner=owner if person.is_operator else person.name,
                status=status,
                saved_query=saved_query,
                saved_queries=titled,
                job_id=JobId(job_id) if job_id is not None else None,
                before=JobId(before) if before is not None and not oldest_first else None,
                after=JobId(after) if after is not None and oldest_first else None,
                oldest_first=oldest_first,
                limit=limit,
            )
        )

    def search_terms(self, search: str | None) -> tuple[int | None, tuple[str, ...] | None]:
        """A search as a job id, or as the names of the saved queries whose title or name
        holds every word of it (which may be none: then no job matches)."""
        words = (search or "").strip()
        if not words:
            return None, None
        number = words.removeprefix("#")
        if number.isascii() and number.isdigit():
            value = int(number)
            return (value if 1 <= value <= MAX_ID else 0), None
        wanted = words.casefold().split()
        names = tuple(
            name
            for name, query in self.catalog.queries.items()
            if all(word in f"{query.title} {name}".casefold() for word in wanted)
        )
        return None, names

    def cancel(self, person: Person, job_id: int, *, detail: str | None = None) -> Job:
        """Cancel a queued or running job along the fixture's `user` edge; an operator's
        cancel is recorded in the audit (with `detail`)."""
        self._changeable(person, job_id)
        reason = "canceled by an operator" if person.is_operator else "canceled by its owner"
        audit = None
        if person.is_operator:
            audit = AuditEntry(
                person=person.name,
                action="cancel_job",
                object_kind="job",
                object_id=str(job_id),
                detail=detail,
            )
        try:
            return self.jobs.cancel_job(
                JobId(job_id), person=person.name, reason=reason, audit=audit
            )
        except JobNotFoundError:
            raise NotFoundError(f"no export {job_id}") from None

    def cancel_many(self, person: Person, job_ids: Collection[int]) -> BulkCancel:
        """Cancel each of several jobs as `cancel` does (each by its own rules, in its own
        transaction); what could not be canceled is said, not raised."""
        wanted = sorted(set(job_ids))
        if not wanted:
            raise InvalidInputError("job", "required", "choose at least one export to cancel")
        if len(wanted) > MAX_PAGE:
            raise InvalidInputError("job", "max_items", f"at most {MAX_PAGE} exports at once")
        canceled: list[int] = []
        refused: list[tuple[int, str]] = []
        detail = f"one of {len(wanted)} canceled together" if len(wanted) > 1 else None
        for job_id in wanted:
            try:
                self.cancel(person, job_id, detail=detail)
            except NotFoundError:
                refused.append((job_id, "no such export"))
            except StaleStatusError:
                refused.append((job_id, "it kept changing while it was being canceled"))
            except TransitionError:
                found = self.jobs.jobs_by_ids([job_id])
                refused.append((job_id, f"{found[0].status} already" if found else "gone"))
            else:
                canceled.append(job_id)
        return BulkCancel(canceled=canceled, refused=refused)

    def redrive(self, person: Person, job_id: int, effect: str) -> None:
        """An operator tries a given-up side effect again."""
        if not person.is_operator:
            raise ForbiddenError("only operators re-drive side effects")
        if not is_effect(effect):
            raise InvalidInputError(
                "effect", "unknown", f"{quoted(effect)} is not a side effect of the lifecycle"
            )
        self._changeable(person, job_id)
        audit = AuditEntry(
            person=person.name,
            action="redrive_side_effect",
            object_kind="side_effect",
            object_id=f"{job_id}/{effect}",
        )
        if not self.effects.redrive_side_effect(job_id, effect, now=self.clock(), audit=audit):
            raise ConflictError(
                f"job {job_id} has no given-up side effect {quoted(effect)}",
                title="Not given up",
            )

    def redrive_delivery(self, person: Person, delivery_id: int) -> Delivery:
        """An operator tries one given-up destination of an announcement again, alone."""
        if not person.is_operator:
            raise ForbiddenError("only operators re-drive side effects")
        deliveries = self._deliveries()
        if deliveries.get_delivery(delivery_id) is None:
            raise NotFoundError(f"no delivery {delivery_id}")
        audit = AuditEntry(
            person=person.name,
            action="redrive_delivery",
            object_kind="delivery",
            object_id=str(delivery_id),
        )
        if not deliveries.redrive_delivery(delivery_id, now=self.clock(), audit=audit):
            raise ConflictError(
                f"delivery {delivery_id} is not a given-up destination of an announcement "
                "still owed",
                title="Not given up",
            )
        found = deliveries.get_delivery(delivery_id)
        assert found is not None  # delivery records are never deleted but by a purge
        return found

    def given_up_deliveries(self, person: Person, limit: int = 100) -> list[Delivery]:
        """Destinations given up, most recent first (operators)."""
        if not person.is_operator:
            raise ForbiddenError("only operators see every job's side effects")
        return self._deliveries().given_up_deliveries(limit)

    def _deliveries(self) -> Deliveries:
        if self.deliveries is None:
            raise RuntimeError("this export service was built without delivery records")
        return self.deliveries

    def given_up_side_effects(self, person: Person, limit: int = 100) -> list[SideEffect]:
        """Side effects that ran out of attempts, most recent first (operators)."""
        if not person.is_operator:
            raise ForbiddenError("only operators see every job's side effects")
        return self.effects.given_up_side_effects(limit)

    # -- downloads ---------------------------------------------------------------------------------

    def download(self, person: Person, job_id: int) -> DownloadLink:
        """A signed, expiring link to a succeeded job's file; the request is recorded."""
        job = self.job(person, job_id).detail.job
        self._may_download(person, job)
        key, file_name = self._downloadable(job)
        if self.objects.stat(key) is None:
            raise GoneError(f"the file of job {job.id} is no longer stored")
        now = self.clock()
        expires = now + timedelta(seconds=self.link_seconds)
        if job.object_expires_at is not None:
            expires = min(expires, job.object_expires_at)
        seconds = max(1, int((expires - now).total_seconds()))
        url = self.objects.download_url(key, file_name, seconds)
        self.downloads.record_download(job.id, person.name)
        return DownloadLink(url=url, expires_at=expires, file_name=file_name)

    def file_schema(self, person: Person, job_id: int) -> tuple[str, dict[str, Any]]:
        """The file name and content of the small JSON schema next to a job's CSV."""
        job = self.job(person, job_id).detail.job
        self._may_download(person, job, audited=False)
        schema = file_schema(job)
        if schema is None:
            raise ConflictError(f"job {job.id} is {job.status}: there is no file", title="No file")
        return schema_file_name(job.file_name or f"export-{job.id}.csv"), schema

    def open_file(self, person: Person, job_id: int) -> StoredFile:
        """A succeeded job's file, opened here (the command line's own download)."""
        job = self.job(person, job_id).detail.job
        self._may_download(person, job)
        key, file_name = self._downloadable(job)
        opened = self._open(key, file_name)
        self.downloads.record_download(job.id, person.name)
        return opened

    def open_link(self, token: str) -> StoredFile:
        """The file a signed download link grants (the local object store's links), while its
        owner may still run its saved query."""
        try:
            key, file_name = verify_download(self.link_secret, token)
        except LinkError as exc:
            if exc.expired:
                raise GoneError(str(exc)) from None
            raise ForbiddenError(str(exc)) from None
        job_id = final_key_job(key)
        if job_id is not None:
            try:
                job = self._detail(job_id).job
            except NotFoundError:
                raise GoneError("the file is no longer stored") from None
            refusal = self.refusal(self.owner(job.owner), job.saved_query)
            if refusal is not None:  # said to the link's holder without whose rule it is
                why = refusal.reason_for(job.owner)
                self.refused("link", refusal, f"{job.owner} may not download "
                             f"{quoted(job.saved_query)} by a link: {why}")  # fmt: skip
                raise ForbiddenError("this link no longer gives the file: the export's owner "
                                     "may no longer download it")  # fmt: skip
        return self._open(key, file_name)

    def owner_job_refusal(self, job: Job) -> str | None:
        """Why `job`'s owner may no longer download its file (the rule that refuses them), or
        None when they may: what a signed download link of it checks."""
        refusal = self.refusal(self.owner(job.owner), job.saved_query)
        return None if refusal is None else refusal.reason_for(job.owner)

    def _may_download(self, person: Person, job: Job, *, audited: bool = True) -> None:
        """A person downloads their file while its query's rules include them; an operator
        downloads anyone's, and downloading someone else's is recorded in the audit."""
        if job.owner == person.name:
            self._require_access(self.member(person), job.saved_query, path="download")
        elif person.is_operator and audited and self.audit is not None:
            self.audit.record(
                AuditEntry(
                    person=person.name,
                    action="download_file",
                    object_kind="job",
                    object_id=str(job.id),
                    detail=f"the file of {job.owner}",
                )
            )

    def _downloadable(self, job: Job) -> tuple[str, str]:
        if job.status != "succeeded" or job.object_key is None:
            raise ConflictError(
                f"job {job.id} is {job.status}: there is no file", title="Not downloadable"
            )
        if job.object_expires_at is not None and job.object_expires_at <= self.clock():
            raise GoneError(
                f"the file of job {job.id} expired at {job.object_expires_at.isoformat()}"
            )
        return job.object_key, job.file_name or f"export-{job.id}.csv"

    def _open(self, key: str, file_name: str) -> StoredFile:
        try:
            info = self.objects.stat(key)
            if info is None:
                raise GoneError("the file is no longer stored")
            stream = self.objects.read(key)
        except ObjectKeyError as exc:
            raise ForbiddenError(str(exc)) from None
        except FileNotFoundError:
            raise GoneError("the file is no longer stored") from None
        return StoredFile(
            stream=stream, key=key, file_name=file_name, size=info.size, modified=info.modified
        )

    def _detail(self, job_id: int) -> JobDetail:
        if not 1 <= job_id <= MAX_ID:
            raise NotFoundError(f"no export {job_id}")
        try:
            return self.jobs.get_job(JobId(job_id))
        except JobNotFoundError:
            raise NotFoundError(f"no export {job_id}") from None


def checked_idempotency_key(key: str | None) -> str | None:
    if key is None:
        return None
    problem = unsafe_text(key)
    if problem is None and not re.fullmatch(KEY_PATTERN, key):
        problem = "holds a character other than printable ASCII"
    if problem is not None or not key or len(key) > MAX_KEY_LENGTH:
        why = problem or f"must be 1 to {MAX_KEY_LENGTH} characters"
        raise InvalidInputError("Idempotency-Key", "text", f"the Idempotency-Key {why}")
    return key


def _schedule_key(schedule_id: int, key: str) -> str:
    """A firing's key holds a newline, which no key sent over HTTP can, so that no request can
    take a firing's key."""
    return f"schedule {schedule_id}\n{key}"


def _scoped_key(key: str | None, requester: str, owner: str) -> str | None:
    """Keys belong to who sends them: an operator's key on someone's job is kept apart from
    the owner's own keys (joined by a newline, which no key holds)."""
    if key is None or requester == owner:
        return key
    return f"{requester}\n{key}"
