"""What the operators' pages ask of the store, on SQLite and PostgreSQL: the append-only audit
written in each action's own transaction, side effects given up or not yet completed, people
with their live sessions, revoking a token or a person, endpoints page by page."""

from __future__ import annotations

from contextlib import closing
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from reportexport.core.records import AuditEntry, AuditFilter, EffectFilter
from reportexport.store import Database, Outcome, open_database
from tests.helpers import GRAPH, RawSql, new_job, rejected, service_role_url, succeeded


def entry(
    action: str = "redrive_side_effect", object_id: str = "1/emit_done_webhook"
) -> AuditEntry:
    kind = {"redrive_side_effect": "side_effect", "cancel_job": "job"}.get(action, "person")
    return AuditEntry(
        person="olga",
        action=action,
        object_kind=kind,
        object_id=object_id,  # type: ignore[arg-type]
    )


def given_up(db: Database, owner: str = "alice") -> int:
    """A succeeded job of `owner` whose webhook ran out of attempts."""
    job_id = db.jobs.create_job(new_job(owner=owner))[0].id
    lease = db.queue.claim_jobs("w1", limit=1, lease_seconds=60)[0].lease
    assert db.queue.finish_jobs([Outcome(lease=lease, to_status="succeeded")]) == [True]
    now = datetime.now(UTC)
    for claimed in db.effects.claim_side_effects("r", limit=10, now=now, claim_until=now):
        if claimed.effect.job_id == job_id and claimed.effect.effect == "emit_done_webhook":
            db.effects.retry_side_effect(
                claimed, now=now, error="HTTP 500", next_attempt_at=now, give_up=True
            )
        else:
            db.effects.complete_side_effect(claimed, now=now, note=None)
    return job_id


def audit(db: Database, **where: object) -> list[tuple[str, str, str]]:
    page = db.audit.entries(AuditFilter(**where))  # type: ignore[arg-type]
    return [(r.person, r.action, r.object_id) for r in page.records]


def test_the_audit_refuses_update_and_delete(db: Database, raw: RawSql) -> None:
    db.audit.record(entry())
    rejected(raw, "UPDATE operator_audit SET person = 'mallory'", "operator_audit is append-only")
    rejected(raw, "DELETE FROM operator_audit", "operator_audit is append-only")
    if not raw.sqlite:
        rejected(raw, "TRUNCATE operator_audit", "operator_audit is append-only")
    assert audit(db) == [("olga", "redrive_side_effect", "1/emit_done_webhook")]


def test_an_action_is_recorded_exactly_when_it_happened(db: Database) -> None:
    job_id = given_up(db)
    now = datetime.now(UTC)
    redrive = entry(object_id=f"{job_id}/emit_done_webhook")
    assert db.effects.redrive_side_effect(job_id, "emit_done_webhook", now=now, audit=redrive)
    # Not given up any more: the second re-drive changes nothing and records nothing.
    assert not db.effects.redrive_side_effect(job_id, "emit_done_webhook", now=now, audit=redrive)
    queued = db.jobs.create_job(new_job())[0].id
    db.jobs.cancel_job(queued, person="olga", audit=entry("cancel_job", str(queued)))
    with pytest.raises(Exception, match="terminal"):
        db.jobs.cancel_job(queued, person="olga", audit=entry("cancel_job", "again"))
    assert audit(db) == [
        ("olga", "cancel_job", str(queued)),
        ("olga", "redrive_side_effect", f"{job_id}/emit_done_webhook"),
    ]


