"""The records jobs, side effects, endpoints and people are read as: frozen, no I/O.

The job store builds them from rows (`store.rows`); services and entry points pass them on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NewType

from reportexport.core.lifecycle import Actor, Effect, FromRunningByWorker, Status

JobId = NewType("JobId", int)


@dataclass(frozen=True, kw_only=True)
class NewJob:
    """A job as a user asks for it; the store fills in the rest."""

    owner: str
    saved_query: str
    query_sql: str
    query_hash: str
    source: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    rerun_of: JobId | None = None
    idempotency_key: str | None = None
    requested_by: str | None = None
    schedule_id: int | None = None


@dataclass(frozen=True, kw_only=True)
class OwnerLimits:
    """What one owner may have: unfinished jobs, and jobs created since `since`."""

    max_active: int
    max_recent: int
    since: datetime


@dataclass(frozen=True, kw_only=True)
class Job:
    id: JobId
    owner: str
    saved_query: str
    source: str
    query_sql: str
    query_hash: str
    parameters: Mapping[str, Any]
    options: Mapping[str, Any]
    status: Status
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    lease_owner: str | None
    lease_token: int
    lease_expires_at: datetime | None
    rows_written: int
    bytes_written: int
    progressed_at: datetime | None
    temp_key: str | None
    object_key: str | None
    object_sha256: str | None
    object_bytes: int | None
    object_rows: int | None
    columns: Sequence[str] | None
    column_types: Sequence[str] | None
    dialect_version: int | None
    file_name: str | None
    object_expires_at: datetime | None
    error_code: str | None
    error_message: str | None
    rerun_of: JobId | None
    idempotency_key: str | None
    requested_by: str | None
    schedule_id: int | None = None


@dataclass(frozen=True, kw_only=True)
class HistoryEntry:
    id: int
    job_id: JobId
    from_status: Status
    to_status: Status
    actor: Actor
    person: str | None
    reason: str | None
    worker: str | None
    at: datetime


# The note of an announcement completed with no endpoint to send it to: nothing to deliver.
NO_ENDPOINT_NOTE = "no webhook endpoint"


@dataclass(frozen=True, kw_only=True)
class SideEffect:
    id: int
    job_id: JobId
    status: Status
    effect: Effect
    created_at: datetime
    attempts: int
    next_attempt_at: datetime
    last_attempt_at: datetime | None
    last_error: str | None
    completed_at: datetime | None
    given_up_at: datetime | None
    claimed_by: str | None
    claim_expires_at: datetime | None
    claim_token: int
    redrives: int

    @property
    def delivered_nowhere(self) -> bool:
        """Completed with nothing to deliver: no endpoint receives its events (no problem)."""
        return self.completed_at is not None and self.last_error == NO_ENDPOINT_NOTE


@dataclass(frozen=True, kw_only=True)
class EffectFilter:
    """Which side-effect rows an operator lists: given up, or not yet completed (nor given up)."""

    given_up: bool
    owner: str | None = None
    job_id: int | None = None
    saved_queries: tuple[str, ...] | None = None  # any of these (a search by title)
    cursor: int | None = None  # past this id, in the order asked for
    oldest_first: bool = False
    limit: int = 50


@dataclass(frozen=True, kw_only=True)
class ListedEffect:
    """A side-effect row with what its job says about it."""

    effect: SideEffect
    owner: str
    saved_query: str
    title: str


@dataclass(frozen=True, kw_only=True)
class EffectPage:
    effects: tuple[ListedEffect, ...]
    next_cursor: int | None


@dataclass(frozen=True, kw_only=True)
class ClaimedEffect:
    """A side-effect row claimed by a runner; its claim token fences the runner's writes."""

    effect: SideEffect
    runner: str

    @property
    def token(self) -> int:
        return self.effect.claim_token


@dataclass(frozen=True, kw_only=True)
class WebhookEndpoint:
    id: int
    owner: str | None
    url: str
    secret: str
    previous_secret: str | None
    previous_secret_until: datetime | None
    created_at: datetime
    disabled_at: datetime | None
    disabled_reason: str | None

    def secrets(self, now: datetime) -> list[str]:
        """The secrets that sign now: the current one, and the previous during the overlap."""
        keys = [self.secret]
        if self.previous_secret and self.previous_secret_until and self.previous_secret_until > now:
            keys.append(self.previous_secret)
        return keys


