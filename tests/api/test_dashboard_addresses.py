"""A schedule's outside addresses on its page: an operator adds one with what it gets attached;
the owner sees them and removes one, but has no form to add one; a refusal says why beside the
schedule."""

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
from tests.helpers import API_QUERIES, catalog_for, runtime_for


def signed(site: Any, who: str) -> Signed:
    return sign_in(site["client"], site["tokens"][who])


@pytest.fixture
def site(jobs_db: Database, local_objects: ObjectStore, sources_dir: Path) -> Iterator[Any]:
    catalog = catalog_for(sources_dir, None, API_QUERIES)
    people = (("alice", "user"), ("bob", "user"), ("olga", "operator"))
    tokens = {name: jobs_db.users.add_user(name, role)[1] for name, role in people}
    runtime = runtime_for(jobs_db, catalog, local_objects, email_domains="example.org")
    schedule = runtime.schedules.create(
        Acting(name="alice"), "products", {"category": "toys"}, cron="0 8 * * *", time_zone="UTC"
    ).schedule.id
    with TestClient(runtime.app()) as client:
        yield {"client": client, "tokens": tokens, "schedule": schedule, "db": jobs_db}


def test_an_operator_adds_an_address_and_the_owner_sees_and_removes_it(site: Any) -> None:
    olga, alice = signed(site, "olga"), signed(site, "alice")
    here = f"/schedules/{site['schedule']}"
    page = site["client"].get(here, headers=alice.headers)
    assert 'id="addresses"' not in page.text  # none yet, and no form for the owner
    page = site["client"].get(here, headers=olga.headers)
    assert 'id="no-addresses"' in page.text
    assert 'id="add-address"' in page.text

    added = post_form(site["client"], olga, here + "/addresses", address="Partner@Example.org",
                      attach_max_bytes="5000", attach_gzip="1")  # fmt: skip
    said = unescape(added.text)
    assert (
        f"partner@example.org gets an e-mail each time an export of schedule "
        f"#{site['schedule']} ends." in said
    )
    assert "the file attached up to 5,000 bytes after gzip" in said
    (address,) = site["db"].schedules.addresses(site["schedule"])
    assert (address.attach_max_bytes, address.attach_gzip, address.added_by) == (5000, True, "olga")

    page = site["client"].get(here, headers=alice.headers)
    assert 'data-address="partner@example.org"' in page.text
    assert 'id="add-address"' not in page.text
    removed = post_form(site["client"], alice, here + "/addresses/partner%40example.org/remove")
    assert "partner@example.org no longer gets the exports of schedule" in unescape(removed.text)
    assert site["db"].schedules.addresses(site["schedule"]) == []


@pytest.mark.parametrize(("fields", "said"), [
    ({"address": "someone@elsewhere.net"}, "e-mail goes only to example.org"),
    ({"address": "not an address"}, "one plain mailbox"),
    ({"address": "p@example.org", "attach_max_bytes": "5 MB"}, "a whole number of bytes"),
    ({"address": "p@example.org", "attach_max_bytes": "0"}, "attach_max_bytes is from 1 to"),
])  # fmt: skip
def test_a_refused_address_says_why_and_adds_nothing(
    site: Any, fields: dict[str, str], said: str
) -> None:
    olga = signed(site, "olga")
    here = f"/schedules/{site['schedule']}"
    answer = post_form(site["client"], olga, here + "/addresses", **fields)
    assert "Not added: " in unescape(answer.text)
    assert said in unescape(answer.text)
    assert site["db"].schedules.addresses(site["schedule"]) == []


def test_the_owner_posting_the_form_anyway_is_refused(site: Any) -> None:
    alice = signed(site, "alice")
    here = f"/schedules/{site['schedule']}"
    answer = post_form(site["client"], alice, here + "/addresses", address="p@example.org")
    assert "Not added: only operators add outside addresses" in unescape(answer.text)
    bob = signed(site, "bob")
    other = site["client"].post(here + "/addresses/p%40example.org/remove", data=bob.form(),
                                headers=bob.headers, follow_redirects=False)  # fmt: skip
    assert other.status_code == 404
    assert "No such schedule" in other.text
