"""The operators' group pages over HTTP, as a browser without script uses them: an operator
makes a group and adds someone, and the query that group may run appears on that person's New
export form without a restart; removing them asks first, then cancels their export of it and
says so; a refusal is a page, not problem JSON."""

from __future__ import annotations

from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport.objects import ObjectStore
from reportexport.store import Database
from tests.dashboard_session import Signed, sign_in
from tests.helpers import API_QUERIES, catalog_for, runtime_for

HTML = "text/html; charset=utf-8"
INVOICES = {
    "source": "demo",
    "title": "Invoices of the finance team",
    "sql": "SELECT order_id, amount FROM orders WHERE order_id < 20",
    "access": ["finance"],
}


@pytest.fixture
def site(jobs_db: Database, local_objects: ObjectStore, sources_dir: Path) -> Iterator[Any]:
    catalog = catalog_for(sources_dir, None, {**API_QUERIES, "invoices": INVOICES})
    tokens = {
        name: jobs_db.users.add_user(name, role)[1]
        for name, role in (("alice", "user"), ("olga", "operator"))
    }
    with TestClient(runtime_for(jobs_db, catalog, local_objects).app()) as client:
        yield {"client": client, "tokens": tokens, "db": jobs_db}


def signed(site: Any, who: str) -> Signed:
    return sign_in(site["client"], site["tokens"][who])


def get(site: Any, who: Signed, path: str) -> Any:
    return site["client"].get(path, headers=who.headers, follow_redirects=False)


def post(site: Any, who: Signed, path: str, **fields: str) -> Any:
    return site["client"].post(
        path, data=who.form(**fields), headers=who.headers, follow_redirects=False
    )


def test_an_operator_adds_someone_and_the_query_appears_then_removing_them_cancels(
    site: Any,
) -> None:
    alice, olga = signed(site, "alice"), signed(site, "olga")
    assert "Invoices of the finance team" not in get(site, alice, "/exports/new").text
    made = post(site, olga, "/operators/groups", name="finance", description="sees invoices")
    assert (made.status_code, made.headers["location"]) == (303, "/operators/groups/finance")
    listed = get(site, olga, "/operators/groups")
    assert 'data-group="finance"' in listed.text
    assert "queries.invoices.access" in listed.text  # where the catalog names it
    added = post(site, olga, "/operators/groups/finance/members", name="alice")
    assert added.status_code == 303
    group_page = get(site, olga, "/operators/groups/finance").text
    assert 'data-member="alice"' in group_page
    assert "<title>finance · Groups · reportexport</title>" in group_page
    assert group_page.count('<a href="/operators/groups">All groups</a>') == 1

    assert "Invoices of the finance team" in get(site, alice, "/exports/new").text
    sent = post(site, alice, "/exports/new", **{"saved-query": "invoices"})
    assert sent.status_code == 303, sent.text
    job_id = int(sent.headers["location"].rsplit("/", 1)[-1])

    asked = post(site, olga, "/operators/groups/finance/members/alice/remove")
    assert asked.status_code == 200
    assert "Remove &#39;alice&#39; from &#39;finance&#39;?" in asked.text
    assert site["db"].jobs.jobs_by_ids([job_id])[0].status == "queued"  # nothing done yet
    removed = post(site, olga, "/operators/groups/finance/members/alice/remove", confirmed="yes")
    assert removed.status_code == 303
    assert site["db"].jobs.jobs_by_ids([job_id])[0].status == "canceled"
    job_page = unescape(get(site, alice, f"/jobs/{job_id}").text)
    assert "access withdrawn (alice left the group finance)" in job_page
    assert "Invoices of the finance team" not in get(site, alice, "/exports/new").text
    again = post(site, alice, f"/jobs/{job_id}/rerun")  # a page that names the rule
    assert (again.status_code, again.headers["content-type"]) == (403, HTML)
    assert "queries.invoices.access = finance does not include alice" in unescape(again.text)


def test_the_group_pages_are_for_operators_and_refuse_by_page(site: Any) -> None:
    alice, olga = signed(site, "alice"), signed(site, "olga")
    for path in ("/operators/groups", "/operators/groups/finance"):
        refused = get(site, alice, path)
        assert (refused.status_code, refused.headers["content-type"]) == (403, HTML)
    wrong = post(site, olga, "/operators/groups", name="Not A Name")
    assert (wrong.status_code, wrong.headers["content-type"]) == (422, HTML)
    assert 'aria-invalid="true"' in wrong.text
    post(site, olga, "/operators/groups", name="finance")
    twice = post(site, olga, "/operators/groups", name="finance")
    assert twice.status_code == 409
    nobody = post(site, olga, "/operators/groups/finance/members", name="carol")
    assert nobody.status_code == 404
    assert "no person &#39;carol&#39;" in nobody.text
    missing = get(site, olga, "/operators/groups/sales")
    assert (missing.status_code, missing.headers["location"]) == (303, "/operators/groups")
    deleted = post(site, olga, "/operators/groups/finance/delete", confirmed="yes")
    assert (deleted.status_code, deleted.headers["location"]) == (303, "/operators/groups")
    assert 'data-group="finance"' not in get(site, olga, "/operators/groups").text