@dataclass(frozen=True, kw_only=True)
class ChatChannel:
    """A chat channel reached through its incoming-webhook URL, for one owner's announcements
    or (owner None) everyone's. The URL carries its credential: it is never shown back."""

    id: int
    owner: str | None
    name: str
    url: str
    created_at: datetime
    disabled_at: datetime | None
    disabled_reason: str | None
    # Only the announcements of the schedules it is added to, not its owner's (everyone's).
    schedules_only: bool = False


@dataclass(frozen=True, kw_only=True)
class Delivery:
    """One destination of one announcement (a webhook endpoint, an e-mail address or a chat
    channel), fixed when the job ended, with its own attempts, backoff and giving up."""

    id: int
    job_id: JobId
    effect: Effect
    endpoint_id: int | None
    address: str | None
    created_at: datetime
    attempts: int
    next_attempt_at: datetime
    last_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None
    given_up_at: datetime | None
    redrives: int
    channel_id: int | None = None
    person: str | None = None  # whose address an e-mail goes to (their access, their link)

    @property
    def waiting(self) -> bool:
        """Neither delivered nor given up: it will be tried again."""
        return self.delivered_at is None and self.given_up_at is None

    @property
    def destination(self) -> str:
        """How people name it: `endpoint 3`, `alice@example.com`, `chat channel 2`."""
        if self.channel_id is not None:
            return f"chat channel {self.channel_id}"
        return f"endpoint {self.endpoint_id}" if self.address is None else self.address


Role = Literal["user", "operator"]
KINDS = ("person", "service")
ROLES: tuple[Role, ...] = ("user", "operator")


class InRole:
    """Someone who acts in a role: a person's record, or someone acting by name and role."""

    role: str

    @property
    def is_operator(self) -> bool:
        return self.role == "operator"


@dataclass(frozen=True, kw_only=True)
class User(InRole):
    id: int
    name: str
    role: Role
    token_hash: str
    created_at: datetime
    revoked_at: datetime | None
    token_revoked_at: datetime | None = None  # the token stopped working; the person did not
    kind: str = "person"  # or "service": a token without a human, for the API only
    suspended_at: datetime | None = None  # suspended: no token, no session, until resumed
    suspended_by: str | None = None
    suspend_reason: str | None = None
    email: str | None = None  # where their announcements by e-mail go
    notify_always: bool = False  # an e-mail when any of their exports ends (their preference)

    @property
    def is_service(self) -> bool:
        return self.kind == "service"


@dataclass(frozen=True, kw_only=True)
class ListedPerson:
    """Someone as the operators' page lists them: their row, and their live dashboard sessions."""

    user: User
    live_sessions: int


@dataclass(frozen=True, kw_only=True)
class PeoplePage:
    people: tuple[ListedPerson, ...]
    next_cursor: int | None


# What operators do, as the audit records it (the service's method in the store's words).
AuditAction = Literal[
    "redrive_side_effect",
    "redrive_delivery",
    "cancel_job",
    "add_webhook_endpoint",
    "rotate_webhook_secret",
    "disable_webhook_endpoint",
    "test_webhook_endpoint",
    "add_chat_channel",
    "remove_chat_channel",
    "add_person",
    "new_token",
    "revoke_token",
    "revoke_person",
    "suspend_person",
    "resume_person",
    "set_email",
    "set_notify_always",
    "add_group",
    "delete_group",
    "add_member",
    "remove_member",
    "set_attribute",
    "unset_attribute",
    "download_file",
    "pause_schedule",
    "add_recipient",
    "remove_recipient",
    "add_schedule_channel",
    "remove_schedule_channel",
    "add_schedule_address",
    "remove_schedule_address",
]
AuditObject = Literal[
    "side_effect",
    "delivery",
    "job",
    "webhook_endpoint",
    "chat_channel",
    "person",
    "group",
    "schedule",
]
# Where a membership or an attribute came from: an operator, or the identity provider.
Origin = Literal["operator", "provider"]


