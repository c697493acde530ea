"""A schedule's chat channels on its page: the owner picks one of the channels registered for
them (and sees no one else's), removes it, and a refusal says why beside the schedule."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
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

URL = "https://hooks.slack.com/services/T0/B0/secret-part"


def signed(site: Any, who: str) -> Signed:
    return sign_in(site["client"], site["tokens"][who])


def post(site: Any, who: Signed, path: str, **fields: str) -> Any:
    return post_form(site["client"], who, path, **fields)


@pytest.fixture
def site(jobs_db: Database, local_objects: ObjectStore, sources_dir: Path) -> Iterator[Any]:
    catalog = catalog_for(sources_dir, None, API_QUERIES)
    people = (("alice", "user"), ("bob", "user"), ("olga", "operator"))
    tokens = {name: jobs_db.users.add_user(name, role)[1] for name, role in people}
    runtime = runtime_for(jobs_db, catalog, local_objects)
    schedule = runtime.schedules.create(
        Acting(name="alice"), "products", {"category": "toys"}, cron="0 8 * * *", time_zone="UTC"
    ).schedule.id
    add = jobs_db.channels.add_chat_channel
    channels = {
        "mine": add(owner="alice", name="#alice-reports", url=URL, schedules_only=True).id,
        "bobs": add(owner="bob", name="#bob-reports", url=URL, schedules_only=True).id,
        "shared": add(owner=None, name="#sales", url=URL, schedules_only=True).id,
    }
    with TestClient(runtime.app()) as client:
        yield {"client": client, "tokens": tokens, "schedule": schedule, "db": jobs_db,
               "channels": channels}  # fmt: skip


def test_the_owner_adds_a_channel_of_theirs_and_removes_it_on_the_schedules_page(
    site: Any,
) -> None:
    alice = signed(site, "alice")
    here = f"/schedules/{site['schedule']}"
    mine, bobs, shared = (site["channels"][k] for k in ("mine", "bobs", "shared"))
    page = site["client"].get(here, headers=alice.headers)
    assert 'id="no-channels"' in page.text
    assert f'<option value="{mine}">#alice-reports (hooks.slack.com, alice' in page.text
    assert "#bob-reports" not in page.text
    assert "#sales" not in page.text  # registered for no one: operators add it
    assert "secret-part" not in page.text

    added = post(site, alice, f"{here}/channels", channel=str(mine))
    assert "#alice-reports gets a message each time an export of schedule" in unescape(added.text)
    assert f'data-channel="{mine}"' in added.text
    assert 'id="add-channel"' not in added.text  # nothing more of hers to add

    for channel, said in (
        (str(bobs), f"Not added: no chat channel {bobs}"),
        (str(shared), f"Not added: no chat channel {shared}"),
        ("x", "Not added: no chat channel 'x'"),
    ):
        refused = post(site, alice, f"{here}/channels", channel=channel)
        assert said in unescape(refused.text), channel

    assert site["db"].channels.disable_chat_channel(mine, now=datetime.now(UTC), reason="gone")
    shown = site["client"].get(here, headers=alice.headers).text
    assert "removed by an operator" in shown
    removed = post(site, alice, f"{here}/channels/{mine}/remove")
    said = unescape(removed.text)
    assert f"Chat channel #{mine} no longer gets the exports of schedule" in said
    assert 'id="no-channels"' not in removed.text  # nothing left to show or add: no section
    assert 'id="channels-title"' not in removed.text


def test_an_operator_is_offered_every_channel_and_another_person_sees_no_schedule(
    site: Any,
) -> None:
    olga = signed(site, "olga")
    here = f"/schedules/{site['schedule']}"
    page = site["client"].get(here, headers=olga.headers).text
    for name in ("#alice-reports", "#bob-reports", "#sales"):
        assert name in page
    added = post(site, olga, f"{here}/channels", channel=str(site["channels"]["shared"]))
    assert "#sales gets a message each time an export of schedule" in unescape(added.text)
    bob = signed(site, "bob")
    refused = site["client"].get(here, headers=bob.headers)
    assert refused.status_code == 404
