"""Who may export what, on SQLite and PostgreSQL: the catalog's access rules and bound
parameters decided in the export service for every path, losing access taking effect at once
(exports canceled along the graph's cancel edge by the operator who removed it, schedules
paused, downloads refused, the worker's own check at the claim), and an access matrix generated
over people x saved queries x paths against an independent reading of the rules."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportexport.core.access import EVERYONE, Member, query_access, rule_problems
from reportexport.core.catalog import Catalog, CatalogError, parse_catalog
from reportexport.core.parameters import ParameterError
from reportexport.core.records import AuditFilter, Firing, JobId
from reportexport.objects import ObjectStore, final_key, open_object_store
from reportexport.pipeline.export import new_export
from reportexport.runners.worker import Worker, WorkerSettings
from reportexport.services.access import AccessService, StoreMembers
from reportexport.services.errors import (
    AccessRefusedError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
)
from reportexport.services.exports import Acting, ExportService, Fairness
from reportexport.services.people import PeopleService
from reportexport.services.schedules import ScheduleLimits, ScheduleService
from reportexport.services.webhooks import WebhookService
from reportexport.store import Database
from tests.effects.receiver import Receiver, running_receiver
from tests.helpers import wait_for

OLGA = Acting(name="olga", role="operator")
ALICE = Acting(name="alice", role="user")
BOB = Acting(name="bob", role="user")

QUERIES: dict[str, Any] = {
    "orders_of_day": {
        "source": "demo",
        "title": "Orders of one day",
        "sql": "SELECT order_id, order_date FROM orders WHERE order_date = :day",
        "parameters": {"day": {"type": "date"}},
    },
    "invoices": {
        "source": "demo",
        "title": "Invoices",
        "sql": "SELECT order_id, amount FROM orders WHERE order_id < 50",
        "access": ["finance"],
    },
    "my_customers": {
        "source": "demo",
        "title": "Customers of my country",
        "sql": "SELECT customer_id, country FROM customers WHERE country = :country",
        "parameters": {"country": {"type": "string", "bind": "country"}},
    },
    "staff": {
        "source": "hr",
        "title": "Staff list",
        "sql": "SELECT id FROM typed",
    },
    "salaries": {
        "source": "hr",
        "title": "Salaries",
        "sql": "SELECT id FROM typed",
        "access": ["payroll", "finance"],
    },
}


def catalog_of(sources_dir: Path, queries: dict[str, Any] = QUERIES, **top: Any) -> Catalog:
    sources = {
        "demo": {"url": f"duckdb:///{sources_dir / 'demo.duckdb'}"},
        "hr": {"url": f"duckdb:///{sources_dir / 'typed.duckdb'}", "access": ["hr"]},
    }
    document = {"version": 1, "sources": sources, "queries": queries, **top}
    return parse_catalog(document, sources_dir / "c.toml")


@dataclass
class Parts:
    db: Database
    catalog: Catalog
    exports: ExportService
    schedules: ScheduleService
    access: AccessService
    objects: ObjectStore


def exports_for(db: Database, catalog: Catalog, objects: ObjectStore) -> ExportService:
    return ExportService(
        jobs=db.jobs, effects=db.effects, downloads=db.jobs, catalog=catalog, objects=objects,
        link_secret=b"links", fairness=Fairness(max_active=1000, max_per_window=1000),
        firings=db.schedules, members=StoreMembers(users=db.users, groups=db.groups),
        audit=db.audit,
    )  # fmt: skip


@pytest.fixture
def parts(db: Database, sources_dir: Path, tmp_path: Path) -> Parts:
    catalog = catalog_of(sources_dir)
    objects = open_object_store(f"file://{tmp_path / 'objects'}", link_secret=b"links")
    exports = exports_for(db, catalog, objects)
    schedules = ScheduleService(
        schedules=db.schedules, exports=exports, catalog=catalog,
        limits=ScheduleLimits(max_per_person=100),
    )  # fmt: skip
    access = AccessService(
        groups=db.groups, users=db.users, jobs=db.jobs, schedules=db.schedules, exports=exports,
        people=PeopleService(users=db.users),
    )  # fmt: skip
    for person in (OLGA, ALICE, BOB):
        db.users.add_user(person.name, person.role)
    for group in ("finance", "payroll", "hr"):
        access.create_group(OLGA, group)
    return Parts(db, catalog, exports, schedules, access, objects)


@pytest.fixture
def worker(parts: Parts) -> Iterator[Worker]:
    running = Worker(parts.db, parts.catalog, parts.objects, WorkerSettings(poll_seconds=0.05))
    running.start()
    yield running
    running.stop()


def names(queries: list[Any]) -> set[str]:
    return {query.name for query in queries}


# -- the catalog ---------------------------------------------------------------------------


def test_the_catalog_reads_rules_from_the_source_the_default_and_the_query(
    sources_dir: Path,
) -> None:
    catalog = catalog_of(sources_dir, access={"default": ["staff"]})
    orders = catalog.queries["orders_of_day"].access
    assert [(r.where, r.groups) for r in orders.rules] == [("access.default", ("staff",))]
    salaries = catalog.queries["salaries"].access
    assert [(r.where, r.groups) for r in salaries.rules] == [
        ("sources.hr.access", ("hr",)),
        ("queries.salaries.access", ("payroll", "finance")),
    ]
    assert catalog.queries["my_customers"].access.bound == {"country": "country"}
    assert catalog_of(sources_dir).queries["orders_of_day"].access.for_everyone


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"access": "finance"}, 'queries.invoices.access: a list of group names, or ["everyone"]'),
        ({"access": ["Finance"]}, "'Finance' is not a group name"),
        ({"acess": ["finance"]}, "queries.invoices: unknown key(s) acess"),
    ],
)
def test_a_wrong_access_rule_is_refused_by_name(
    sources_dir: Path, change: dict[str, Any], problem: str
) -> None:
    body = {k: v for k, v in QUERIES["invoices"].items() if k != "access"} | change
    with pytest.raises(CatalogError) as refused:
        catalog_of(sources_dir, {"invoices": body})
    assert any(problem in line for line in refused.value.problems), refused.value.problems


@pytest.mark.parametrize(
    ("parameter", "problem"),
    [
        ({"type": "integer", "bind": "country"}, "only string and enum parameters"),
        ({"type": "string", "bind": "Country"}, "the name of a person's attribute"),
        ({"type": "string", "bind": "country", "default": "FR"}, "takes no default"),
        ({"type": "string", "bnd": "country"}, "unknown key(s) bnd"),
    ],
)
def test_a_wrong_binding_is_refused_by_name(
    sources_dir: Path, parameter: dict[str, Any], problem: str
) -> None:
    body = dict(QUERIES["my_customers"], parameters={"country": parameter})
    with pytest.raises(CatalogError) as refused:
        catalog_of(sources_dir, {"my_customers": body})
    assert any(problem in line for line in refused.value.problems), refused.value.problems


def test_queries_check_names_rules_that_cannot_work() -> None:
    access = query_access(
        query_name="q", query_rule=(), source_name="s", source_rule=("everyone", "sales"),
        default_rule=None, bound={"country": "country"},
    )  # fmt: skip
    problems = rule_problems(access, groups=frozenset({"finance"}), attributes=frozenset())
    assert problems == [
        "sources.s.access holds everyone and sales: the groups say nothing",
        "sources.s.access: there is no group sales in the job store",
        "queries.q.access names no group: only operators may run it",
        "parameters.country.bind: nobody has the attribute country, so nobody can run it",
    ]


# -- every path asks the export service ----------------------------------------------------


def test_people_see_and_run_only_what_their_groups_allow(parts: Parts) -> None:
    exports = parts.exports
    assert names(exports.saved_queries(ALICE)) == {"orders_of_day"}
    assert names(exports.saved_queries(OLGA)) == set(QUERIES) - {"my_customers"}
    with pytest.raises(NotFoundError, match="no saved query 'invoices'"):
        exports.saved_query(ALICE, "invoices")
    with pytest.raises(InvalidInputError, match="no saved query 'invoices'") as refused:
        exports.create(ALICE, "invoices", {})
    assert refused.value.rule == "unknown"  # the same answer as for a query that does not exist
    parts.access.add_member(OLGA, "finance", "alice")
    assert names(exports.saved_queries(ALICE)) == {"orders_of_day", "invoices"}
    assert exports.create(ALICE, "invoices", {}).created
    parts.access.add_member(OLGA, "hr", "alice")  # the source's rule and the query's, both
    assert names(exports.saved_queries(ALICE)) == {"orders_of_day", "invoices", "staff", "salaries"}


def test_a_bound_parameter_comes_from_the_record_and_never_from_the_request(
    parts: Parts, worker: Worker
) -> None:
    exports = parts.exports
    assert "my_customers" not in names(exports.saved_queries(ALICE))  # no country: not runnable
    parts.access.set_attribute(OLGA, "alice", "country", "FR")
    with pytest.raises(ParameterError, match="bound to your attribute country") as refused:
        exports.create(ALICE, "my_customers", {"country": "DE"})
    assert refused.value.rule == "bound"
    job = exports.create(ALICE, "my_customers", {}).job
    assert job.parameters == {"country": "FR"}  # recorded like any parameter
    done = wait_for(
        lambda: (j := exports.job(ALICE, job.id).detail.job).finished_at and j,
        60,
        f"alice's export {job.id} to finish",
        every=0.05,
    )
    assert done.status == "succeeded"
    with exports.open_file(ALICE, job.id).stream as stream:
        lines = stream.read().decode().splitlines()
    assert lines[0] == "customer_id,country"
    assert len(lines) > 1
    assert {line.split(",")[1] for line in lines[1:]} == {"FR"}
    # A rerun takes the value from the record as it is now, not from the old job.
    parts.access.set_attribute(OLGA, "alice", "country", "DE")
    again = exports.rerun(ALICE, job.id).job
    assert again.parameters == {"country": "DE"}


def test_losing_a_group_cancels_queued_exports_pauses_schedules_and_refuses_downloads(
    parts: Parts,
) -> None:
    exports, access = parts.exports, parts.access
    access.add_member(OLGA, "finance", "alice")
    finished = _succeeded(parts, "alice", "invoices")
    queued = [exports.create(ALICE, "invoices", {}).job.id for _ in range(2)]
    mine = exports.create(ALICE, "orders_of_day", {"day": "2024-01-02"}).job.id
    schedule = parts.schedules.create(ALICE, "invoices", {}, cron="0 8 * * *", time_zone="UTC")

    withdrawn = access.remove_member(OLGA, "finance", "alice")

    assert sorted(withdrawn.canceled) == queued
    assert withdrawn.paused == (schedule.schedule.id,)
    for job_id in queued:
        job = exports.job(ALICE, job_id).detail
        assert job.job.status == "canceled"
        last = job.history[-1]
        assert (last.actor, last.person) == ("user", "olga")  # the operator who removed it
        assert "access withdrawn (alice left the group finance)" in (last.reason or "")
    assert exports.job(ALICE, mine).detail.job.status == "queued"  # another query: untouched
    paused = parts.schedules.show(ALICE, schedule.schedule.id).schedule
    assert paused.paused_at is not None
    assert "queries.invoices.access = finance does not include alice" in (paused.pause_reason or "")
    with pytest.raises(AccessRefusedError) as refused:
        exports.download(ALICE, finished)
    assert refused.value.access_rule == "queries.invoices.access"
    with pytest.raises(AccessRefusedError):
        exports.rerun(ALICE, finished)
    with pytest.raises(AccessRefusedError):
        parts.schedules.run_now(ALICE, schedule.schedule.id)
    with pytest.raises(AccessRefusedError):
        parts.schedules.resume(ALICE, schedule.schedule.id)
    # Operators still download it, and the audit says so, as it says who removed whom.
    assert exports.download(OLGA, finished).file_name
    entries = parts.db.audit.entries(AuditFilter(limit=50)).records
    said = [(e.person, e.action, e.object_id) for e in entries]
    assert ("olga", "download_file", str(finished)) in said
    assert ("olga", "remove_member", "finance") in said
    assert {("olga", "cancel_job", str(job_id)) for job_id in queued} <= set(said)


def test_a_signed_link_checks_the_owners_access_when_it_is_used(parts: Parts) -> None:
    parts.access.add_member(OLGA, "finance", "alice")
    finished = _succeeded(parts, "alice", "invoices")
    link = parts.exports.download(ALICE, finished)
    token = link.url.rsplit("/", 1)[-1]
    with parts.exports.open_link(token).stream:
        pass
    parts.access.remove_member(OLGA, "finance", "alice")
    with pytest.raises(ForbiddenError) as refused:
        parts.exports.open_link(token)
    # Whoever holds the link learns that it no longer works, not whose rule refuses it.
    assert str(refused.value.detail) == (
        "this link no longer gives the file: the export's owner may no longer download it"
    )
    assert not isinstance(refused.value, AccessRefusedError)
    assert parts.exports.owner_job_refusal(parts.db.jobs.get_job(finished).job) is not None


def test_refused_access_is_logged_and_counted_by_path_and_rule(
    parts: Parts, caplog: pytest.LogCaptureFixture
) -> None:
    """Each refusal of the export service is one log line and one count of (path, rule): a
    hidden query asked for by name, a rerun, a download; a query that does not exist is no
    refusal."""
    exports = parts.exports
    query = parts.catalog.queries["invoices"]
    old, _ = parts.db.jobs.create_job(new_export(query, {}, owner="alice"))
    caplog.set_level(logging.INFO, logger="reportexport.access")
    with pytest.raises(NotFoundError):
        exports.saved_query(ALICE, "invoices")
    with pytest.raises(NotFoundError):
        exports.saved_query(ALICE, "no-such-query")
    with pytest.raises(InvalidInputError):
        exports.create(ALICE, "invoices", {})
    with pytest.raises(InvalidInputError):
        exports.create(ALICE, "my_customers", {})  # no country: the binding refuses
    with pytest.raises(AccessRefusedError):
        exports.rerun(ALICE, old.id)
    link = parts.objects.download_url(final_key(old.id, "x.csv"), "x.csv", 60)
    with pytest.raises(ForbiddenError):
        exports.open_link(link.rsplit("/", 1)[-1])
    assert exports.refusals.counts() == {
        ("show", "group"): 1,
        ("create", "group"): 1,
        ("create", "bind"): 1,
        ("rerun", "group"): 1,
        ("link", "group"): 1,
    }
    said = [r.getMessage() for r in caplog.records if r.name == "reportexport.access"]
    assert len(said) == 5
    assert (
        "access refused (rerun, group): alice may not run 'invoices': the access rule "
        "queries.invoices.access = finance does not include alice"
    ) in said


def test_a_refused_resume_is_logged_and_counted_as_path_resume(
    parts: Parts, caplog: pytest.LogCaptureFixture
) -> None:
    parts.access.add_member(OLGA, "finance", "alice")
    made = parts.schedules.create(ALICE, "invoices", {}, cron="0 8 * * *", time_zone="UTC")
    parts.access.remove_member(OLGA, "finance", "alice")
    before = parts.exports.refusals.counts()
    caplog.set_level(logging.INFO, logger="reportexport.access")
    with pytest.raises(AccessRefusedError):
        parts.schedules.resume(ALICE, made.schedule.id)
    after = parts.exports.refusals.counts()
    assert after.get(("resume", "group"), 0) == before.get(("resume", "group"), 0) + 1
    said = [r.getMessage() for r in caplog.records if r.name == "reportexport.access"]
    assert said == [
        f"access refused (resume, group): schedule {made.schedule.id} cannot fire: the access "
        "rule queries.invoices.access = finance does not include alice"
    ]


def test_a_firing_refused_for_access_records_code_access_and_pauses_the_schedule(
    parts: Parts,
) -> None:
    """The owner lost access after the schedule was made: its firing makes no job, records
    the refusal with code `access` and the rule, and pauses the schedule with the reason."""
    schedule = due_schedule(parts, "alice", "invoices")
    firing = fire(parts, schedule)
    assert (firing.job_id, firing.refusal_code) == (None, "access")
    assert "queries.invoices.access = finance does not include alice" in (firing.refusal or "")
    paused = parts.schedules.show(ALICE, schedule).schedule
    assert paused.paused_at is not None
    assert (paused.pause_reason or "").startswith("access withdrawn: alice may not run")
    assert parts.exports.refusals.counts() == {("schedule", "group"): 1}


def test_a_firing_takes_a_bound_value_from_the_record_as_it_is_at_firing_time(
    parts: Parts,
) -> None:
    """The schedule was made while alice's country was FR; it fires after it became DE."""
    parts.access.set_attribute(OLGA, "alice", "country", "FR")
    made = parts.schedules.create(ALICE, "my_customers", {}, cron="0 8 * * *", time_zone="UTC")
    assert "country" not in made.schedule.parameters  # never kept with the schedule
    parts.access.set_attribute(OLGA, "alice", "country", "DE")
    schedule = due_schedule(parts, "alice", "my_customers")
    firing = fire(parts, schedule)
    assert firing.job_id is not None, firing.refusal
    job = parts.exports.job(ALICE, firing.job_id).detail.job
    assert (job.parameters, job.schedule_id) == ({"country": "DE"}, schedule)


