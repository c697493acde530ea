"""The short fault run: every fault at least once, with fixed seeds, and no invariant broken.

Real processes (`serve`, workers, effects runners), a PostgreSQL cluster of the suite's own
(restarted and stopped by the faults), a local folder and moto's S3 server; see `suite.py`.
`./scripts/faults --runs 200` is the full run.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest

from reportexport.store import Outcome, open_database
from tests.faults.infra import Mail
from tests.faults.invariants import (
    Facts,
    StoredObject,
    check_all,
    digest_and_rows,
    load_fixture,
)
from tests.faults.suite import (
    BY_NAME,
    FAULT_NAMES,
    LOCAL,
    SHORT_PLANS,
    MissedError,
    Plan,
    Run,
    RunResult,
    is_finish,
    longest_outage,
    plan_runs,
    report,
    run_plans,
)
from tests.helpers import GRAPH, new_job, poll


def test_the_short_run_covers_every_fault() -> None:
    covered = {name for plan in SHORT_PLANS for name in plan.faults}
    assert covered == set(FAULT_NAMES)


def test_every_fault_keeps_every_invariant(tmp_path: Path) -> None:
    results = run_plans(SHORT_PLANS, directory=tmp_path, rows=300_000)
    if results is None:
        message = "initdb/pg_ctl NOT FOUND: the fault suite cannot run"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (a failure under CI=true)")
        pytest.skip(message)
    assert [r.plan for r in results] == SHORT_PLANS
    summary = report(results, sum(r.seconds for r in results))
    assert not [v for r in results for v in r.violations], summary


# -- the checks themselves, on facts made by hand --------------------------------------------------


def job(job_id: int, status: str, **extra: object) -> dict[str, object]:
    return {
        "id": job_id,
        "status": status,
        "error_code": None,
        "error_message": None,
        "object_key": None,
        "object_bytes": None,
        "object_sha256": None,
        "object_rows": None,
        "lease_owner": "w1",
        **extra,
    }


def step(frm: str, to: str, actor: str, **extra: object) -> dict[str, object]:
    who = {"worker": "w1"} if actor == "worker" else {"person": "demo"}
    return {
        "from_status": frm,
        "to_status": to,
        "actor": actor,
        "reason": None,
        "worker": None,
        "person": None,
        **who,
        **extra,
    }


def effect(name: str, status: str, **extra: object) -> dict[str, object]:
    return {
        "effect": name,
        "status": status,
        "completed_at": "now",
        "given_up_at": None,
        "attempts": 1,
        "last_error": None,
        **extra,
    }


def facts_of(**given: object) -> Facts:
    base: dict[str, object] = {
        "jobs": {},
        "history": {},
        "side_effects": {},
        "deliveries": [],
        "endpoints": {},
        "received": [],
        "objects": [],
    }
    return Facts(**{**base, **given})  # type: ignore[arg-type]


def invariants_broken(facts: Facts) -> set[str]:
    return {v.invariant for v in check_all(facts, load_fixture())}


def test_a_clean_failed_job_breaks_nothing() -> None:
    facts = facts_of(
        jobs={1: job(1, "failed", error_code="query_error")},
        history={1: [step("queued", "running", "worker"), step("running", "failed", "worker")]},
        side_effects={1: [effect("emit_failed_webhook", "failed")]},
    )
    assert invariants_broken(facts) == set()


def test_a_job_ended_by_a_worker_that_did_not_claim_it_is_caught() -> None:
    facts = facts_of(
        jobs={1: job(1, "failed", error_code="query_error")},
        history={
            1: [
                step("queued", "running", "worker"),
                step("running", "failed", "worker", worker="w2"),
            ]
        },
        side_effects={1: [effect("emit_failed_webhook", "failed")]},
    )
    assert invariants_broken(facts) == {"history"}


def test_an_object_left_by_a_reaped_job_is_caught() -> None:
    reaped = [
        step("queued", "running", "worker"),
        step("running", "failed", "worker", worker="w2", reason="lease_expired"),
    ]
    left = StoredObject("exports/1/a.csv", 3)
    facts = facts_of(
        jobs={1: job(1, "failed", error_code="lease_expired")},
        history={1: reaped},
        side_effects={1: [effect("emit_failed_webhook", "failed")]},
        object_of_job={1: [left]},
        downloads={1: "abc"},
    )
    assert invariants_broken(facts) == {"swept", "stale_worker", "download"}


def test_a_side_effect_neither_done_nor_given_up_is_caught() -> None:
    facts = facts_of(
        jobs={1: job(1, "canceled")},
        history={1: [step("queued", "canceled", "user")]},
        side_effects={1: [effect("delete_temp_object", "canceled", completed_at=None)]},
    )
    assert invariants_broken(facts) == {"side_effects"}


def mailed_job(**delivery: object) -> dict[str, object]:
    """Facts of a failed job announced to one address, with that delivery's row as given."""
    row = {"job_id": 1, "effect": "emit_failed_webhook", "address": "user@example.com",
           "delivered_at": "now", "given_up_at": None, "attempts": 1, "last_error": None,
           **delivery}  # fmt: skip
    return {
        "jobs": {1: job(1, "failed", error_code="query_error")},
        "history": {1: [step("queued", "running", "worker"), step("running", "failed", "worker")]},
        "side_effects": {1: [effect("emit_failed_webhook", "failed")]},
        "mail_deliveries": [row],
    }


