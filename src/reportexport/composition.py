"""The composition root: the one place that builds the settings, the graph and every part.

Every command builds one `Runtime` from one `Settings` and asks it for the parts it uses; each
part is built once, on first use, from the same settings and the same graph (loaded once per
process, and refused when it is not the fixture the typed names in `lifecycle` were generated
from). Entry points reach the store, the catalog and the object store only through the
services built here.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from frozen_lifecycle.graph import Graph, InvalidGraphError, load_graph
from reportexport.core import lifecycle
from reportexport.core.catalog import Catalog, CatalogError, load_catalog
from reportexport.core.fixture import packaged_fixture_path
from reportexport.core.parameters import ParameterError
from reportexport.core.records import (
    Heartbeat,
    Job,
    MetricsSnapshot,
    ProcessKind,
    Schedule,
    SourceCap,
)
from reportexport.core.settings import Settings, SettingsError
from reportexport.core.text import printable
from reportexport.objects import (
    ObjectStore,
    ObjectStoreError,
    ObjectStoreUnavailableError,
    open_object_store,
)
from reportexport.services.access import AccessService, StoreMembers
from reportexport.services.chat import ChatService
from reportexport.services.errors import InvalidInputError, ServiceError
from reportexport.services.exports import ExportService, Fairness
from reportexport.services.operators import OperatorService
from reportexport.services.people import PeopleService
from reportexport.services.schedules import ScheduleLimits, ScheduleService, pause_too_frequent
from reportexport.services.sessions import SessionService
from reportexport.services.webhooks import WebhookService
from reportexport.store import (
    Database,
    SchemaMismatchError,
    StoreError,
    open_database,
)
from reportexport.store.schema import redact

log = logging.getLogger("reportexport")

# How often a worker or serve process looks for due schedules.
SCHEDULER_POLL_SECONDS = 1.0

if TYPE_CHECKING:
    import httpx
    from fastapi import FastAPI

    from reportexport.mail.smtp import SmtpServer
    from reportexport.runners.effects.runner import EffectsRunner
    from reportexport.runners.sweeper import SweepReport
    from reportexport.runners.worker import Worker
    from reportexport.services.company_sign_in import CompanySignIn


class SetupError(Exception):
    """The configuration, catalog, fixture or database does not let the command start.

    `problems` lists each defect; `exit_code` is 2 for what the operator must fix in the
    setup, 1 for what is unavailable right now (a database that does not answer).
    """

    def __init__(self, summary: str, problems: list[str] | None = None, exit_code: int = 2):
        super().__init__(summary)
        self.summary = summary
        self.problems = problems or []
        self.exit_code = exit_code


def load_settings(
    command_line: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """The process's settings: the command line over the environment over the file."""
    given = dict(command_line or {})
    config_file = given.pop("config", None)
    try:
        return Settings.load(
            command_line=given,
            environ=os.environ if environ is None else environ,
            config_file=config_file,
        )
    except SettingsError as exc:
        raise SetupError(f"configuration: {exc}") from None


def packaged_graph(path: Path | None = None) -> Graph:
    """The fixture this program was built from (or the `graph` setting's, which must be the
    same graph); another one is refused, naming the fix."""
    try:
        graph = load_graph(path if path and path != Path() else packaged_fixture_path())
    except InvalidGraphError as exc:
        raise SetupError(f"{exc.source}: invalid job status graph", list(exc.defects)) from None
    if graph.fingerprint != lifecycle.FINGERPRINT:
        raise SetupError(
            f"{graph.source} is not the job status graph this program was generated from "
            f"(fingerprint {graph.fingerprint[:12]}, expected {lifecycle.FINGERPRINT[:12]}): "
            "run `reportexport generate` and reinstall, or leave the `graph` setting unset"
        )
    return graph


@dataclass(frozen=True, kw_only=True)
class FirstPerson:
    name: str
    role: str
    token: str