def test_a_schedule_paused_because_access_was_withdrawn_is_in_the_audit(parts: Parts) -> None:
    """The pause is recorded as done by whoever withdrew the access, with the reason."""
    parts.access.add_member(OLGA, "finance", "alice")
    made = parts.schedules.create(ALICE, "invoices", {}, cron="0 8 * * *", time_zone="UTC")
    parts.access.remove_member(OLGA, "finance", "alice")
    entries = parts.db.audit.entries(AuditFilter(action="pause_schedule", limit=5)).records
    assert [(e.person, e.object_kind, e.object_id) for e in entries] == [
        ("olga", "schedule", str(made.schedule.id))
    ]
    assert "access withdrawn (alice left the group finance)" in (entries[0].detail or "")
    parts.access.suspend(OLGA, "alice", "on leave")  # nothing left to pause: no entry
    again = parts.db.audit.entries(AuditFilter(action="pause_schedule", limit=5)).records
    assert len(again) == 1


def test_deleting_a_group_withdraws_it_from_every_member(parts: Parts) -> None:
    parts.access.add_member(OLGA, "finance", "alice")
    parts.access.add_member(OLGA, "finance", "bob")
    jobs = [parts.exports.create(p, "invoices", {}).job.id for p in (ALICE, BOB)]
    withdrawn = parts.access.delete_group(OLGA, "finance")
    assert sorted(withdrawn.canceled) == sorted(jobs)
    assert "invoices" not in names(parts.exports.saved_queries(BOB))