def mail(message_id: str, subject: str = "Orders — failed") -> Mail:
    return Mail("User@example.com", message_id, subject)


ID_1 = "<reportexport.1.emit_failed_webhook.0123456789abcdef@example.com>"


def test_an_email_sent_twice_with_one_message_id_breaks_nothing() -> None:
    facts = facts_of(**mailed_job(), mails=[mail(ID_1), mail(ID_1)])
    assert invariants_broken(facts) == set()


@pytest.mark.parametrize(
    ("delivery", "mails"),
    [
        ({}, []),  # recorded as delivered, never received
        ({"delivered_at": None, "given_up_at": "now", "attempts": 6}, []),  # lost
        ({}, [mail(ID_1), mail(ID_1.replace("0123", "9999"))]),  # a copy with another id
        ({}, [mail(ID_1), mail(ID_1, subject="Orders — ready")]),  # one id, two messages
        ({}, [mail(ID_1), mail("<a-made-up-id@example.com>")]),  # an id naming no job
    ],
)
def test_an_email_lost_or_resent_under_another_id_is_caught(
    delivery: dict[str, object], mails: list[Mail]
) -> None:
    facts = facts_of(**mailed_job(**delivery), mails=mails)
    assert invariants_broken(facts) == {"mail"}


def test_rows_are_counted_as_csv_records_not_lines() -> None:
    data = b'a,b\n1,"two\nlines"\n3,x\n'
    sha, rows = digest_and_rows(data, {"csv": {"delimiter": ",", "gzip": False}})
    assert rows == 2
    assert len(sha) == 64


def test_a_job_the_watchdog_saw_stuck_is_caught() -> None:
    facts = facts_of(
        stuck=["job 3 running 25 s past its lease (of w1), neither renewed nor reaped"]
    )
    assert invariants_broken(facts) == {"nothing_stuck"}


def test_a_worker_that_neither_asks_for_work_nor_says_why_is_caught() -> None:
    facts = facts_of(not_claiming=["worker1 (pid 7): last asked for work 80 s ago"])
    assert invariants_broken(facts) == {"claims_again"}


def test_each_outage_may_fail_a_pause_s_budget_of_jobs_per_worker() -> None:
    """Three outages of one flaky store with pause_after_failures 1: three failed jobs of one
    worker are within the budget, four are not."""
    failed = {
        n: job(n, "failed", error_code="storage_unavailable", lease_owner="w1") for n in range(1, 5)
    }
    history = {
        n: [step("queued", "running", "worker"), step("running", "failed", "worker")]
        for n in failed
    }
    effects = {n: [effect("emit_failed_webhook", "failed")] for n in failed}
    three = {n: failed[n] for n in (1, 2, 3)}
    within = facts_of(
        jobs=three, history=history, side_effects=effects, store_outages=3, pause_limit=1
    )
    assert invariants_broken(within) == set()
    over = facts_of(
        jobs=failed, history=history, side_effects=effects, store_outages=3, pause_limit=1
    )
    assert invariants_broken(over) == {"paced_failures"}


def test_every_planned_run_pairs_faults_its_stores_can_take() -> None:
    """A run's faults all fit its object store and its job store (no PostgreSQL restart on a
    SQLite run), and both kinds of job store and both pause budgets are drawn."""
    plans = plan_runs(200, seed=7)
    for plan in [*plans, *SHORT_PLANS]:
        for name in plan.faults:
            fault = BY_NAME[name]
            assert fault.store in (None, plan.store), plan
            assert fault.database in (None, plan.database), plan
    assert {p.database for p in plans} == {"postgres", "sqlite"}
    assert {p.pause_after for p in plans} == {1, 3}


def reaped_from(worker: str) -> list[dict[str, object]]:
    return [
        step("queued", "running", "worker", worker=worker),
        step("running", "failed", "worker", worker="w2", reason="lease_expired"),
    ]


def test_an_export_reaped_from_a_worker_alive_all_along_is_caught() -> None:
    reaped = {
        "jobs": {1: job(1, "failed", error_code="lease_expired", lease_owner="w1")},
        "history": {1: reaped_from("w1")},
        "side_effects": {1: [effect("emit_failed_webhook", "failed")]},
    }
    assert invariants_broken(facts_of(**reaped, undisturbed={"w1"}, longest_outage=7.0)) == {
        "kept_leases"
    }
    # Not when the worker was killed or frozen, nor after an outage as long as the grace.
    assert invariants_broken(facts_of(**reaped, undisturbed={"w2"}, longest_outage=7.0)) == set()
    assert invariants_broken(facts_of(**reaped, undisturbed={"w1"}, longest_outage=9.5)) == set()


