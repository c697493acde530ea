"""The dashboard's "E-mail me when it ends": the New export form's checkbox, the job page's
button, and a person's own "e-mail me when any of my exports ends"."""

from __future__ import annotations

from html import unescape
from typing import Any

from reportexport.store import Database
from tests.api.test_notify import give_address
from tests.dashboard_session import Signed, sign_in
from tests.helpers import create


def flash_of(client: Any, signed: Signed, answer: Any) -> str:
    """The page the form led to, and its message."""
    cookies = "; ".join(
        [signed.headers["Cookie"], *(f"{k}={v}" for k, v in answer.cookies.items())]
    )
    client.cookies.clear()
    shown = client.get(answer.headers["location"], headers={"Cookie": cookies})
    return unescape(shown.text.split('id="flash">', 1)[1].split("</div>", 1)[0])


def post(client: Any, signed: Signed, path: str, **fields: str) -> Any:
    return client.post(path, data=signed.form(**fields), headers=signed.headers,
                       follow_redirects=False)  # fmt: skip


def test_the_new_export_form_has_the_checkbox_only_with_an_address(api: dict[str, Any]) -> None:
    client, db = api["client"], api["db"]
    alice = sign_in(client, api["tokens"]["alice"])
    page = client.get("/exports/new", headers=alice.headers).text
    assert 'id="notify-me"' not in page
    assert "you have no e-mail address here" in page
    assert 'id="notify-always-form"' not in page
    give_address(db, "alice", "alice@example.com")
    page = client.get("/exports/new", headers=alice.headers).text
    assert "E-mail me when it ends" in page
    assert 'name="notify-me"' in page
    fields = {"saved-query": "products", "category": "toys"}
    asked = post(
        client, alice, "/exports/new", **fields, **{"form-key": "k-1", "notify-me": "true"}
    )
    plain = post(client, alice, "/exports/new", **fields, **{"form-key": "k-2"})
    assert (asked.status_code, plain.status_code) == (303, 303)
    first, second = (int(a.headers["location"].rsplit("/", 1)[1]) for a in (asked, plain))
    assert db.jobs.get_job(first).job.options.get("notify") is True  # type: ignore[arg-type]
    assert "notify" not in db.jobs.get_job(second).job.options  # type: ignore[arg-type]


def test_the_checkbox_is_refused_above_the_form_without_an_address(api: dict[str, Any]) -> None:
    client = api["client"]
    alice = sign_in(client, api["tokens"]["alice"])
    fields = {"saved-query": "products", "category": "toys", "form-key": "k-1", "notify-me": "true"}
    refused = post(client, alice, "/exports/new", **fields)  # no address: refused, not dropped
    assert refused.status_code == 422
    assert "you have no e-mail address here" in unescape(refused.text)
    assert 'id="form-problems"' in refused.text
    listed = client.get(
        "/api/exports", headers={"Authorization": "Bearer " + api["tokens"]["alice"]}
    )
    assert listed.json()["jobs"] == []  # nothing was made


def test_the_job_page_button_asks_for_an_email_until_the_export_ends(api: dict[str, Any]) -> None:
    client, db = api["client"], api["db"]
    alice = sign_in(client, api["tokens"]["alice"])
    job_id = create(api).json()["id"]
    page = client.get(f"/jobs/{job_id}", headers=alice.headers).text
    assert 'id="email-me"' not in page
    assert "you have no e-mail address here" in page
    assert "Browser notification when it ends" in page
    give_address(db, "alice", "alice@example.com")
    page = client.get(f"/jobs/{job_id}", headers=alice.headers).text
    assert f'action="/jobs/{job_id}/notify"' in page
    assert "E-mail me when it ends" in page
    expired = client.post(f"/jobs/{job_id}/notify", data={"csrf-token": "nope"},
                          headers=alice.headers, follow_redirects=False)  # fmt: skip
    assert "notify" not in db.jobs.get_job(job_id).job.options  # no CSRF token: nothing done
    assert expired.status_code != 303
    answer = post(client, alice, f"/jobs/{job_id}/notify")
    assert answer.status_code == 303
    assert flash_of(client, alice, answer) == (
        f"You will get an e-mail at alice@example.com when export #{job_id} ends."
    )
    assert db.jobs.get_job(job_id).job.options["notify"] is True
    page = client.get(f"/jobs/{job_id}", headers=alice.headers).text
    assert "You will get an e-mail at <bdi>alice@example.com</bdi> when it ends." in page
    assert 'id="email-me"' not in page
    give_address(db, "alice", None)  # removed since: the page promises nothing
    page = client.get(f"/jobs/{job_id}", headers=alice.headers).text
    assert "You will get an e-mail" not in page
    assert "you have no e-mail address here" in page
    bob = sign_in(client, api["tokens"]["bob"])
    assert post(client, bob, f"/jobs/{job_id}/notify").status_code == 404
    client.post(f"/api/exports/{job_id}/cancel",
                headers={"Authorization": "Bearer " + api["tokens"]["alice"]})  # fmt: skip
    page = client.get(f"/jobs/{job_id}", headers=alice.headers).text
    assert "E-mail me when it ends" not in page
    assert "You will get an e-mail" not in page
    late = post(client, alice, f"/jobs/{job_id}/notify")
    assert "has already ended" in flash_of(client, alice, late)


def test_a_person_turns_on_an_email_for_every_export(api: dict[str, Any]) -> None:
    client, db = api["client"], api["db"]
    give_address(db, "alice", "alice@example.com")
    alice = sign_in(client, api["tokens"]["alice"])
    page = client.get("/exports/new?saved_query=products", headers=alice.headers).text
    assert "E-mail me when any of my exports ends" in page
    answer = post(
        client, alice, "/exports/notify-always", switch="on", **{"saved-query": "products"}
    )
    assert answer.headers["location"] == "/exports/new?saved_query=products"
    assert flash_of(client, alice, answer) == (
        "You will get an e-mail at alice@example.com when any of your exports ends."
    )
    assert _person(db, "alice").notify_always is True
    page = client.get("/exports/new?saved_query=products", headers=alice.headers).text
    assert 'id="notify-me"' not in page  # every export is e-mailed: no box to tick
    assert "as for all your exports" in page
    job_id = create(api).json()["id"]
    job_page = client.get(f"/jobs/{job_id}", headers=alice.headers).text
    assert "You will get an e-mail at <bdi>alice@example.com</bdi> when it ends." in job_page
    off = post(client, alice, "/exports/notify-always", switch="off", **{"saved-query": "products"})
    assert "only for the exports you ask it for" in flash_of(client, alice, off)
    assert _person(db, "alice").notify_always is False
    no_csrf = client.post("/exports/notify-always", data={"switch": "on"}, headers=alice.headers,
                          follow_redirects=False)  # fmt: skip
    assert no_csrf.status_code != 303
    assert _person(db, "alice").notify_always is False


def _person(db: Database, name: str) -> Any:
    person = db.users.user_by_name(name)
    assert person is not None
    return person