def test_the_worker_checks_access_when_it_takes_a_job(parts: Parts) -> None:
    """A job queued a moment before its access went (here: made in the store directly, as
    the cancel of the removal had not seen it) fails at the claim and does not run."""
    query = parts.catalog.queries["invoices"]
    job, _ = parts.db.jobs.create_job(new_export(query, {}, owner="alice"))
    worker = Worker(parts.db, parts.catalog, parts.objects, WorkerSettings(poll_seconds=0.05))
    worker.start()
    try:
        done = wait_for(
            lambda: (j := parts.db.jobs.get_job(JobId(job.id)).job).finished_at and j,
            60,
            f"export {job.id} to finish",
            every=0.05,
        )
    finally:
        worker.stop()
    assert (done.status, done.error_code) == ("failed", "access_withdrawn")
    assert "queries.invoices.access = finance does not include alice" in (done.error_message or "")
    assert done.object_key is None


def test_changing_an_attribute_cancels_exports_made_with_the_old_value(parts: Parts) -> None:
    parts.access.set_attribute(OLGA, "alice", "country", "FR")
    job = parts.exports.create(ALICE, "my_customers", {}).job
    withdrawn = parts.access.set_attribute(OLGA, "alice", "country", "DE")
    assert withdrawn.canceled == (job.id,)
    assert parts.exports.create(ALICE, "my_customers", {}).job.parameters == {"country": "DE"}
    parts.access.unset_attribute(OLGA, "alice", "country")
    assert "my_customers" not in names(parts.exports.saved_queries(ALICE))