def test_an_entry_about_a_new_endpoint_names_its_id(db: Database) -> None:
    added = db.endpoints.add_webhook_endpoint(
        owner=None, url="https://h.example/all", secret="whsec_a",
        audit=AuditEntry(person="olga", action="add_webhook_endpoint",
                         object_kind="webhook_endpoint"),
    )  # fmt: skip
    assert audit(db) == [("olga", "add_webhook_endpoint", str(added.id))]
    rotate = AuditEntry(person="olga", action="rotate_webhook_secret",
                        object_kind="webhook_endpoint", object_id=str(added.id))  # fmt: skip
    db.endpoints.rotate_webhook_secret(added.id, secret="whsec_b", until=datetime.now(UTC),
                                       audit=rotate)  # fmt: skip
    disable = AuditEntry(person="olga", action="disable_webhook_endpoint",
                         object_kind="webhook_endpoint", object_id=str(added.id))  # fmt: skip
    assert db.endpoints.disable_webhook_endpoint(added.id, now=datetime.now(UTC), reason="x",
                                                 audit=disable)  # fmt: skip
    assert not db.endpoints.disable_webhook_endpoint(added.id, now=datetime.now(UTC), reason="x",
                                                     audit=disable)  # fmt: skip
    with pytest.raises(LookupError):  # a disabled endpoint is not rotated, and not recorded
        db.endpoints.rotate_webhook_secret(added.id, secret="c", until=datetime.now(UTC),
                                           audit=rotate)  # fmt: skip
    assert [a for _, a, _ in audit(db)] == [
        "disable_webhook_endpoint", "rotate_webhook_secret", "add_webhook_endpoint",
    ]  # fmt: skip


def test_the_audit_pages_newest_first_and_filters(db: Database) -> None:
    for number in range(5):
        db.audit.record(entry("cancel_job" if number % 2 else "redrive_side_effect", str(number)))
    first = db.audit.entries(AuditFilter(limit=2))
    assert [r.object_id for r in first.records] == ["4", "3"]
    assert first.records[0].at >= first.records[1].at
    rest = db.audit.entries(AuditFilter(limit=10, before=first.next_cursor))
    assert [r.object_id for r in rest.records] == ["2", "1", "0"]
    assert rest.next_cursor is None
    assert [o for _, _, o in audit(db, action="cancel_job")] == ["3", "1"]
    assert audit(db, object_kind="job", object_id="1") == [("olga", "cancel_job", "1")]
    assert audit(db, person="someone else") == []


def test_side_effects_are_listed_given_up_or_not_yet_completed_with_their_job(
    db: Database,
) -> None:
    first, second = given_up(db, "alice"), given_up(db, "bob")
    waiting = succeeded(db)  # its rows are neither completed nor given up

    def listed(**where: object) -> list[tuple[int, str]]:
        page = db.effects.side_effects(EffectFilter(**where))  # type: ignore[arg-type]
        return [(e.effect.job_id, e.effect.effect) for e in page.effects]

    assert listed(given_up=True) == [(second, "emit_done_webhook"), (first, "emit_done_webhook")]
    assert listed(given_up=True, oldest_first=True) == listed(given_up=True)[::-1]
    assert listed(given_up=True, owner="bob") == [(second, "emit_done_webhook")]
    assert listed(given_up=True, job_id=first) == [(first, "emit_done_webhook")]
    assert listed(given_up=True, saved_queries=()) == []
    assert len(listed(given_up=True, saved_queries=("orders_by_day",))) == 2
    assert sorted(listed(given_up=False)) == sorted(
        (waiting, effect) for effect in ("write_csv_object", "emit_done_webhook")
    )
    page = db.effects.side_effects(EffectFilter(given_up=True, limit=1))
    (shown,) = page.effects
    assert (shown.owner, shown.saved_query, shown.title) == (
        "bob",
        "orders_by_day",
        "orders_by_day",
    )
    assert shown.effect.given_up_at is not None
    after = db.effects.side_effects(EffectFilter(given_up=True, cursor=page.next_cursor))
    assert [e.effect.job_id for e in after.effects] == [first]
    assert db.effects.side_effect_counts() == (2, 2)