class Runtime:
    """Every part of the service, built from one `Settings` on first use."""

    def __init__(
        self,
        settings: Settings,
        *,
        graph: Graph | None = None,
        database: Database | None = None,
        catalog: Catalog | None = None,
        objects: ObjectStore | None = None,
        builds_store: bool = True,
    ) -> None:
        """`builds_store`: a SQLite job store that does not exist yet may be made (the
        commands that build a home); otherwise its absence is a SetupError that says so."""
        self.settings = settings
        self.builds_store = builds_store
        self._given_graph = graph
        self._given_database = database
        self._given_catalog = catalog
        self._given_objects = objects
        self._opened: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    # -- the parts ---------------------------------------------------------------------------------

    @functools.cached_property
    def graph(self) -> Graph:
        return self._given_graph or packaged_graph(self.settings.graph)

    @functools.cached_property
    def database(self) -> Database:
        """The job store, current with the migrations and the graph (the embedded default
        upgrades itself; a shared database is upgraded on purpose with `db upgrade`)."""
        if self._given_database is not None:
            return self._given_database
        settings = self.settings
        try:
            if settings.uses_embedded_database:
                database = self._open_database(check=False)
                database.schema.upgrade()
                self.pause_too_frequent_schedules(database)
            else:
                database = self._open_database()
        except SchemaMismatchError as exc:  # for the operator to fix: exit 2
            raise SetupError(str(exc)) from None
        except StoreError as exc:
            raise SetupError(str(exc), exit_code=1) from None
        return database

    def _open_database(
        self, *, check: bool = True, pool_size: int | None = None, dedicated: bool = False
    ) -> Database:
        settings = self.settings
        graph = self.graph  # a program built from another fixture says so first
        if not self.builds_store:
            self._require_sqlite_file()
        database = open_database(
            settings.database_url,
            graph,
            check=check,
            pool_size=pool_size or settings.db_pool_size,
            dedicated=dedicated,
            lock_timeout_seconds=settings.db_lock_timeout_seconds,
            statement_timeout_seconds=settings.db_statement_timeout_seconds,
        )
        self._opened.append(database.close)
        return database

    def _require_sqlite_file(self) -> None:
        """A command that does not build a home finds no SQLite file here: it says where it
        looked and how to make or name one, and creates nothing (SQLite would make an empty
        file, and the command would then blame what that file lacks)."""
        settings = self.settings
        if not settings.database_url.startswith("sqlite:///"):
            return
        path = Path(settings.database_url.removeprefix("sqlite:///"))
        if path.exists():
            return
        if settings.uses_embedded_database:
            missing = [f"no job store ({path})"]
            if not settings.catalog.exists():
                missing.append(f"no catalog ({settings.catalog})")
            raise SetupError(
                f"no reportexport home here: {settings.home} has {' and '.join(missing)}. "
                "Make one with `reportexport demo` (or `./scripts/run`), or point at yours with "
                "$REPORTEXPORT_HOME (or --database and --catalog)"
            )
        raise SetupError(  # as `db check` says of a store without the schema: exit 1
            f"no job store at {path}: make it with `reportexport db upgrade --database "
            f"{settings.database_url}`, or name the right file",
            exit_code=1,
        )

    def pause_too_frequent_schedules(self, database: Database) -> list[tuple[Schedule, str]]:
        """After an upgrade: pause (with the reason) each schedule that fires more often than
        the `min_schedule_period_seconds` setting allows; each one paused and why."""
        minimum = timedelta(seconds=self.settings.min_schedule_period_seconds)
        return pause_too_frequent(database.schedules, minimum, datetime.now(UTC))

    @property
    def database_label(self) -> str:
        """The job store's URL without its password, for messages."""
        return redact(self.settings.database_url)

    def unchecked_database(self) -> Database:
        """The job store as it is, current or not: for `db upgrade` and `db check`."""
        try:
            return self._open_database(check=False)
        except StoreError as exc:
            raise SetupError(str(exc), exit_code=1) from None

    @functools.cached_property
    def catalog(self) -> Catalog:
        if self._given_catalog is not None:
            return self._given_catalog
        path = self.settings.catalog
        try:
            return load_catalog(path)
        except FileNotFoundError:
            raise SetupError(
                f"no catalog at {path}: set $REPORTEXPORT_CATALOG or --catalog, "
                "or run `reportexport demo`"
            ) from None
        except CatalogError as exc:
            text = path.read_text(encoding="utf-8", errors="replace")
            problems = [f"{_place_of(path, text, problem)}: {problem}" for problem in exc.problems]
            raise SetupError(f"{exc.path}: the catalog has problems", problems) from None

    @functools.cached_property
    def objects(self) -> ObjectStore:
        if self._given_objects is not None:
            return self._given_objects
        url = self.settings.objects_url
        try:
            objects = open_object_store(url, link_secret=self.link_secret)
        except (ValueError, OSError) as exc:
            raise SetupError(f"object store {url}: {exc}") from None
        self._check_owner(objects)
        return objects

    def _check_owner(self, objects: ObjectStore) -> None:
        """An object store belongs to one job store: another's files would be swept as
        orphans, and its job ids collide with ours."""
        store_id = self.database.schema.status().store_id
        if store_id is None:
            return
        try:
            mark = objects.claim(store_id)
        except ObjectStoreUnavailableError as exc:  # an outage: the worker paces it
            log.warning("could not check who owns the object store: %s", exc)
            return
        if mark != store_id:
            raise SetupError(
                f"the object store {self.settings.objects_url} belongs to another job store "
                f"({mark[:12]}), not to {self.database_label} ({store_id[:12]}): give each job "
                "store its own objects_url"
            )

    @functools.cached_property
    def link_secret(self) -> bytes:
        """The setting, else a random secret kept (mode 0600) in the data directory."""
        if self.settings.link_secret:
            return self.settings.link_secret.encode()
        path = self.settings.home / "link-secret"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):  # another process made it first
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as handle:
                    handle.write(secrets.token_urlsafe(32))
        return path.read_text().strip().encode()

    @functools.cached_property
    def exports(self) -> ExportService:
        settings = self.settings
        return ExportService(
            jobs=self.database.jobs,
            effects=self.database.effects,
            deliveries=self.database.deliveries,
            downloads=self.database.jobs,
            firings=self.database.schedules,
            members=StoreMembers(users=self.database.users, groups=self.database.groups),
            audit=self.database.audit,
            catalog=self.catalog,
            objects=self.objects,
            link_secret=self.link_secret,
            link_seconds=settings.link_seconds,
            email_domains=settings.email_domain_list,
            fairness=Fairness(
                max_active=settings.max_active_exports,
                max_per_window=settings.max_exports_per_minute,
            ),
        )

    @functools.cached_property
    def webhooks(self) -> WebhookService:
        return WebhookService(
            endpoints=self.database.endpoints,
            users=self.database.users,
            audit=self.database.audit,
            allow_private=self.settings.webhooks_allow_private,
        )

    @functools.cached_property
    def chat(self) -> ChatService:
        return ChatService(
            channels=self.database.channels,
            users=self.database.users,
            chat_hosts=self.settings.chat_host_list,
            allow_private=self.settings.webhooks_allow_private,
        )

    @functools.cached_property
    def operators(self) -> OperatorService:
        database = self.database
        return OperatorService(
            exports=self.exports,
            effects=database.effects,
            heartbeats=database.heartbeats,
            caps=database.caps,
            audit=database.audit,
        )

    @functools.cached_property
    def access(self) -> AccessService:
        database = self.database
        return AccessService(
            groups=database.groups,
            users=database.users,
            jobs=database.jobs,
            schedules=database.schedules,
            exports=self.exports,
            people=self.people,
        )

    @functools.cached_property
    def people(self) -> PeopleService:
        return PeopleService(
            users=self.database.users,
            email_domains=self.settings.email_domain_list,
            link_secret=self.link_secret,
            recipients=self.database.schedules,
        )

    @functools.cached_property
    def sessions(self) -> SessionService:
        settings = self.settings
        company = self.company_sign_in
        return SessionService(
            sessions=self.database.sessions,
            people=self.people,
            lifetime=timedelta(hours=settings.session_hours),
            failures_per_minute=settings.sign_in_failures_per_minute,
            still_in=company.still_in if company is not None else None,
        )

    @functools.cached_property
    def company_sign_in(self) -> CompanySignIn | None:
        """Sign-in through the identity provider, when the settings name one."""
        settings = self.settings
        if not settings.oidc_issuer:
            return None
        from reportexport.identity.provider import OpenIDProvider, ProviderSettings
        from reportexport.services.company_sign_in import (
            ClaimMapping,
            CompanySignIn,
            parse_pairs,
        )

        if not settings.oidc_client_id:
            raise SetupError("oidc_issuer is set: oidc_client_id must be too")
        try:
            claims = ClaimMapping(
                name_claim=settings.oidc_name_claim,
                groups_claim=settings.oidc_groups_claim,
                group_map=parse_pairs(settings.oidc_group_map, setting="oidc_group_map") or None,
                attribute_claims=parse_pairs(
                    settings.oidc_attribute_claims, setting="oidc_attribute_claims"
                ),
            )
            provider = OpenIDProvider(
                ProviderSettings(
                    issuer=settings.oidc_issuer,
                    client_id=settings.oidc_client_id,
                    client_secret=settings.oidc_client_secret,
                    redirect_uri=settings.public_url.rstrip("/") + "/sign-in/company/callback",
                )
            )
            return CompanySignIn(
                provider=provider,
                users=self.database.users,
                groups=self.database.groups,
                sessions=self.database.sessions,
                access=self.access,
                claims=claims,
                lifetime=timedelta(hours=settings.session_hours),
                recheck=timedelta(minutes=settings.oidc_recheck_minutes),
                refusals=self.exports.refusals,
            )
        except ValueError as exc:
            raise SetupError(str(exc)) from None

    def worker(
        self, *, kind: ProcessKind = "worker", restart_loops: bool = True, beats: bool = True
    ) -> Worker:
        """A worker whose leases are renewed on a connection of their own; without `beats`
        (a short-lived one) it writes no heartbeat."""
        from reportexport.runners.worker import Worker, WorkerSettings

        settings = self.settings
        database = self.database
        if self._given_database is None:
            lease_queue = self._open_database(dedicated=True).queue
        else:
            lease_queue = database.queue
        return Worker(
            database,
            self.catalog,
            self.objects,
            WorkerSettings(
                kind=kind,
                concurrency=settings.concurrency,
                lease_seconds=settings.lease_seconds,
                retention_seconds=settings.retention_seconds,
                failure_limit=settings.pause_after_failures,
                beats=beats,
            ),
            lease_queue=lease_queue,
            restart_loops=restart_loops,
            also=[("schedules", self._scheduler_step)] if settings.run_schedules else [],
        )

    def _scheduler_step(self) -> float:
        self.schedules.fire_due()
        return SCHEDULER_POLL_SECONDS

    @functools.cached_property
    def schedules(self) -> ScheduleService:
        settings = self.settings
        return ScheduleService(
            schedules=self.database.schedules,
            exports=self.exports,
            catalog=self.catalog,
            limits=ScheduleLimits(
                max_per_person=settings.max_schedules,
                min_period_seconds=settings.min_schedule_period_seconds,
            ),
            process=f"{socket.gethostname()}-{os.getpid()}",
            channels=self.database.channels,
        )

    def _recipient_refusal(self) -> Callable[[str, Job, str], str | None]:
        """How the effects runner asks whether a schedule's recipient may be sent an export:
        the export service's rules, which read the catalog. An effects process without a
        catalog still announces to owners, webhooks and chat; each recipient's e-mail is given
        up with the reason (an operator re-drives it once the catalog is set)."""
        try:
            return self.exports.recipient_job_refusal
        except SetupError as exc:
            reason = f"a recipient's access cannot be checked by this process: {exc}"
            return lambda person, job, address: reason

    def _owner_refusal(self) -> Callable[[Job], str | None]:
        """How the effects runner asks whether a job's owner may still download its file (what
        an outside address is sent): the export service's rules, which read the catalog. An
        effects process without a catalog gives those e-mails up with the reason."""
        try:
            return self.exports.owner_job_refusal
        except SetupError as exc:
            reason = f"the owner's access cannot be checked by this process: {exc}"
            return lambda job: reason

    def effects_runner(self, *, restart_loops: bool = True) -> EffectsRunner:
        from reportexport.runners.effects.backoff import RetryPolicy
        from reportexport.runners.effects.handlers import Context
        from reportexport.runners.effects.runner import EffectsRunner, RunnerSettings

        settings = self.settings
        context = Context(
            store=self.database.endpoints,
            deliveries=self.database.deliveries,
            objects=self.objects,
            client=self._http_client(),
            allow_private=settings.webhooks_allow_private,
            public_url=settings.public_url,
            link_seconds=settings.link_seconds,
            mail=self.smtp_server(),
            email_domains=settings.email_domain_list,
            email_daily_cap=settings.email_daily_cap,
            channels=self.database.channels,
            chat_hosts=settings.chat_host_list,
            users=self.database.users,
            link_secret=self.link_secret,
            recipient_refusal=self._recipient_refusal(),
            schedule_address=self.database.schedules.address,
            owner_refusal=self._owner_refusal(),
        )
        try:
            return EffectsRunner(
                self.database,
                context,
                self.graph,
                RunnerSettings(
                    batch=settings.effects_batch,
                    claim_seconds=settings.effects_claim_seconds,
                    policy=RetryPolicy(max_attempts=settings.effects_max_attempts),
                ),
                restart_loops=restart_loops,
            )
        except RuntimeError as exc:  # a handler missing for a fixture effect, or the reverse
            raise SetupError(str(exc)) from None

    def smtp_server(self) -> SmtpServer | None:
        """Where announcements by e-mail go out; None when `smtp_host` is empty."""
        from reportexport.mail.smtp import SmtpServer

        settings = self.settings
        if not settings.smtp_host:
            return None
        try:
            return SmtpServer(
                host=settings.smtp_host,
                port=settings.smtp_port,
                security=settings.smtp_security,
                user=settings.smtp_user,
                password=settings.smtp_password,
                sender=settings.smtp_from,
                timeout_seconds=settings.smtp_timeout_seconds,
            )
        except ValueError as exc:
            raise SetupError(str(exc)) from None

    def app(self, *, troubles: Callable[[], list[str]] = list) -> FastAPI:
        """The HTTP application; `troubles` names what of this process is failing right now
        (a loop of `serve`'s worker or effects runner, paused claims), for /readyz."""
        from reportexport.web.app import create_app
        from reportexport.web.deps import AppParts, WebSettings

        settings = self.settings
        return create_app(
            AppParts(
                exports=self.exports,
                webhooks=self.webhooks,
                chat=self.chat,
                people=self.people,
                schedules=self.schedules,
                sessions=self.sessions,
                operators=self.operators,
                access=self.access,
                company=self.company_sign_in,
                web=WebSettings(
                    max_event_streams=settings.max_event_streams,
                    trust_forwarded_headers=settings.trust_forwarded_headers,
                ),
                graph=self.graph,
                ready=self.ready,
                troubles=troubles,
                metrics=self.metrics,
                heartbeats=self.heartbeats,
            )
        )

    # -- what commands ask of several parts --------------------------------------------------------

    def ready(self) -> bool:
        """The job store answers and is current with the migrations and the graph."""
        try:
            return self.database.schema.status().current
        except Exception:
            return False

    def metrics(self) -> MetricsSnapshot:
        return self.database.metrics.metrics_snapshot()

    def heartbeats(self) -> list[Heartbeat]:
        """Every process's last heartbeat (workers drop those of processes gone a day)."""
        return self.database.heartbeats.heartbeats()

    def source_caps(self) -> list[SourceCap]:
        """Each source's max_concurrent as the database holds it, and its slots taken."""
        return self.database.caps.caps()

    def first_people(self) -> list[FirstPerson]:
        """A first operator and a first user on a store without people; tokens shown once."""
        first = {"operator": "operator"}
        first.setdefault(self.settings.owner, "user")
        made = self.database.users.add_first_users(list(first.items()))
        return [FirstPerson(name=user.name, role=user.role, token=token) for user, token in made]

    def sweep(self, *, dry_run: bool) -> SweepReport:
        from reportexport.runners.sweeper import sweep

        return sweep(self.database.jobs, self.objects, dry_run=dry_run)

    def check_catalog(self) -> list[str]:
        """Each saved query described against its source: what cannot run, with its place."""
        from reportexport.pipeline.catalog_check import check_queries

        return check_queries(self.catalog)

    def check_access(self) -> list[str]:
        """Each saved query's access rules that cannot work, with its place: a rule naming no
        group, or a group or attribute the job store does not know (when it answers)."""
        from reportexport.core.access import rule_problems

        groups: frozenset[str] | None
        attributes: frozenset[str] | None
        try:
            groups, attributes = self.access.known_names()
        except (SetupError, StoreError):  # no job store to ask: the rules alone are checked
            groups = attributes = None
        problems = []
        for name, query in self.catalog.queries.items():
            for problem in rule_problems(query.access, groups=groups, attributes=attributes):
                problems.append(f"{name}: {problem}")
        return problems

    def _http_client(self) -> httpx.Client:
        import httpx

        client = httpx.Client(timeout=10.0, follow_redirects=False)
        self._opened.append(client.close)
        return client

    def close(self) -> None:
        with self._lock:
            opened, self._opened = self._opened, []
        for close in reversed(opened):
            with contextlib.suppress(Exception):
                close()


