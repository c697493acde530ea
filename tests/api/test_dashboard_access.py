"""The dashboard after someone loses access to a saved query: refused schedule actions are a
page in the dashboard that names the access rule, not problem JSON."""

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
from tests.dashboard_session import Signed, sign_in
from tests.helpers import API_QUERIES, catalog_for, runtime_for, succeeded_job

HTML = "text/html; charset=utf-8"
INVOICES = {
    "source": "demo",
    "title": "Invoices of the finance team",
    "sql": "SELECT order_id, amount FROM orders WHERE order_id < 20",
    "access": ["finance"],
}
RULE = "queries.invoices.access = finance does not include alice"


@pytest.fixture
def site(jobs_db: Database, local_objects: ObjectStore, sources_dir: Path) -> Iterator[Any]:
    catalog = catalog_for(sources_dir, None, {**API_QUERIES, "invoices": INVOICES})
    tokens = {
        name: jobs_db.users.add_user(name, role)[1]
        for name, role in (("alice", "user"), ("olga", "operator"))
    }
    done_file = succeeded_job(jobs_db, local_objects, saved_query="invoices", parameters={})
    runtime = runtime_for(jobs_db, catalog, local_objects)
    olga = Acting(name="olga", role="operator")
    runtime.access.create_group(olga, "finance")
    runtime.access.add_member(olga, "finance", "alice")
    schedule = runtime.schedules.create(
        Acting(name="alice"), "invoices", {}, cron="0 8 * * *", time_zone="UTC"
    ).schedule.id
    job = runtime.exports.create(Acting(name="alice"), "invoices", {}).job.id
    runtime.access.remove_member(olga, "finance", "alice")  # pauses the schedule
    with TestClient(runtime.app()) as client:
        ids = {"schedule": schedule, "job": job, "file": done_file}
        yield {"client": client, "tokens": tokens, "runtime": runtime, **ids}


def signed(site: Any, who: str) -> Signed:
    return sign_in(site["client"], site["tokens"][who])


def get(site: Any, who: Signed, path: str) -> Any:
    return site["client"].get(path, headers=who.headers, follow_redirects=False)


def post(site: Any, who: Signed, path: str, **fields: str) -> Any:
    return site["client"].post(
        path, data=who.form(**fields), headers=who.headers, follow_redirects=False
    )


@pytest.mark.parametrize("action", ["resume", "run"])
def test_a_refused_schedule_action_is_a_page_naming_the_access_rule(site: Any, action: str) -> None:
    alice = signed(site, "alice")
    refused = post(site, alice, f"/schedules/{site['schedule']}/{action}")
    assert (refused.status_code, refused.headers["content-type"]) == (403, HTML)
    assert RULE in unescape(refused.text)
    assert f'href="/schedules/{site["schedule"]}"' in refused.text
    counted = site["runtime"].exports.refusals.counts()  # a refused resume is counted as one
    assert counted.get(("resume", "group"), 0) == (1 if action == "resume" else 0)


def test_a_refused_download_is_headed_as_refused_and_keeps_the_name_as_written(site: Any) -> None:
    alice = signed(site, "alice")
    refused = get(site, alice, f"/jobs/{site['job']}/download")
    assert (refused.status_code, refused.headers["content-type"]) == (403, HTML)
    text = unescape(refused.text)
    assert "Nothing to download yet" not in text
    assert "Access refused" in text
    assert "alice may not download" in text
    assert "Alice may not" not in text
    assert RULE in text


def test_a_job_page_says_why_the_file_is_not_downloadable_to_its_owner_only(site: Any) -> None:
    alice, olga = signed(site, "alice"), signed(site, "olga")
    shown = get(site, alice, f"/jobs/{site['file']}")
    assert shown.status_code == 200
    assert 'id="download"' not in shown.text
    text = unescape(shown.text)
    assert 'id="not-downloadable"' in text
    assert RULE in text
    operator = get(site, olga, f"/jobs/{site['file']}")  # an operator may still download it
    assert 'id="download"' in operator.text
    assert 'id="not-downloadable"' not in operator.text


def test_a_paused_schedule_says_access_was_lost_not_that_the_query_left_the_catalog(
    site: Any,
) -> None:
    alice, olga = signed(site, "alice"), signed(site, "olga")
    path = f"/schedules/{site['schedule']}"
    owner = unescape(get(site, alice, path).text)  # the owner gets the refusal, by its rule
    assert "no longer in the catalog" not in owner
    assert 'id="access-lost"' in owner
    assert "Invoices of the finance team" not in owner  # the title is no longer hers to see
    seen = unescape(get(site, olga, path).text)  # an operator may see it: title and refusal
    assert "Invoices of the finance team" in seen
    assert 'id="access-lost"' in seen
    assert "</bdi> no longer has access" in seen
    assert "no longer in the catalog" not in seen


def test_a_schedule_whose_owner_lost_access_names_its_query_once_and_offers_no_resume_or_run(
    site: Any,
) -> None:
    """After a loss of access the page names the saved query once (its owner may no longer see
    its title, so the name is not repeated as one), says why by the rule, and offers no Resume
    or Run now, which would be refused; Delete is still offered."""
    alice, olga = signed(site, "alice"), signed(site, "olga")
    path = f"/schedules/{site['schedule']}"
    for who in (alice, olga):
        shown = get(site, who, path)
        assert shown.status_code == 200
        assert f'action="{path}/resume"' not in shown.text
        assert f'action="{path}/run"' not in shown.text
        assert f'action="{path}/delete"' in shown.text
        text = unescape(shown.text)
        assert RULE in text
        assert "Resume and Run now are not offered until" in text
    owner = unescape(get(site, alice, path).text)
    fact = owner.index('id="saved-query"')
    assert owner[fact : owner.index("</dd>", fact)].count("invoices") == 1