@dataclass(frozen=True, kw_only=True)
class Group:
    """A group people belong to; saved queries and sources name groups in their access."""

    id: int
    name: str
    description: str
    created_at: datetime
    created_by: str
    member_count: int = 0


@dataclass(frozen=True, kw_only=True)
class PersonAccess:
    """A person's groups and attributes, each with where it came from."""

    name: str
    groups: tuple[tuple[str, Origin], ...]
    attributes: tuple[tuple[str, str, Origin], ...]  # (name, value, origin)

    @property
    def group_names(self) -> frozenset[str]:
        return frozenset(group for group, _ in self.groups)

    @property
    def attribute_values(self) -> dict[str, str]:
        return {name: value for name, value, _ in self.attributes}


@dataclass(frozen=True, kw_only=True)
class AuditEntry:
    """An operator's action as a service hands it to the store, which writes it in the
    action's own transaction. An empty `object_id` names the row the action creates."""

    person: str  # the operator who acted ("command line" for the shell)
    action: AuditAction
    object_kind: AuditObject
    object_id: str = ""
    detail: str | None = None


@dataclass(frozen=True, kw_only=True)
class AuditRecord:
    """One row of the append-only audit: who did what to which object, and when."""

    id: int
    at: datetime
    person: str
    action: str
    object_kind: str
    object_id: str
    detail: str | None


@dataclass(frozen=True, kw_only=True)
class AuditFilter:
    person: str | None = None
    action: str | None = None
    object_kind: str | None = None
    object_id: str | None = None
    before: int | None = None  # newest first: ids below this cursor
    limit: int = 50


@dataclass(frozen=True, kw_only=True)
class AuditPage:
    records: tuple[AuditRecord, ...]
    next_cursor: int | None


@dataclass(frozen=True, kw_only=True)
class JobDetail:
    """One job with everything that explains it."""

    job: Job
    history: tuple[HistoryEntry, ...]
    side_effects: tuple[SideEffect, ...]


@dataclass(frozen=True, kw_only=True)
class JobPage:
    jobs: tuple[Job, ...]
    next_cursor: JobId | None


@dataclass(frozen=True, kw_only=True)
class JobFilter:
    """Which jobs a listing shows: an owner's (or everyone's, for an operator), newest first."""

    owner: str | None = None
    status: Status | None = None
    saved_query: str | None = None
    saved_queries: tuple[str, ...] | None = None  # any of these (a search by title)
    job_id: JobId | None = None
    before: JobId | None = None  # newest first: ids below this cursor
    after: JobId | None = None  # with oldest_first: ids above this cursor
    oldest_first: bool = False
    limit: int = 50


@dataclass(frozen=True, kw_only=True)
class Lease:
    """A worker's hold on a running job; the token fences every write the worker makes."""

    job_id: JobId
    token: int
    worker: str
    expires_at: datetime


@dataclass(frozen=True, kw_only=True)
class ClaimedJob:
    """What a worker needs of a job it claimed to run the export, and no more."""

    id: JobId
    owner: str
    saved_query: str
    source: str
    query_sql: str
    parameters: Mapping[str, Any]
    options: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Claim:
    lease: Lease
    job: ClaimedJob


@dataclass(frozen=True, kw_only=True)
class PublishedObject:
    key: str
    sha256: str
    bytes: int
    rows: int | None
    columns: Sequence[str]
    file_name: str
    expires_in_seconds: float | None
    column_types: Sequence[str] = ()
    dialect_version: int | None = None


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """How a worker ends a running job: where the worker's edges from running lead (build it
    from `job_status.SUCCEED` or `FAIL`), and what goes with it."""

    lease: Lease
    to_status: FromRunningByWorker
    reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    published: PublishedObject | None = None


@dataclass(frozen=True, kw_only=True)
class MetricsSnapshot:
    jobs_by_status: dict[str, int]
    transitions: dict[tuple[str, str, str], int]
    exports: int
    export_rows: int
    export_bytes: int
    export_seconds: float
    effect_attempts: dict[str, int]
    effects_given_up: dict[str, int]
    source_caps: tuple[SourceCap, ...] = ()
    owners_waiting: int = 0
    longest_owner_queue: int = 0
    # How long the oldest queued job has waited; 0 when nothing is queued.
    oldest_queued_seconds: float = 0.0
    schedules: ScheduleTotals | None = None