def test_revoking_a_token_ends_the_sessions_and_keeps_the_person(db: Database, raw: RawSql) -> None:
    carol, token = db.users.add_user("carol", "user")
    now = datetime.now(UTC)
    for sid in ("s-1", "s-2"):
        db.sessions.start_session(sid, user_id=carol.id, client="x", expires_at=now + timedelta(1))
    revoke = AuditEntry(person="olga", action="revoke_token", object_kind="person",
                        object_id="carol")  # fmt: skip
    assert db.users.revoke_token("carol", now=now, audit=revoke)
    assert not db.users.revoke_token("carol", now=now, audit=revoke)
    assert db.users.user_by_token(token) is None
    assert db.sessions.session_user("s-1", now=now) is None
    ended = raw.scalar(
        f"SELECT count(*) FROM dashboard_sessions WHERE user_id = {carol.id} "
        "AND ended_at IS NOT NULL"
    )
    assert ended == 2
    kept = db.users.user_by_name("carol")
    assert kept is not None
    assert (kept.revoked_at, kept.token_revoked_at is not None) == (None, True)
    made = db.users.replace_token("carol")
    assert made is not None
    assert db.users.user_by_token(made[1]) is not None
    assert audit(db) == [("olga", "revoke_token", "carol")]


def test_revoking_a_person_ends_their_sessions_in_the_same_transaction(db: Database) -> None:
    dave, _ = db.users.add_user("dave", "user")
    now = datetime.now(UTC)
    db.sessions.start_session("s-d", user_id=dave.id, client="x", expires_at=now + timedelta(1))
    assert db.users.revoke_user("dave", now=now)
    assert not db.users.revoke_user("dave", now=now)
    assert db.sessions.end_session("s-d", now=now) is False  # it had ended already


def test_people_are_found_by_part_of_their_name_with_their_live_sessions(db: Database) -> None:
    for name in ("ann_a", "annxa", "bob", "Anne"):
        db.users.add_user(name, "user")
    ann = db.users.user_by_name("ann_a")
    assert ann is not None
    now = datetime.now(UTC)
    db.sessions.start_session("s-a", user_id=ann.id, client="x", expires_at=now + timedelta(1))
    db.sessions.start_session("s-old", user_id=ann.id, client="x", expires_at=now)

    def names(**where: object) -> list[str]:
        page = db.users.people_page(now=now, **where)  # type: ignore[arg-type]
        return [p.user.name for p in page.people]

    assert names(name_holds="ann") == ["ann_a", "annxa", "Anne"]
    assert names(name_holds="n_a") == ["ann_a"]  # `_` is a letter here, not a wildcard
    assert names(name_holds="ann", newest_first=True) == ["Anne", "annxa", "ann_a"]
    first = db.users.people_page(now=now, limit=2)
    assert [p.live_sessions for p in first.people] == [1, 0]
    assert names(cursor=first.next_cursor) == ["bob", "Anne"]


def test_endpoints_are_paged_newest_first(db: Database) -> None:
    made = [
        db.endpoints.add_webhook_endpoint(owner=owner, url=f"https://h.example/{n}",
                                          secret="whsec_x").id
        for n, owner in enumerate(("alice", "bob", None, "alice"))
    ]  # fmt: skip
    found, cursor = db.endpoints.webhook_endpoints_page(limit=3)
    assert [e.id for e in found] == made[::-1][:3]
    rest, none = db.endpoints.webhook_endpoints_page(before=cursor)
    assert ([e.id for e in rest], none) == ([made[0]], None)
    alice, _ = db.endpoints.webhook_endpoints_page(owner="alice")
    assert [e.id for e in alice] == [made[3], made[0]]
    only, _ = db.endpoints.webhook_endpoints_page(only_global=True)
    assert [e.id for e in only] == [made[2]]


def test_the_service_role_appends_to_the_audit_and_cannot_change_it(postgres_url: str) -> None:
    service_url = service_role_url(postgres_url)
    with closing(open_database(service_url, GRAPH)) as service:
        service.audit.record(entry())
        assert len(service.audit.entries(AuditFilter()).records) == 1
    with psycopg.connect(service_url, autocommit=True) as conn:
        for statement in (
            "UPDATE operator_audit SET person = 'x'",
            "DELETE FROM operator_audit",
            "ALTER TABLE operator_audit DISABLE TRIGGER operator_audit_append_only",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement.encode())