@contextlib.contextmanager
def running(settings: Settings, **parts: Any) -> Iterator[Runtime]:
    runtime = Runtime(settings, **parts)
    try:
        yield runtime
    finally:
        runtime.close()


def describe_failure(exc: BaseException) -> str | None:
    """A one-line message for a failure a command should report rather than show as a
    traceback (the database went away, a service refused), or None."""
    if isinstance(exc, ServiceError | StoreError | ObjectStoreError | ParameterError):
        return printable(str(exc))
    return None


def refused_input(exc: BaseException) -> bool:
    """Whether the person's input was refused (exit 2) rather than something failing (1)."""
    return isinstance(exc, InvalidInputError | ParameterError)


def _place_of(path: Path, text: str, problem: str) -> str:
    """`file:line` of the catalog entry a problem names (`queries.x.sql: ...`)."""
    from reportexport.pipeline.catalog_check import place

    dotted = problem.split(":", 1)[0].split(" ", 1)[0]
    parts = dotted.split(".")
    entry = ".".join(parts[:2]) if parts[0] in ("queries", "sources") and len(parts) > 1 else ""
    return place(path, text, entry) if entry else f"{path}:1"


def demo_paths(settings: Settings) -> tuple[Path, Path]:
    """Where `reportexport demo` puts its DuckDB file and its catalog."""
    return settings.home / "demo.duckdb", settings.catalog