def test_only_operators_manage_groups_and_names_are_checked(parts: Parts) -> None:
    with pytest.raises(ForbiddenError):
        parts.access.create_group(ALICE, "sales")
    with pytest.raises(ForbiddenError):
        parts.access.add_member(ALICE, "finance", "alice")
    with pytest.raises(InvalidInputError, match="not everyone"):
        parts.access.create_group(OLGA, EVERYONE)
    with pytest.raises(InvalidInputError):
        parts.access.create_group(OLGA, "Sales Team")
    with pytest.raises(NotFoundError, match="no group 'sales'"):
        parts.access.add_member(OLGA, "sales", "alice")
    with pytest.raises(NotFoundError, match="no person 'carol'"):
        parts.access.add_member(OLGA, "finance", "carol")
    assert parts.access.add_member(OLGA, "finance", "alice")
    assert not parts.access.add_member(OLGA, "finance", "alice")  # once
    assert parts.access.members(OLGA, "finance") == ["alice"]


# -- the access matrix ---------------------------------------------------------------------

PEOPLE: dict[str, tuple[str, frozenset[str], dict[str, str]]] = {
    # name: (role, groups, attributes) -- every combination the rules tell apart
    "u_none": ("user", frozenset(), {}),
    "u_finance": ("user", frozenset({"finance"}), {}),
    "u_hr": ("user", frozenset({"hr"}), {}),
    "u_hr_payroll": ("user", frozenset({"hr", "payroll"}), {"country": "FR"}),
    "u_country": ("user", frozenset(), {"country": "JP"}),
    "o_none": ("operator", frozenset(), {}),
}


