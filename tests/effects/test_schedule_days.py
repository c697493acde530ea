"""A daily schedule with two people and a chat channel as recipients, fired with an injected
clock on three days: each person gets three e-mails and the channel three messages, each naming
that day's export by a link its reader may open, through a real SMTP server and a real HTTP
receiver on loopback and the composition root's own effects runner."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from fastapi.testclient import TestClient

from reportexport.objects import ObjectStore
from reportexport.services.schedules import ScheduleService
from reportexport.store import Database
from tests.effects.receiver import Receiver
from tests.effects.smtp_server import Mailbox, running_mailbox
from tests.helpers import catalog_for, run_by_a_worker, runtime_for

QUERIES = {
    "orders_by_day": {
        "source": "demo",
        "title": "Orders of one day",
        "sql": "SELECT order_id, amount FROM orders WHERE order_date = :day ORDER BY order_id",
        "parameters": {"day": {"type": "date"}},
    }
}
PUBLIC = "https://reports.example.com"
JOB_LINK = re.compile(re.escape(PUBLIC) + r"/jobs/(\d+)")


def test_three_days_of_a_schedule_reach_two_people_and_a_channel_each_day(
    jobs_db: Database, local_objects: ObjectStore, sources_dir: Path, receiver: Receiver
) -> None:
    catalog = catalog_for(sources_dir, None, QUERIES)
    tokens = {}
    for name in ("alice", "bob", "carol"):
        user, tokens[name] = jobs_db.users.add_user(name, "user")
        jobs_db.users.set_email(user.id, f"{name}@example.com")
    alice = jobs_db.users.user_by_name("alice")
    assert alice is not None
    with running_mailbox(Mailbox()) as mailbox:
        runtime = runtime_for(
            jobs_db, catalog, local_objects, smtp_host=mailbox.host, smtp_port=mailbox.port,
            smtp_security="none", smtp_from="reports@example.com", chat_hosts="127.0.0.1",
            webhooks_allow_private=True, public_url=PUBLIC,
        )  # fmt: skip
        now = [datetime(2026, 12, 1, 5, 0, tzinfo=UTC)]
        schedules = ScheduleService(schedules=jobs_db.schedules, exports=runtime.exports,
                                    catalog=catalog, clock=lambda: now[0],
                                    channels=jobs_db.channels)  # fmt: skip
        made = schedules.create(alice, "orders_by_day", {"day": {"relative": "yesterday"}},
                                cron="0 6 * * *", time_zone="UTC")  # fmt: skip
        schedule = made.schedule.id
        for person in ("bob", "carol"):
            schedules.add_recipient(alice, schedule, person)
        team = jobs_db.channels.add_chat_channel(owner="alice", name="#sales", url=receiver.url,
                                                 schedules_only=True)  # fmt: skip
        schedules.add_channel(alice, schedule, team.id)
        runner = runtime.effects_runner(restart_loops=False)

        jobs = []
        for day in (1, 2, 3):
            now[0] = datetime(2026, 12, day, 6, 0, 30, tzinfo=UTC)
            assert schedules.fire_due() == 1
            (job_id,) = [f.job_id for f in schedules.show(alice, schedule).firings
                         if f.scheduled_for.day == day]  # fmt: skip
            assert job_id is not None
            assert run_by_a_worker(jobs_db, catalog, local_objects, job_id) == "succeeded"
            runner.run_once()
            jobs.append(job_id)

        days = ["2026-11-30", "2026-12-01", "2026-12-02"]
        for person in ("bob", "carol"):
            got = mailbox.messages_to(f"{person}@example.com")
            assert [m["Subject"] for m in got] == [f"Orders of one day — {d} — ready" for d in days]
            linked = [int(JOB_LINK.findall(str(m.get_body(("plain",)).get_content()))[0])
                      for m in got]  # fmt: skip
            assert linked == jobs
            assert len({m["Message-ID"] for m in got}) == 3
        assert mailbox.messages_to("alice@example.com") == []  # she asked for none
        posted = [json.loads(r.body) for r in receiver.received]
        assert len(posted) == 3
        assert [int(JOB_LINK.findall(p["text"])[0]) for p in posted] == jobs
        for message, day in zip(posted, days, strict=True):
            assert f"• day: {day}" in message["text"]

        # Each link works for its reader: the export opens and its file downloads.
        with TestClient(runtime.app()) as client:
            for person in ("alice", "bob", "carol"):
                for job_id in jobs:
                    headers = {"Authorization": f"Bearer {tokens[person]}"}
                    shown = client.get(f"/api/exports/{job_id}", headers=headers)
                    assert shown.status_code == 200, (person, shown.text)
                    got = client.get(f"/api/exports/{job_id}/download", headers=headers,
                                     follow_redirects=True)  # fmt: skip
                    assert got.status_code == 200, (person, got.text)
                    assert got.content.startswith(b"order_id,amount")
