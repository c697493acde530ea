"""The job store: where every status lives, enforced by the database itself.

`open_database(url, graph)` picks a driver from the URL (`sqlite:///path`,
`postgresql://...`; drivers are imported only by the backend that needs them) and gives a
`Database` made of roles, each holding the driver: `jobs` (what people do to jobs), `queue`
(what workers do), `effects` (side-effect rows), `endpoints` (webhook endpoints), `channels`
(chat channels), `deliveries` (each destination of an announcement), `users`, `groups` (groups
and people's attributes), `heartbeats`, `caps` (sources' max_concurrent), `metrics`,
`retention` (purges), `schedules`, `sessions` (the dashboard's), `audit` (what operators did)
and `schema` (upgrade, check, probe). A consumer takes the role it uses.
"""

from __future__ import annotations

from frozen_lifecycle.graph import Graph
from reportexport.core.records import (
    Claim,
    ClaimedEffect,
    ClaimedJob,
    Delivery,
    Heartbeat,
    Job,
    JobDetail,
    JobFilter,
    JobId,
    JobPage,
    Lease,
    MetricsSnapshot,
    NewJob,
    Outcome,
    OwnerLimits,
    PublishedObject,
    SideEffect,
    User,
    WebhookEndpoint,
)
from reportexport.core.settings import default
from reportexport.store.audit import OperatorAudit
from reportexport.store.caps import SourceCaps
from reportexport.store.channels import ChannelNotFoundError, ChatChannels
from reportexport.store.deliveries import Deliveries
from reportexport.store.driver import SchemaDriver
from reportexport.store.effects import EffectStore
from reportexport.store.endpoints import (
    EndpointNotFoundError,
    GlobalEndpointExistsError,
    WebhookEndpoints,
)
from reportexport.store.errors import (
    JobNotFoundError,
    LeaseBusyError,
    OwnerLimitError,
    SchemaMismatchError,
    StaleStatusError,
    StoreError,
    StoreUnavailableError,
    TransientStoreError,
    UniqueViolationError,
    UnsupportedDatabaseError,
)
from reportexport.store.groups import Groups
from reportexport.store.heartbeats import Heartbeats
from reportexport.store.jobs import JobStore
from reportexport.store.metrics import Metrics
from reportexport.store.migrator import Schema
from reportexport.store.queue import JobQueue
from reportexport.store.retention import Retention
from reportexport.store.schedules import ScheduleStore
from reportexport.store.sessions import DashboardSessions
from reportexport.store.users import UserExistsError, Users

__all__ = [
    "ChannelNotFoundError",
    "ChatChannels",
    "Claim",
    "ClaimedEffect",
    "ClaimedJob",
    "DashboardSessions",
    "Database",
    "Deliveries",
    "Delivery",
    "EffectStore",
    "EndpointNotFoundError",
    "GlobalEndpointExistsError",
    "Groups",
    "Heartbeat",
    "Heartbeats",
    "Job",
    "JobDetail",
    "JobFilter",
    "JobId",
    "JobNotFoundError",
    "JobPage",
    "JobQueue",
    "JobStore",
    "Lease",
    "LeaseBusyError",
    "Metrics",
    "MetricsSnapshot",
    "NewJob",
    "OperatorAudit",
    "Outcome",
    "OwnerLimitError",
    "OwnerLimits",
    "PublishedObject",
    "Retention",
    "ScheduleStore",
    "Schema",
    "SchemaMismatchError",
    "SideEffect",
    "SourceCaps",
    "StaleStatusError",
    "StoreError",
    "StoreUnavailableError",
    "TransientStoreError",
    "UniqueViolationError",
    "UnsupportedDatabaseError",
    "User",
    "UserExistsError",
    "Users",
    "WebhookEndpoint",
    "WebhookEndpoints",
    "open_database",
]


class Database:
    """One job store: its roles over one driver."""

    def __init__(self, driver: SchemaDriver, graph: Graph) -> None:
        self.url = driver.url
        self.driver = driver
        self.graph = graph
        self.jobs = JobStore(driver, graph)
        self.queue = JobQueue(driver, graph)
        self.effects = EffectStore(driver)
        self.endpoints = WebhookEndpoints(driver)
        self.channels = ChatChannels(driver)
        self.deliveries = Deliveries(driver)
        self.users = Users(driver)
        self.groups = Groups(driver)
        self.heartbeats = Heartbeats(driver)
        self.caps = SourceCaps(driver)
        self.metrics = Metrics(driver)
        self.retention = Retention(driver)
        self.schedules = ScheduleStore(driver)
        self.sessions = DashboardSessions(driver)
        self.audit = OperatorAudit(driver)
        self.schema = Schema(driver, graph)

    def close(self) -> None:
        self.driver.close()


def open_database(
    url: str,
    graph: Graph,
    *,
    check: bool = True,
    lock_timeout_seconds: float = default("db_lock_timeout_seconds"),
    statement_timeout_seconds: float = default("db_statement_timeout_seconds"),
    pool_size: int = default("db_pool_size"),
    dedicated: bool = False,
) -> Database:
    """Open the database at `url`; with `check`, refuse one not built from `graph`.

    `dedicated`: one connection of its own, reconnected by the first use after it broke, in
    place of a pool (PostgreSQL; what renews leases uses).

    No session waits longer than `lock_timeout_seconds` for a lock (SQLite: for the writer) or
    `statement_timeout_seconds` for a statement (PostgreSQL).
    """
    driver: SchemaDriver
    if url.startswith("sqlite:"):
        from reportexport.store.sqlite import SqliteDriver

        driver = SqliteDriver(url, lock_timeout_seconds=lock_timeout_seconds)
    elif url.startswith(("postgresql:", "postgres:")):
        from reportexport.store.postgres import PostgresDriver

        driver = PostgresDriver(
            url,
            pool_size=pool_size,
            dedicated=dedicated,
            lock_timeout_seconds=lock_timeout_seconds,
            statement_timeout_seconds=statement_timeout_seconds,
        )
    else:
        raise UnsupportedDatabaseError(
            f"unsupported database URL {url!r}: use sqlite:///path or postgresql://..."
        )
    database = Database(driver, graph)
    if check:
        try:
            database.schema.status().require_current(url)
        except BaseException:
            database.close()
            raise
    return database
