"""A schedule's recipients on its page: the owner adds and removes them, each refusal says
why beside the schedule, and a recipient opens the export the e-mail links to."""

from __future__ import annotations

from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport.objects import ObjectStore
from reportexport.services.exports import Acting
from reportexport.store import Database
from tests.dashboard_session import Signed, post_form, sign_in
from tests.helpers import API_QUERIES, catalog_for, run_by_a_worker, runtime_for


@pytest.fixture
def site(jobs_db: Database, local_objects: ObjectStore, sources_dir: Path) -> Iterator[Any]:
    catalog = catalog_for(sources_dir, None, API_QUERIES)
    people = (("alice", "user"), ("bob", "user"), ("dan", "user"))
    tokens = {name: jobs_db.users.add_user(name, role)[1] for name, role in people}
    bob = jobs_db.users.user_by_name("bob")
    assert bob is not None
    jobs_db.users.set_email(bob.id, "bob@example.com")
    runtime = runtime_for(jobs_db, catalog, local_objects)
    alice = Acting(name="alice")
    schedule = runtime.schedules.create(
        alice, "products", {"category": "toys"}, cron="0 8 * * *", time_zone="UTC"
    ).schedule.id
    with TestClient(runtime.app()) as client:
        yield {
            "client": client,
            "tokens": tokens,
            "runtime": runtime,
            "schedule": schedule,
            "db": jobs_db,
            "catalog": catalog,
            "objects": local_objects,
        }


def signed(site: Any, who: str) -> Signed:
    return sign_in(site["client"], site["tokens"][who])


def post(site: Any, who: Signed, path: str, **fields: str) -> Any:
    return post_form(site["client"], who, path, **fields)


def test_the_owner_adds_and_removes_a_recipient_on_the_schedules_page(site: Any) -> None:
    alice = signed(site, "alice")
    here = f"/schedules/{site['schedule']}"
    page = site["client"].get(here, headers=alice.headers)
    assert 'id="no-recipients"' in page.text
    added = post(site, alice, f"{here}/recipients", person="bob")
    assert added.status_code == 200
    assert "bob gets an e-mail each time an export of schedule" in unescape(added.text)
    assert 'data-recipient="bob"' in added.text
    assert "added by <bdi>alice</bdi>" in added.text

    for person, said in (
        ("dan", "Not added: dan has no e-mail address"),
        ("nobody", "Not added: no person 'nobody'"),
    ):
        refused = post(site, alice, f"{here}/recipients", person=person)
        assert refused.status_code == 200
        assert said in unescape(refused.text), person

    removed = post(site, alice, f"{here}/recipients/bob/remove")
    assert "bob no longer gets the exports of schedule" in unescape(removed.text)
    assert 'data-recipient="bob"' not in removed.text


def test_a_recipient_opens_the_export_and_not_the_schedule(site: Any) -> None:
    runtime = site["runtime"]
    alice = Acting(name="alice")
    runtime.schedules.add_recipient(alice, site["schedule"], "bob")
    job = runtime.schedules.run_now(alice, site["schedule"]).job.id
    assert run_by_a_worker(site["db"], site["catalog"], site["objects"], job) == "succeeded"
    bob = signed(site, "bob")
    shown = site["client"].get(f"/jobs/{job}", headers=bob.headers)
    assert shown.status_code == 200
    assert f"#{job}" in shown.text
    assert 'id="received"' in shown.text
    assert 'id="rerun"' not in shown.text
    assert f'action="/jobs/{job}/cancel"' not in shown.text
    assert 'id="download"' in shown.text
    mine = site["client"].get(f"/jobs/{job}", headers=signed(site, "alice").headers)
    assert 'id="rerun"' in mine.text
    assert 'id="received"' not in mine.text
    other = site["client"].get(f"/schedules/{site['schedule']}", headers=bob.headers)
    assert other.status_code == 404
    dan = signed(site, "dan")
    assert site["client"].get(f"/jobs/{job}", headers=dan.headers).status_code == 404