def test_outages_close_together_count_as_one() -> None:
    assert longest_outage([]) == 0.0
    assert longest_outage([(10.0, 13.0), (14.0, 20.0)]) == 10.0
    assert longest_outage([(10.0, 13.0), (16.0, 20.0)]) == 4.0
    assert longest_outage([(16.0, 20.0), (0.0, 1.0), (10.0, 13.0)]) == 4.0


def test_a_finished_export_refused_as_a_second_object_is_caught() -> None:
    facts = facts_of(
        jobs={1: job(1, "failed", error_code="publish_conflict")},
        history={1: [step("queued", "running", "worker"), step("running", "failed", "worker")]},
        side_effects={1: [effect("emit_failed_webhook", "failed")]},
    )
    assert invariants_broken(facts) == {"kept_exports"}


# -- the faults themselves: each strikes what it aims at, or says it did not ----------------------


def test_freeze_finish_knows_a_finish_sent_as_a_prepared_statement(postgres_url: str) -> None:
    """Once a pooled connection has prepared the finish, a worker sends it as
    `EXECUTE reportexport_finish_job_<n>(...)`: the text freeze_finish sees blocked behind the
    lock it holds names no column. It must still know it for the finish, or it freezes nothing."""
    db = open_database(postgres_url, GRAPH, pool_size=1)
    try:
        for _ in range(2):
            db.jobs.create_job(new_job())
        first, second = db.queue.claim_jobs("w1", limit=2, lease_seconds=60)

        def finish(lease: Any) -> list[bool]:
            outcome = Outcome(lease=lease, to_status="failed", error_code="query_error")
            return db.queue.finish_and_claim([outcome], worker="w1", limit=1, lease_seconds=60)[0]

        assert finish(first.lease) == [True]  # prepares the finish on the pool's connection
        ended: list[list[bool]] = []
        with psycopg.connect(postgres_url) as holder:
            holder.execute(b"SELECT id FROM jobs WHERE id = %s FOR UPDATE", (second.job.id,))
            me = holder.info.backend_pid
            worker = threading.Thread(target=lambda: ended.append(finish(second.lease)))
            worker.start()

            def blocked() -> list[str]:
                with psycopg.connect(postgres_url, autocommit=True) as conn:
                    rows = conn.execute(
                        b"SELECT query FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                        (me,),
                    ).fetchall()
                return [row[0] for row in rows]

            (text,) = poll(blocked, 30, every=0.05)
            holder.rollback()
            worker.join()
        assert text.startswith("EXECUTE ")
        assert "object_sha256" not in text  # what the suite looked for before
        assert is_finish(text)
        assert ended == [[True]]
    finally:
        db.close()


def test_only_a_finish_is_taken_for_one() -> None:
    assert is_finish("PREPARE reportexport_finish_job_3 AS UPDATE jobs SET object_sha256 = $1")
    assert is_finish("UPDATE jobs SET object_key = $9, object_sha256 = $10")  # finish_jobs
    assert is_finish("EXECUTE reportexport_finish_job_12(7, 'x');\nEXECUTE reportexport_claim")
    assert not is_finish("EXECUTE reportexport_claim_jobs_4('w1', 1)")
    assert not is_finish("UPDATE jobs SET status = 'canceled', change_actor = 'user'")
    assert not is_finish("EXECUTE reportexport_finish_job_12x(1)")
    assert not is_finish(None)


def test_a_fault_that_finds_nothing_to_strike_is_not_counted_as_struck(tmp_path: Path) -> None:
    lane: Any = SimpleNamespace(url=lambda name: f"postgresql://nowhere/{name}")
    run = Run(lane, Plan(0, 1, LOCAL, ("freeze_finish", "webhook_gone")), tmp_path)

    def nothing_running(rng: object) -> None:
        raise MissedError("no running export")

    run._freeze_finish = nothing_running  # type: ignore[method-assign]
    run._webhook_gone = lambda rng: None  # type: ignore[method-assign]
    run.strike("freeze_finish", 0)
    run.strike("webhook_gone", 0)
    assert run.struck == {"webhook_gone"}
    assert run.notes["fault freeze_finish missed: no running export"] == 1
    assert run.errors == []


def test_the_report_names_a_fault_that_never_struck() -> None:
    plan = Plan(0, 1, LOCAL, ("freeze_finish", "webhook_gone"))
    missed = Counter({"fault freeze_finish missed: no running export": 1})
    results = [
        RunResult(plan, [], 1.0, notes=missed, struck=frozenset({"webhook_gone"})),
        RunResult(Plan(1, 2, LOCAL, ("webhook_gone",)), [], 1.0, struck=frozenset()),
    ]
    text = report(results, 2.0)
    rows = {line.split()[0]: line.split()[1:3] for line in text.splitlines()[1:20] if line}
    assert rows["freeze_finish"] == ["1", "0"]
    assert rows["webhook_gone"] == ["2", "1"]
    assert "NEVER STRUCK: freeze_finish (planned in 1)" in text
    assert "webhook_gone (planned" not in text