def expected(person: str, query: str) -> bool:
    """The rules of QUERIES read independently of core/access.py."""
    role, groups, attributes = PEOPLE[person]
    body = QUERIES[query]
    source_rule = {"demo": None, "hr": ["hr"]}[body["source"]]
    passes = all(
        role == "operator" or rule is None or bool(groups & set(rule))
        for rule in (source_rule, body.get("access"))
    )
    bound = [p["bind"] for p in body.get("parameters", {}).values() if "bind" in p]
    return passes and all(attribute in attributes for attribute in bound)


def arguments(query: str) -> dict[str, Any]:
    return {"day": "2024-01-02"} if query == "orders_of_day" else {}


PATHS = (
    "list", "show", "create", "schedule", "rerun", "download", "firing", "run_now",
    "webhook_test",
)  # fmt: skip
# Paths that do not name a saved query: allowed to everyone, and they tell nothing of any.
QUERY_FREE = ("webhook_test",)
# When the matrix's schedules fire: the scheduler's clock is this moment, not the wall's.
FIRE_AT = datetime(2024, 1, 1, 8, tzinfo=UTC)


@pytest.fixture
def matrix(parts: Parts) -> Parts:
    for name, (role, groups, attributes) in PEOPLE.items():
        parts.db.users.add_user(name, role)
        for group in groups:
            parts.access.add_member(OLGA, group, name)
        for attribute, value in attributes.items():
            parts.access.set_attribute(OLGA, name, attribute, value)
    return parts


