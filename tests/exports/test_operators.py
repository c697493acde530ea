"""The operators' services over real stores, on SQLite and PostgreSQL: every operator action is
audited in its own transaction (a person's own actions are not), bulk cancel keeps every rule of
a cancel, revoking ends sessions, the operators' reads refuse everyone else; and what the
schedule form asks of the schedule service (text values, relative dates, a last day, every
problem at once, a preview)."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time
from pathlib import Path
from typing import Any

import pytest

from reportexport.composition import Runtime
from reportexport.core.catalog import Catalog
from reportexport.core.parameters import InvalidParametersError
from reportexport.core.records import Heartbeat
from reportexport.objects import ObjectStore
from reportexport.services.errors import ConflictError, ForbiddenError, InvalidInputError
from reportexport.services.exports import Acting
from reportexport.services.operators import OperatorService
from reportexport.store import Database, Outcome
from tests.effects.receiver import Receiver, running_receiver
from tests.helpers import catalog_for, runtime_for

QUERIES: dict[str, Any] = {
    "orders_of_day": {
        "source": "demo",
        "title": "Orders of one day",
        "sql": "SELECT order_id, :share AS share FROM orders "
        "WHERE order_date = :day AND order_id > :above",
        "parameters": {
            "day": {"type": "date"},
            "above": {"type": "integer", "default": 0, "min": 0},
            "share": {"type": "number", "required": False, "max": 1},
        },
    },
}
OLGA = Acting(name="olga", role="operator")
ALICE = Acting(name="alice", role="user")


@pytest.fixture
def runtime(db: Database, sources_dir: Path, local_objects: ObjectStore) -> Runtime:
    catalog: Catalog = catalog_for(sources_dir, None, QUERIES)
    for name, role in (("alice", "user"), ("bob", "user"), ("olga", "operator")):
        db.users.add_user(name, role)
    return runtime_for(db, catalog, local_objects, webhooks_allow_private=True)


def audit(runtime: Runtime) -> list[tuple[str, str, str]]:
    page = runtime.operators.audit(OLGA, limit=100)
    return [(r.person, r.action, r.object_id) for r in page.records][::-1]


def job(runtime: Runtime, person: Acting = ALICE) -> int:
    made = runtime.exports.create(person, "orders_of_day", {"day": "2024-03-05"}, from_text=True)
    return made.job.id


def given_up(runtime: Runtime) -> int:
    db = runtime.database
    job_id = job(runtime)
    (claim,) = db.queue.claim_jobs("w1", limit=1, lease_seconds=60)
    db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="failed")])
    now = datetime.now(UTC)
    for claimed in db.effects.claim_side_effects("r", limit=10, now=now, claim_until=now):
        db.effects.retry_side_effect(
            claimed, now=now, error="HTTP 503", next_attempt_at=now, give_up=True
        )
    return job_id


def test_an_operators_cancels_and_redrive_are_audited_and_an_owners_cancel_is_not(
    runtime: Runtime,
) -> None:
    exports = runtime.exports
    own, theirs = job(runtime), job(runtime)
    exports.cancel(ALICE, own)
    exports.cancel(OLGA, theirs)
    failed = given_up(runtime)
    exports.redrive(OLGA, failed, "emit_failed_webhook")
    with pytest.raises(ConflictError):  # due again already: nothing happens, nothing is recorded
        exports.redrive(OLGA, failed, "emit_failed_webhook")
    assert audit(runtime) == [
        ("olga", "cancel_job", str(theirs)),
        ("olga", "redrive_side_effect", f"{failed}/emit_failed_webhook"),
    ]
    history = exports.job(OLGA, theirs).detail.history
    assert [(h.person, h.reason) for h in history] == [("olga", "canceled by an operator")]


def test_an_operator_redrives_one_given_up_destination_alone_and_it_is_audited(
    runtime: Runtime,
) -> None:
    db = runtime.database
    db.endpoints.add_webhook_endpoint(owner="alice", url="https://a.example/h", secret="s")
    failed = job(runtime)
    (claim,) = db.queue.claim_jobs("w1", limit=1, lease_seconds=60)
    db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="failed")])
    now = datetime.now(UTC)
    (claimed,) = db.effects.claim_side_effects("r", limit=10, now=now, claim_until=now)
    (delivery,) = db.deliveries.job_deliveries(failed)
    db.deliveries.record_delivery_attempt(
        claimed.token, delivery.id, now=now, status=550, problem="refused", delivered=False,
        next_attempt_at=now, give_up=True,
    )  # fmt: skip
    db.effects.retry_side_effect(claimed, now=now, error="x", next_attempt_at=now, give_up=True)
    exports = runtime.exports
    assert [d.id for d in exports.given_up_deliveries(OLGA)] == [delivery.id]
    with pytest.raises(ForbiddenError):
        exports.redrive_delivery(ALICE, delivery.id)
    again = exports.redrive_delivery(OLGA, delivery.id)
    assert (again.waiting, again.redrives) == (True, 1)
    with pytest.raises(ConflictError):  # due again already: nothing happens, nothing is recorded
        exports.redrive_delivery(OLGA, delivery.id)
    assert audit(runtime) == [("olga", "redrive_delivery", str(delivery.id))]
    effect = {e.effect: e for e in db.jobs.get_job(failed).side_effects}["emit_failed_webhook"]  # type: ignore[arg-type]
    assert effect.given_up_at is None


def test_an_operator_sets_a_persons_email_address_one_mailbox_only(runtime: Runtime) -> None:
    people = runtime.people
    for bad in ("alice@example.com\r\nBcc: eve@example.com", "Alice <alice@example.com>",
                "a@b@example.com", "alice@localhost", "x" * 250 + "@example.com"):  # fmt: skip
        with pytest.raises(InvalidInputError):
            people.set_email("alice", bad, by=OLGA)
    with pytest.raises(ForbiddenError):
        people.set_email("alice", "alice@example.com", by=ALICE)
    assert people.set_email("alice", "alice@example.com", by=OLGA)
    assert not people.set_email("nobody", "nobody@example.com", by=OLGA)
    found = people.get("alice")
    assert found is not None
    assert found.email == "alice@example.com"
    assert people.set_email("alice", None, by=OLGA)
    assert audit(runtime) == [
        ("olga", "set_email", "alice"),
        ("olga", "set_email", "alice"),
    ]


def test_email_domains_limit_the_addresses_an_operator_sets(
    db: Database, sources_dir: Path, local_objects: ObjectStore
) -> None:
    """With `email_domains`, an address elsewhere is refused naming the allowed domains (and
    nothing is recorded); without it, any domain is taken, as before the setting."""
    for name, role in (("alice", "user"), ("olga", "operator")):
        db.users.add_user(name, role)
    catalog = catalog_for(sources_dir, None, QUERIES)
    limited = runtime_for(db, catalog, local_objects, email_domains="Corp.example, example.org")
    with pytest.raises(InvalidInputError) as refused:
        limited.people.set_email("alice", "alice@example.com", by=OLGA)
    assert refused.value.field == "email"
    assert str(refused.value) == (
        "e-mail goes only to corp.example, example.org (email_domains), not to 'example.com'"
    )
    assert limited.people.get("alice").email is None  # type: ignore[union-attr]
    assert limited.people.set_email("alice", "alice@CORP.example", by=OLGA)
    assert limited.people.set_email("alice", None, by=OLGA)  # removing is always allowed
    anywhere = runtime_for(db, catalog, local_objects)
    assert anywhere.people.set_email("alice", "alice@example.com", by=OLGA)


def test_bulk_cancel_cancels_what_it_can_and_says_why_not_of_the_rest(runtime: Runtime) -> None:
    exports = runtime.exports
    first, second, finished = job(runtime), job(runtime), job(runtime)
    exports.cancel(ALICE, finished)
    done = exports.cancel_many(OLGA, [second, first, finished, 999_999, first])
    assert done.canceled == [first, second]
    assert done.refused == [(finished, "canceled already"), (999_999, "no such export")]
    assert [a for _, a, _ in audit(runtime)] == ["cancel_job", "cancel_job"]
    records = runtime.operators.audit(OLGA, action="cancel_job").records
    assert {r.detail for r in records} == {"one of 4 canceled together"}
    bobs = job(runtime, Acting(name="bob"))
    mine = exports.cancel_many(ALICE, [bobs])  # another person's job does not exist for her
    assert (mine.canceled, mine.refused) == ([], [(bobs, "no such export")])
    with pytest.raises(InvalidInputError):
        exports.cancel_many(OLGA, [])


def test_the_operators_reads_refuse_everyone_else(runtime: Runtime) -> None:
    for read in (
        lambda: runtime.operators.side_effects(ALICE, given_up=True),
        lambda: runtime.operators.workers(ALICE),
        lambda: runtime.operators.audit(ALICE),
        lambda: runtime.operators.overview(ALICE),
        lambda: runtime.people.page(ALICE),
        lambda: runtime.webhooks.page(ALICE),
    ):
        with pytest.raises(ForbiddenError):
            read()
    with pytest.raises(InvalidInputError, match="is not one of"):
        runtime.operators.audit(OLGA, action="delete_everything")


def test_side_effects_are_found_by_title_owner_and_id(runtime: Runtime) -> None:
    failed = given_up(runtime)
    operators = runtime.operators

    def found(**where: Any) -> list[int]:
        page = operators.side_effects(OLGA, given_up=True, **where)
        return [e.effect.job_id for e in page.effects]

    assert found() == [failed]
    assert found(search="orders day") == [failed]
    assert found(search=f"#{failed}") == [failed]
    assert found(search="products") == []
    assert found(owner="bob") == []
    (listed,) = operators.side_effects(OLGA, given_up=True).effects
    assert (listed.title, listed.owner, listed.effect.attempts) == ("Orders of one day", "alice", 1)
    assert operators.overview(OLGA).given_up == 1


def test_workers_are_marked_stale_by_the_age_of_their_heartbeat(runtime: Runtime) -> None:
    db = runtime.database
    db.heartbeats.beat(
        Heartbeat(process="h-1-worker", host="h", pid=1, kind="worker",
                  started_at=datetime.now(UTC), active_jobs=(7,))
    )  # fmt: skip
    fresh = runtime.operators.workers(OLGA).processes
    assert [(p.heartbeat.process, p.stale) for p in fresh] == [("h-1-worker", False)]
    strict = OperatorService(
        exports=runtime.exports, effects=db.effects, heartbeats=db.heartbeats, caps=db.caps,
        audit=db.audit, stale_after_seconds=-1,
    )  # fmt: skip
    assert [p.stale for p in strict.workers(OLGA).processes] == [True]
    assert strict.overview(OLGA).stale == 1


def test_processes_that_stopped_cleanly_are_stopped_not_stale(runtime: Runtime) -> None:
    """A worker and an effects runner that stop say so on their heartbeats: the operators'
    overview counts only a process that went silent (here, one that never said it stopped)."""
    db = runtime.database
    worker, runner = runtime.worker(), runtime.effects_runner()
    worker.start()
    runner.start()
    deadline = time.monotonic() + 60
    while len(db.heartbeats.heartbeats()) < 2:
        assert time.monotonic() < deadline, "no heartbeat was written"
        time.sleep(0.05)
    worker.stop(grace_seconds=0)
    runner.stop()
    db.heartbeats.beat(
        Heartbeat(process="h-9-worker", host="h", pid=9, kind="worker",
                  started_at=datetime.now(UTC))
    )  # fmt: skip
    strict = OperatorService(
        exports=runtime.exports, effects=db.effects, heartbeats=db.heartbeats, caps=db.caps,
        audit=db.audit, stale_after_seconds=-1,
    )  # fmt: skip
    seen = {p.heartbeat.process: (p.stopped, p.stale) for p in strict.workers(OLGA).processes}
    assert seen == {
        worker.heartbeat().process: (True, False),
        runner.settings.runner_id: (True, False),
        "h-9-worker": (False, True),
    }
    assert strict.overview(OLGA).stale == 1
    restarted = db.heartbeats.heartbeats()[0]  # a process that beats again is live again
    db.heartbeats.beat(restarted)
    again = {p.heartbeat.process: p.stopped for p in strict.workers(OLGA).processes}
    assert again[restarted.process] is False


def test_people_added_given_tokens_and_revoked_by_an_operator_are_audited(
    runtime: Runtime,
) -> None:
    people, sessions = runtime.people, runtime.sessions
    _, token = people.add("carol", by=OLGA)
    started = sessions.sign_in(token, client="10.0.0.1")
    assert people.revoke_token("carol", by=OLGA)
    assert sessions.user_of(started.session_id) is None
    assert people.authenticate(token) is None
    made = people.new_token("carol", by=OLGA)
    assert made is not None
    again = sessions.sign_in(made[1], client="10.0.0.1")
    assert people.revoke("carol", by=OLGA)
    assert sessions.user_of(again.session_id) is None
    assert not people.revoke("carol", by=OLGA)  # nothing happened: nothing recorded
    with pytest.raises(ForbiddenError):
        people.add("mallory", by=ALICE)
    with pytest.raises(ConflictError, match="your own token"):
        people.revoke_token("olga", by=OLGA)
    assert people.get("mallory") is None
    assert audit(runtime) == [
        ("olga", "add_person", "carol"),
        ("olga", "revoke_token", "carol"),
        ("olga", "new_token", "carol"),
        ("olga", "revoke_person", "carol"),
    ]
    listed = people.page(OLGA, search="CAR").people
    assert [(p.user.name, p.user.revoked_at is not None, p.live_sessions) for p in listed] == [
        ("carol", True, 0)
    ]


def test_an_operators_endpoint_actions_are_audited_and_a_persons_own_are_not(
    runtime: Runtime,
) -> None:
    webhooks = runtime.webhooks
    with running_receiver(Receiver()) as receiver:
        own = webhooks.add(ALICE, receiver.url)
        webhooks.rotate(ALICE, own.id)
        theirs = webhooks.add(OLGA, receiver.url, owner="bob")
        rotated = webhooks.rotate(OLGA, theirs.id, overlap_hours=0)
        assert rotated.secret != theirs.secret
        tried = webhooks.test(OLGA, theirs.id)
        assert (tried.delivered, tried.response_status) == (True, 200)
        assert webhooks.remove(OLGA, theirs.id)
    assert len(receiver.received) == 1
    assert audit(runtime) == [
        ("olga", "add_webhook_endpoint", str(theirs.id)),
        ("olga", "rotate_webhook_secret", str(theirs.id)),
        ("olga", "test_webhook_endpoint", str(theirs.id)),
        ("olga", "disable_webhook_endpoint", str(theirs.id)),
    ]
    details = [r.detail for r in runtime.operators.audit(OLGA).records]
    assert "delivered (HTTP 200)" in details
    assert "for bob" in details
    page = webhooks.page(OLGA, limit=1)
    assert [e.id for e in page.endpoints] == [theirs.id]
    assert [e.id for e in webhooks.page(OLGA, before=page.next_cursor).endpoints] == [own.id]


def test_a_schedule_from_a_form_takes_text_relative_dates_and_a_last_day(
    runtime: Runtime,
) -> None:
    schedules = runtime.schedules
    last_day = date.today() + timedelta(days=30)
    view = schedules.create(
        ALICE, "orders_of_day",
        {"day": {"relative": "yesterday"}, "above": "12", "share": "0.25"},
        cron="0 8 * * *", time_zone="Europe/Paris",
        last_day=last_day, from_text=True, every_problem=True,
    )  # fmt: skip
    schedule = view.schedule
    assert dict(schedule.parameters) == {
        "day": {"relative": "yesterday"}, "above": 12, "share": 0.25
    }  # fmt: skip
    assert schedule.ends_at is not None
    local_end = schedule.ends_at.astimezone(_paris())
    assert (local_end.date(), local_end.time()) == (last_day, clock_time(23, 59, 59, 999_000))
    assert len(view.next_times) == 5
    with pytest.raises(InvalidParametersError) as every:
        schedules.create(
            ALICE, "orders_of_day", {"day": "not a date", "above": "-1", "share": "2"},
            cron="0 8 * * *", time_zone="UTC", from_text=True, every_problem=True,
        )  # fmt: skip
    assert sorted(p.parameter for p in every.value.problems) == ["above", "day", "share"]
    with pytest.raises(InvalidInputError) as past:
        schedules.create(ALICE, "orders_of_day", {"day": {"relative": "today"}},
                         cron="0 8 * * *", time_zone="UTC", last_day=date(2020, 1, 1))  # fmt: skip
    assert past.value.field == "last_day"


def test_a_preview_says_the_cron_in_words_with_its_next_times(runtime: Runtime) -> None:
    preview = runtime.schedules.preview("0 8 * * *", "Europe/Paris")
    assert preview.description == "At 08:00 every day (Europe/Paris)"
    assert len(preview.next_times) == 5
    assert all(t.astimezone(_paris()).hour == 8 for t in preview.next_times)
    with pytest.raises(InvalidInputError) as wrong:
        runtime.schedules.preview("0 8 * *", "Europe/Paris")
    assert wrong.value.field == "cron"


def test_schedules_are_paged_newest_first(runtime: Runtime) -> None:
    made = [
        runtime.schedules.create(ALICE, "orders_of_day", {"day": "2024-03-05"},
                                 cron=f"0 {hour} * * *", time_zone="UTC").schedule.id
        for hour in (6, 7, 8)
    ]  # fmt: skip
    first = runtime.schedules.page(ALICE, limit=2)
    assert [v.schedule.id for v in first.views] == made[:0:-1]
    rest = runtime.schedules.page(OLGA, before=first.next_cursor)
    assert ([v.schedule.id for v in rest.views], rest.next_cursor) == ([made[0]], None)


def _paris() -> Any:
    from zoneinfo import ZoneInfo

    return ZoneInfo("Europe/Paris")
