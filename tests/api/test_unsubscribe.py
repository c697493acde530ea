"""An e-mail's one-click unsubscribe link (RFC 8058): a POST without a session or a CSRF token
stops the e-mails its person gets when any of their exports ends; a GET changes nothing; a link
that is cut short, changed or signed for something else stops nothing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from reportexport.core.links import (
    UNSUBSCRIBE,
    LinkError,
    UnsubscribeLink,
    address_digest,
    sign_download,
    sign_unsubscribe,
    verify_unsubscribe,
)
from reportexport.core.records import AuditFilter

SECRET = b"secret"  # runtime_for's link_secret
ONE_CLICK = {"List-Unsubscribe": "One-Click"}
ALICE = "alice@example.com"


def alice_notified_always(api: dict[str, Any]) -> None:
    users = api["db"].users
    alice = users.user_by_name("alice")
    users.set_email(alice.id, ALICE)
    assert users.set_notify_always("alice", True)


def notify_always(api: dict[str, Any], name: str) -> bool:
    return bool(api["db"].users.user_by_name(name).notify_always)


def test_a_post_to_the_link_stops_the_emails_without_a_session(api: dict[str, Any]) -> None:
    alice_notified_always(api)
    client = api["client"]
    client.cookies.clear()
    answer = client.post(f"/unsubscribe/{sign_unsubscribe(SECRET, 'alice', ALICE)}", data=ONE_CLICK)
    assert answer.status_code == 200, answer.text
    assert "alice</bdi> no longer gets an e-mail" in answer.text
    assert not notify_always(api, "alice")
    # Again (a provider retries): the same answer, nothing else changes.
    again = client.post(f"/unsubscribe/{sign_unsubscribe(SECRET, 'alice', ALICE)}", data=ONE_CLICK)
    assert again.status_code == 200
    assert not notify_always(api, "alice")


def test_the_link_of_a_person_with_the_longest_name_works(api: dict[str, Any]) -> None:
    name = "a" * 100
    users = api["db"].users
    person, _ = users.add_user(name, "user")
    users.set_email(person.id, ALICE)
    assert users.set_notify_always(name, True)
    answer = api["client"].post(f"/unsubscribe/{sign_unsubscribe(SECRET, name, ALICE)}")
    assert answer.status_code == 200
    assert not notify_always(api, name)


def test_opening_the_link_changes_nothing_and_offers_the_button(api: dict[str, Any]) -> None:
    alice_notified_always(api)
    token = sign_unsubscribe(SECRET, "alice", ALICE)
    page = api["client"].get(f"/unsubscribe/{token}")
    assert page.status_code == 200
    assert f'action="/unsubscribe/{token}"' in page.text
    assert 'name="List-Unsubscribe" value="One-Click"' in page.text
    assert notify_always(api, "alice")


def test_a_link_cut_short_changed_or_signed_for_a_download_stops_nothing(
    api: dict[str, Any],
) -> None:
    alice_notified_always(api)
    token = sign_unsubscribe(SECRET, "alice", ALICE)
    body, mac = token.split(".")
    bob = sign_unsubscribe(SECRET, "bob", ALICE).split(".")[0]
    for wrong in (
        token[:-3],  # cut short
        f"{bob}.{mac}",  # another person's name under alice's signature
        sign_unsubscribe(b"another secret", "alice", ALICE),
        sign_download(SECRET, "some/key", "alice.csv", 3600),
        body,
        "%FF%FE",
        "x" * 500,
    ):
        for method in ("GET", "POST"):
            answer = api["client"].request(method, f"/unsubscribe/{wrong}", data=ONE_CLICK)
            assert answer.status_code == 404, (wrong, method, answer.text)
            assert "No such unsubscribe link" in answer.text
    assert notify_always(api, "alice")


def test_a_link_sent_to_an_address_no_longer_theirs_stops_nothing(api: dict[str, Any]) -> None:
    alice_notified_always(api)
    users = api["db"].users
    users.set_email(users.user_by_name("alice").id, "alice@elsewhere.example")
    answer = api["client"].post(f"/unsubscribe/{sign_unsubscribe(SECRET, 'alice', ALICE)}")
    assert answer.status_code == 404
    assert notify_always(api, "alice")
    moved = sign_unsubscribe(SECRET, "alice", "Alice@Elsewhere.example")  # case does not count
    assert api["client"].post(f"/unsubscribe/{moved}").status_code == 200
    assert not notify_always(api, "alice")


def test_an_unsubscribe_link_downloads_nothing(api: dict[str, Any]) -> None:
    """Both kinds of link are signed with the same secret: neither fits the other."""
    answer = api["client"].get(f"/api/downloads/{sign_unsubscribe(SECRET, 'alice', ALICE)}")
    assert answer.status_code == 403


def test_a_revoked_persons_link_stops_nothing(api: dict[str, Any]) -> None:
    alice_notified_always(api)
    assert api["db"].users.revoke_user("alice", now=datetime.now(UTC))
    answer = api["client"].post(f"/unsubscribe/{sign_unsubscribe(SECRET, 'alice', ALICE)}")
    assert answer.status_code == 404


def a_schedule_received_by_bob(api: dict[str, Any]) -> int:
    users = api["db"].users
    users.set_email(users.user_by_name("bob").id, "bob@example.com")
    body = {"saved_query": "products", "parameters": {"category": "toys"},
            "cron": "0 8 * * *", "time_zone": "UTC"}  # fmt: skip
    alice = {"Authorization": f"Bearer {api['tokens']['alice']}"}
    made = api["client"].post("/api/schedules", json=body, headers=alice)
    assert made.status_code == 201, made.text
    schedule_id = int(made.json()["id"])
    added = api["client"].put(f"/api/schedules/{schedule_id}/recipients/bob", headers=alice)
    assert added.status_code == 201, added.text
    return schedule_id


def test_a_recipients_link_takes_them_off_that_schedule_alone(api: dict[str, Any]) -> None:
    kept = a_schedule_received_by_bob(api)
    schedule_id = a_schedule_received_by_bob(api)
    assert api["db"].users.set_notify_always("bob", True)
    token = sign_unsubscribe(SECRET, "bob", "bob@example.com", schedule_id=schedule_id)
    page = api["client"].get(f"/unsubscribe/{token}")
    assert page.status_code == 200
    assert f"gets an e-mail each time an export of schedule #{schedule_id} ends" in page.text
    assert api["db"].schedules.recipient(schedule_id, "bob") is not None
    api["client"].cookies.clear()
    answer = api["client"].post(f"/unsubscribe/{token}", data=ONE_CLICK)
    assert answer.status_code == 200, answer.text
    assert f"no longer gets an e-mail when an export of schedule #{schedule_id} ends" in (
        answer.text
    )
    assert api["db"].schedules.recipient(schedule_id, "bob") is None
    assert api["db"].schedules.recipient(kept, "bob") is not None
    assert api["client"].post(f"/unsubscribe/{token}", data=ONE_CLICK).status_code == 200
    # The same person's link for every export is another link: it did not change that.
    assert notify_always(api, "bob")


def test_a_recipients_link_sent_to_another_address_stops_nothing(api: dict[str, Any]) -> None:
    schedule_id = a_schedule_received_by_bob(api)
    elsewhere = sign_unsubscribe(SECRET, "bob", "bob@elsewhere.example", schedule_id=schedule_id)
    assert api["client"].post(f"/unsubscribe/{elsewhere}").status_code == 404
    assert api["db"].schedules.recipient(schedule_id, "bob") is not None


def a_schedule_sent_outside(api: dict[str, Any]) -> int:
    schedule_id = a_schedule_received_by_bob(api)
    api["db"].schedules.add_address(schedule_id, "partner@example.org", attach_max_bytes=None,
                                    attach_gzip=False, added_by="operator")  # fmt: skip
    return schedule_id


def test_an_outside_addresss_link_takes_that_address_off_that_schedule_alone(
    api: dict[str, Any],
) -> None:
    kept = a_schedule_sent_outside(api)
    schedule_id = a_schedule_sent_outside(api)
    token = sign_unsubscribe(SECRET, None, "Partner@Example.org", schedule_id=schedule_id)
    page = api["client"].get(f"/unsubscribe/{token}")
    assert page.status_code == 200
    assert (
        f"This address</bdi> gets an e-mail each time an export of schedule #{schedule_id} ends"
        in page.text
    )
    api["client"].cookies.clear()
    answer = api["client"].post(f"/unsubscribe/{token}", data=ONE_CLICK)
    assert answer.status_code == 200, answer.text
    assert "This address</bdi> no longer gets an e-mail" in answer.text
    assert api["db"].schedules.address(schedule_id, "partner@example.org") is None
    assert api["db"].schedules.address(kept, "partner@example.org") is not None
    assert api["db"].schedules.recipient(schedule_id, "bob") is not None
    assert api["client"].post(f"/unsubscribe/{token}", data=ONE_CLICK).status_code == 200
    (audited,) = api["db"].audit.entries(AuditFilter(action="remove_schedule_address")).records
    assert (audited.person, audited.object_id, audited.detail) == (
        "unsubscribe link", str(schedule_id), "partner@example.org, by its one-click link",
    )  # fmt: skip


def test_a_link_to_an_address_that_is_not_the_schedules_stops_nothing(
    api: dict[str, Any],
) -> None:
    schedule_id = a_schedule_sent_outside(api)
    other = sign_unsubscribe(SECRET, None, "someone@example.org", schedule_id=schedule_id)
    answer = api["client"].post(f"/unsubscribe/{other}", data=ONE_CLICK)
    assert answer.status_code == 200
    assert "This address</bdi> no longer gets an e-mail" in answer.text
    assert api["db"].schedules.address(schedule_id, "partner@example.org") is not None


def test_a_link_without_a_person_names_its_schedule_or_is_malformed() -> None:
    with pytest.raises(ValueError, match="names its schedule"):
        sign_unsubscribe(SECRET, None, "partner@example.org")
    body = json.dumps({"a": address_digest("partner@example.org")}, separators=(",", ":"))
    mac = hmac.new(SECRET, UNSUBSCRIBE + body.encode(), hashlib.sha256).digest()
    token = ".".join(
        base64.urlsafe_b64encode(b).rstrip(b"=").decode() for b in (body.encode(), mac)
    )
    with pytest.raises(LinkError, match="malformed unsubscribe link"):
        verify_unsubscribe(SECRET, token)
    named = sign_unsubscribe(SECRET, None, "partner@example.org", schedule_id=4)
    assert verify_unsubscribe(SECRET, named) == UnsubscribeLink(
        None, address_digest("partner@example.org"), 4
    )