@dataclass
class Theirs:
    """What a person of the matrix has of one saved query, made as if before any change of
    access: a job with a file, a schedule due at FIRE_AT, and a webhook endpoint."""

    job: int
    schedule: int
    endpoint: int
    receiver: Receiver


def attempt(parts: Parts, path: str, person: Acting, query: str, theirs: Theirs) -> bool:
    """Whether `person` may take `path` with `query`."""
    exports = parts.exports
    old = theirs.job
    try:
        if path == "list":
            return query in names(exports.saved_queries(person))
        if path == "show":
            return exports.saved_query(person, query).name == query
        if path == "create":
            return exports.create(person, query, arguments(query)).created
        if path == "schedule":
            made = parts.schedules.create(
                person, query, arguments(query), cron="0 8 * * *", time_zone="UTC"
            )
            return made.schedule.id > 0
        if path == "rerun":
            return exports.rerun(person, old).created
        if path == "download":
            return bool(exports.download(person, old).url)
        if path == "firing":
            return fire(parts, theirs.schedule).job_id is not None
        if path == "run_now":
            return parts.schedules.run_now(person, theirs.schedule).created
        assert path == "webhook_test"
        webhooks = WebhookService(
            endpoints=parts.db.endpoints, users=parts.db.users, audit=parts.db.audit,
            allow_private=True,
        )  # fmt: skip
        delivered = webhooks.test(person, theirs.endpoint).delivered
        body = theirs.receiver.received[-1].body
        told = [q for q, spec in QUERIES.items() if q in body or spec["title"] in body]
        return delivered and not told
    except (NotFoundError, InvalidInputError, AccessRefusedError):
        return False


def due_schedule(parts: Parts, owner: str, query: str) -> int:
    """A schedule of `query` owned by `owner`, due at FIRE_AT, made directly in the store (as
    if before any change of access)."""
    made = parts.db.schedules.create(
        owner=owner, saved_query=query, parameters=arguments(query), cron="0 8 * * *",
        time_zone="UTC", ends_at=None, next_fire_at=FIRE_AT, created_by=owner,
        max_per_owner=1000,
    )  # fmt: skip
    assert made is not None
    return made[0].id


def fire(parts: Parts, schedule_id: int) -> Firing:
    """Let the scheduler fire what is due at FIRE_AT (its clock injected); the firing of
    FIRE_AT of the schedule."""
    scheduler = ScheduleService(
        schedules=parts.db.schedules, exports=parts.exports, catalog=parts.catalog,
        clock=lambda: FIRE_AT + timedelta(seconds=30),
    )  # fmt: skip
    scheduler.fire_due()
    firings = parts.schedules.show(OLGA, schedule_id).firings
    (firing,) = [f for f in firings if f.scheduled_for == FIRE_AT and not f.manual]
    return firing