@dataclass(frozen=True, kw_only=True)
class ScheduleTotals:
    """Schedules firing, paused and ended; firings, the jobs they made, their refusals, and the
    times skipped after downtime. Counts only: a schedule has no status."""

    firing: int = 0
    paused: int = 0
    ended: int = 0
    firings: int = 0
    firing_jobs: int = 0
    firing_refusals: int = 0
    missed: int = 0


@dataclass(frozen=True, kw_only=True)
class SourceCap:
    """A source's max_concurrent as the database holds it for every worker."""

    source: str
    max_concurrent: int
    set_by: str
    set_at: datetime
    running: int


@dataclass(frozen=True, kw_only=True)
class CapChange:
    """A process replaced a cap another one had set (their catalogs differ)."""

    source: str
    previous: int
    previous_set_by: str
    now: int


@dataclass(frozen=True, kw_only=True)
class Purge:
    """One purge of terminal jobs finished before `before`: who, when, and what it removed."""

    id: int
    before: datetime
    requested_by: str
    os_user: str | None
    database_role: str | None
    started_at: datetime
    completed_at: datetime | None
    jobs: int | None
    history_rows: int | None
    side_effect_rows: int | None
    deliveries: int | None
    downloads: int | None
    reruns_unlinked: int | None
    schedule_firings: int | None = None


ProcessKind = Literal["worker", "effects", "serve"]
PauseReason = Literal["storage_unavailable", "source_unavailable"]


@dataclass(frozen=True, kw_only=True)
class Heartbeat:
    """A process's state as it last reported it: fixed fields, no free text."""

    process: str
    host: str
    pid: int
    kind: ProcessKind
    started_at: datetime
    active_jobs: tuple[int, ...] = ()
    last_claim_at: datetime | None = None
    # When the claims loop last asked for jobs (with room to take one, and not paused).
    last_poll_at: datetime | None = None
    claims_paused_until: datetime | None = None
    pause_reason: PauseReason | None = None
    paused_sources: tuple[str, ...] = ()
    seen_at: datetime | None = None
    age_seconds: float | None = None
    stopped_at: datetime | None = None  # it stopped cleanly then: stopped, not silent


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """A saved query run on a cron in a time zone: an ordinary job at each firing.

    No status: `paused_at` and `pause_reason` say it is paused; `next_fire_at` None says no
    time is left before `ends_at`."""

    id: int
    owner: str
    saved_query: str
    parameters: Mapping[str, Any]
    cron: str
    time_zone: str
    ends_at: datetime | None
    next_fire_at: datetime | None
    paused_at: datetime | None
    pause_reason: str | None
    created_at: datetime
    created_by: str


@dataclass(frozen=True, kw_only=True)
class Recipient:
    """A person of the system who gets a schedule's announcements by e-mail besides its owner."""

    schedule_id: int
    person: str
    added_by: str
    added_at: datetime


@dataclass(frozen=True, kw_only=True)
class ScheduleChannel:
    """A chat channel that gets a schedule's announcements (see `ChatChannel`)."""

    schedule_id: int
    channel_id: int
    added_by: str
    added_at: datetime


@dataclass(frozen=True, kw_only=True)
class ScheduleAddress:
    """An e-mail address outside this service's people that gets a schedule's announcements:
    a download link, or the file attached when it is at most `attach_max_bytes` (compressed
    with gzip first when `attach_gzip`; None: never attached)."""

    schedule_id: int
    address: str  # lower case
    attach_max_bytes: int | None
    attach_gzip: bool
    added_by: str
    added_at: datetime


@dataclass(frozen=True, kw_only=True)
class Firing:
    """One scheduled time of a schedule: the job it made, or why it made none."""

    schedule_id: int
    scheduled_for: datetime
    fired_at: datetime
    fired_by: str
    manual: bool
    missed: int
    job_id: JobId | None
    query_hash: str | None
    refusal_code: str | None
    refusal: str | None