def test_the_access_matrix_every_path_allows_exactly_what_the_rules_say(matrix: Parts) -> None:
    seen: dict[tuple[str, str, str], bool] = {}
    webhooks = WebhookService(
        endpoints=matrix.db.endpoints, users=matrix.db.users, audit=matrix.db.audit,
        allow_private=True,
    )  # fmt: skip
    with running_receiver(Receiver()) as receiver:
        endpoints = {
            name: webhooks.add(Acting(name=name, role=PEOPLE[name][0]), receiver.url).id
            for name in PEOPLE
        }
        for name, query in itertools.product(PEOPLE, QUERIES):
            person = Acting(name=name, role=PEOPLE[name][0])
            theirs = Theirs(
                job=_succeeded(matrix, name, query, bound=PEOPLE[name][2]),
                schedule=due_schedule(matrix, name, query),
                endpoint=endpoints[name],
                receiver=receiver,
            )
            for path in PATHS:
                seen[(name, query, path)] = attempt(matrix, path, person, query, theirs)
    wanted = {key: key[2] in QUERY_FREE or expected(key[0], key[1]) for key in seen}
    wrong = sorted(key for key in seen if seen[key] != wanted[key])
    assert not wrong, [(key, "allowed" if seen[key] else "refused") for key in wrong]
    assert len(seen) == len(PEOPLE) * len(QUERIES) * len(PATHS)
    assert any(seen.values())
    assert not all(seen.values())


def test_a_refusal_reveals_no_query_the_person_may_not_see(matrix: Parts) -> None:
    """A query the person may not run answers as one that does not exist, on every path
    that names it; only their own job of it says which rule refused it."""
    person = Acting(name="u_none", role="user")

    def by_name(q: str) -> object:
        return matrix.exports.saved_query(person, q)

    def create(q: str) -> object:
        return matrix.exports.create(person, q, {})

    def schedule(q: str) -> object:
        return matrix.schedules.create(person, q, {}, cron="0 8 * * *", time_zone="UTC")

    for query in ("invoices", "salaries", "staff", "my_customers"):
        unknown = "no-such-query"
        for path in (by_name, create, schedule):
            with pytest.raises((NotFoundError, InvalidInputError)) as hidden:
                path(query)
            with pytest.raises((NotFoundError, InvalidInputError)) as missing:
                path(unknown)
            assert type(hidden.value) is type(missing.value)
            assert str(hidden.value).replace(query, unknown) == str(missing.value)


MEMBERSHIPS = st.fixed_dictionaries(
    {name: st.sets(st.sampled_from(["finance", "payroll", "hr"])) for name in ("alice", "bob")}
)
RULES = st.lists(st.sampled_from(["finance", "payroll", "hr", EVERYONE]), max_size=3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    groups=st.sets(st.sampled_from(["finance", "payroll", "hr", "sales"])),
    rules=st.tuples(
        st.one_of(st.none(), RULES), st.one_of(st.none(), RULES), st.one_of(st.none(), RULES)
    ),
)
def test_a_rule_admits_exactly_the_members_of_one_of_its_groups_of_each_rule(
    groups: set[str], rules: tuple[list[str] | None, list[str] | None, list[str] | None]
) -> None:
    default, source, query = rules
    access = query_access(
        query_name="q", source_name="s", bound={},
        default_rule=None if default is None else tuple(default),
        source_rule=None if source is None else tuple(source),
        query_rule=None if query is None else tuple(query),
    )  # fmt: skip
    member = Member(name="m", groups=frozenset(groups))
    first = source if source is not None else (default if default is not None else [EVERYONE])
    wanted = all(
        EVERYONE in rule or bool(set(rule) & groups) for rule in (first, query) if rule is not None
    )
    assert (access.refusal(member) is None) == wanted
    assert access.refusal(Member(name="o", is_operator=True)) is None


def allowed(groups: set[str], queries: dict[str, Any], query: str) -> bool:
    """Whether a user in `groups`, with no attribute, may run `query` of `queries` (a catalog
    of catalog_of's sources), read independently of core/access.py."""
    body = queries[query]
    source_rule = {"demo": None, "hr": ["hr"]}[body["source"]]
    passes = all(
        rule is None or EVERYONE in rule or bool(groups & set(rule))
        for rule in (source_rule, body.get("access"))
    )
    return passes and not any("bind" in p for p in body.get("parameters", {}).values())


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    memberships=MEMBERSHIPS,
    rules=st.tuples(st.one_of(st.none(), RULES), st.one_of(st.none(), RULES)),
)
def test_the_service_paths_allow_exactly_the_rules_answer_for_drawn_memberships(
    parts: Parts,
    sources_dir: Path,
    memberships: dict[str, set[str]],
    rules: tuple[list[str] | None, list[str] | None],
) -> None:
    """Over drawn memberships and drawn rules of two queries, the export service's list, show
    and create each allow exactly what the rules say, and a refused name answers as a query
    that does not exist."""
    queries = {name: dict(body) for name, body in QUERIES.items()}
    for name, rule in zip(("invoices", "staff"), rules, strict=True):
        queries[name].pop("access", None)
        if rule is not None:
            queries[name]["access"] = rule
    exports = exports_for(parts.db, catalog_of(sources_dir, queries), parts.objects)
    for name, groups in memberships.items():
        for group in ("finance", "payroll", "hr"):
            if name in parts.access.members(OLGA, group) and group not in groups:
                parts.access.remove_member(OLGA, group, name)
            elif group in groups:
                parts.access.add_member(OLGA, group, name)
    for name, groups in memberships.items():
        person = Acting(name=name, role="user")
        wanted = {query for query in queries if allowed(groups, queries, query)}
        assert names(exports.saved_queries(person)) == wanted
        for query in queries:
            if query in wanted:
                assert exports.saved_query(person, query).name == query
                assert exports.create(person, query, arguments(query)).created
                continue
            with pytest.raises(NotFoundError, match=f"^no saved query '{query}'$"):
                exports.saved_query(person, query)
            with pytest.raises(InvalidInputError, match=f"^no saved query '{query}'$") as hidden:
                exports.create(person, query, arguments(query))
            assert hidden.value.rule == "unknown"


def _succeeded(parts: Parts, owner: str, query: str, bound: dict[str, str] | None = None) -> int:
    """A succeeded job of `query` owned by `owner` with its file, made directly in the store and
    its object store (as if it ran before any change of access)."""
    saved = parts.catalog.queries[query]
    values = {p: bound[a] for p, a in saved.access.bound.items() if a in (bound or {})}
    if len(values) < len(saved.access.bound):
        values = {p: "XX" for p in saved.access.bound}
    job, _ = parts.db.jobs.create_job(
        new_export(saved, arguments(query), owner=owner, from_text=True, bound=values)
    )
    worker = Worker(parts.db, parts.catalog, parts.objects, WorkerSettings(poll_seconds=0.05))
    worker._check_access = lambda job: None  # type: ignore[method-assign]
    worker.start()
    try:
        wait_for(
            lambda: parts.db.jobs.get_job(JobId(job.id)).job.finished_at,
            60,
            f"export {job.id} to finish",
            every=0.05,
        )
    finally:
        worker.stop()
    done = parts.db.jobs.get_job(JobId(job.id)).job
    assert done.status == "succeeded", done.error_message
    return job.id


def test_suspending_someone_stops_their_token_and_ends_what_they_had_going(parts: Parts) -> None:
    _, token = parts.db.users.add_user("carol", "user")
    carol = Acting(name="carol", role="user")
    queued = parts.exports.create(carol, "orders_of_day", {"day": "2024-01-02"}).job.id
    schedule = parts.schedules.create(carol, "orders_of_day", {"day": "2024-01-02"},
                                      cron="0 8 * * *", time_zone="UTC").schedule.id  # fmt: skip
    people = PeopleService(users=parts.db.users)
    assert people.authenticate(token) is not None

    withdrawn = parts.access.suspend(OLGA, "carol", "on leave")

    assert (withdrawn.canceled, withdrawn.paused) == ((queued,), (schedule,))
    assert people.authenticate(token) is None
    history = parts.db.jobs.get_job(JobId(queued)).history[-1]
    assert (history.actor, history.person, history.reason) == (
        "user", "olga", "carol was suspended: on leave",
    )  # fmt: skip
    user = parts.db.users.user_by_name("carol")
    assert user is not None
    assert (user.suspended_by, user.suspend_reason) == ("olga", "on leave")
    with pytest.raises(NotFoundError):
        parts.access.suspend(OLGA, "carol")  # once
    with pytest.raises(ForbiddenError):
        parts.access.suspend(ALICE, "bob")
    parts.access.resume(OLGA, "carol")
    assert people.authenticate(token) is not None  # the same token, again
    said = [(r.person, r.action, r.object_id)
            for r in parts.db.audit.entries(AuditFilter(limit=10)).records]  # fmt: skip
    assert ("olga", "suspend_person", "carol") in said
    assert ("olga", "resume_person", "carol") in said


def test_a_service_account_has_a_token_and_groups_but_no_dashboard(parts: Parts) -> None:
    people = PeopleService(users=parts.db.users)
    robot, token = people.add("nightly-robot", "user", by=OLGA, service=True)
    assert robot.is_service
    assert people.authenticate(token) is not None
    parts.access.add_member(OLGA, "finance", "nightly-robot")
    assert "invoices" in names(parts.exports.saved_queries(robot))
