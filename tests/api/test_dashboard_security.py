"""The dashboard's sessions, CSRF tokens, sign-in limit and security headers, over HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport.services.people import PeopleService
from reportexport.services.sessions import SessionService, SignInLimitError
from tests.dashboard_session import sign_in
from tests.helpers import auth, create, failed_job, runtime_for, succeeded_job

HTML = "text/html; charset=utf-8"


def test_signing_in_starts_a_session_whose_cookie_is_not_the_token(api: dict[str, Any]) -> None:
    client = api["client"]
    token = api["tokens"]["alice"]
    form = client.get("/sign-in")
    form_token = re.search(r'name="form_token" value="([^"]+)"', form.text)
    assert form_token is not None
    answer = client.post(
        "/sign-in",
        data={"token": token, "form_token": form_token.group(1), "next": "/jobs?status=failed"},
        follow_redirects=False,
    )
    assert (answer.status_code, answer.headers["location"]) == (303, "/jobs?status=failed")
    cookie = next(v for k, v in answer.headers.multi_items() if v.startswith("rx_session="))
    assert token not in cookie
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie
    assert "Secure" not in cookie  # plain HTTP, no trusted proxy
    session_id = cookie.split(";")[0].split("=", 1)[1]
    page = client.get("/jobs", headers={"Cookie": f"rx_session={session_id}"})
    assert page.status_code == 200
    assert "Signed in as" in page.text
    client.cookies.clear()


def test_the_api_takes_bearer_tokens_only_and_the_pages_sessions_only(
    api: dict[str, Any],
) -> None:
    client = api["client"]
    alice = sign_in(client, api["tokens"]["alice"])
    refused = client.get("/api/exports", headers=alice.headers)
    assert refused.status_code == 401
    assert refused.headers["content-type"] == "application/problem+json"
    raw_token_cookie = client.get(
        "/jobs", headers={"Cookie": f"rx_session={api['tokens']['alice']}"}, follow_redirects=False
    )
    assert raw_token_cookie.status_code == 303
    assert raw_token_cookie.headers["location"].startswith("/sign-in")
    bearer_page = client.get("/jobs", headers=auth(api, "alice"), follow_redirects=False)
    assert bearer_page.status_code == 303


def test_a_form_without_its_sessions_csrf_token_changes_nothing(api: dict[str, Any]) -> None:
    client = api["client"]
    alice = sign_in(client, api["tokens"]["alice"])
    job_id = create(api).json()["id"]
    for sent in ({"confirmed": "yes"}, {"confirmed": "yes", "csrf-token": "0" * 64}):
        refused = client.post(f"/jobs/{job_id}/cancel", data=sent, headers=alice.headers)
        assert (refused.status_code, refused.headers["content-type"]) == (403, HTML)
        assert "This form has expired" in refused.text
    bob = sign_in(client, api["tokens"]["bob"])
    crossed = client.post(
        f"/jobs/{job_id}/cancel", data=bob.form(confirmed="yes"), headers=alice.headers
    )
    assert crossed.status_code == 403  # another session's token is no token for this one
    status = client.get(f"/api/exports/{job_id}", headers=auth(api, "alice")).json()["job"]
    assert status["status"] == "queued"
    done = client.post(
        f"/jobs/{job_id}/cancel", data=alice.form(confirmed="yes"), headers=alice.headers
    )
    assert done.status_code == 200
    assert f"Export #{job_id} is canceled." in done.text


def test_a_destructive_action_asks_first_without_script(api: dict[str, Any]) -> None:
    client = api["client"]
    alice = sign_in(client, api["tokens"]["alice"])
    job_id = create(api).json()["id"]
    asked = client.post(f"/jobs/{job_id}/cancel", data=alice.form(), headers=alice.headers)
    assert asked.status_code == 200
    assert f"Cancel export #{job_id}?" in asked.text
    assert 'name="confirmed" value="yes"' in asked.text
    status = client.get(f"/api/exports/{job_id}", headers=auth(api, "alice")).json()["job"]
    assert status["status"] == "queued"


@pytest.mark.parametrize("ending", ["succeeded", "failed", "canceled"])
def test_the_no_script_cancel_of_an_ended_export_says_it_ended_and_offers_no_button(
    api: dict[str, Any], ending: str
) -> None:
    """A Cancel pressed on a page loaded before the export ended (no script) asks nothing: the
    export's page says it ended already, with its status, and has no Cancel button."""
    client = api["client"]
    alice = sign_in(client, api["tokens"]["alice"])
    if ending == "succeeded":
        job_id = succeeded_job(api["db"], api["objects"], saved_query="products")
    elif ending == "failed":
        job_id = failed_job(api["db"], saved_query="products")
    else:
        job_id = create(api).json()["id"]
        client.post(f"/api/exports/{job_id}/cancel", headers=auth(api, "alice"))
    asked = client.post(f"/jobs/{job_id}/cancel", data=alice.form(), headers=alice.headers)
    assert asked.status_code == 200
    assert f"Cancel export #{job_id}?" not in asked.text
    assert 'name="confirmed"' not in asked.text
    assert f"Export #{job_id} has already ended ({ending}): there is nothing to cancel." in (
        asked.text
    )
    assert f'action="/jobs/{job_id}/cancel"' not in asked.text
    status = client.get(f"/api/exports/{job_id}", headers=auth(api, "alice")).json()["job"]
    assert status["status"] == ending


def test_signing_out_ends_the_session_for_good(api: dict[str, Any]) -> None:
    client = api["client"]
    alice = sign_in(client, api["tokens"]["alice"])
    out = client.post("/sign-out", data=alice.form(), headers=alice.headers, follow_redirects=False)
    assert (out.status_code, out.headers["location"]) == (303, "/sign-in")
    again = client.get("/jobs", headers=alice.headers, follow_redirects=False)
    assert again.status_code == 303
    assert again.headers["location"].startswith("/sign-in")


def test_revoking_a_person_ends_their_sessions(api: dict[str, Any]) -> None:
    client = api["client"]
    bob = sign_in(client, api["tokens"]["bob"])
    assert client.get("/jobs", headers=bob.headers).status_code == 200
    api["db"].users.revoke_user("bob", now=datetime.now(UTC))
    assert client.get("/jobs", headers=bob.headers, follow_redirects=False).status_code == 303


def test_a_session_expires(api: dict[str, Any]) -> None:
    now = [datetime.now(UTC)]
    service = SessionService(
        sessions=api["db"].sessions,
        people=PeopleService(users=api["db"].users),
        lifetime=timedelta(hours=1),
        clock=lambda: now[0],
    )
    started = service.sign_in(api["tokens"]["alice"], client="10.0.0.1")
    assert service.user_of(started.session_id) is not None
    now[0] += timedelta(minutes=61)
    assert service.user_of(started.session_id) is None


def test_failed_sign_ins_make_that_address_wait(api: dict[str, Any]) -> None:
    moment = [0.0]
    service = SessionService(
        sessions=api["db"].sessions,
        people=PeopleService(users=api["db"].users),
        failures_per_minute=3,
        monotonic=lambda: moment[0],
    )
    for _ in range(3):
        with pytest.raises(Exception, match="unknown or revoked"):
            service.sign_in("rxp_wrong", client="10.0.0.9")
    with pytest.raises(SignInLimitError) as waiting:
        service.sign_in(api["tokens"]["alice"], client="10.0.0.9")  # the right one too
    assert 1 <= waiting.value.retry_after <= 61
    assert service.sign_in(api["tokens"]["alice"], client="10.0.0.10").user.name == "alice"
    moment[0] += 61
    assert service.sign_in(api["tokens"]["alice"], client="10.0.0.9").user.name == "alice"


def test_the_sign_in_limit_is_a_page_with_retry_after(api: dict[str, Any]) -> None:
    client = TestClient(
        runtime_for(api["db"], api["catalog"], api["objects"], sign_in_failures_per_minute=2).app()
    )
    form = client.get("/sign-in")
    value = re.search(r'name="form_token" value="([^"]+)"', form.text)
    assert value is not None
    answers = [
        client.post("/sign-in", data={"token": "rxp_wrong", "form_token": value.group(1)})
        for _ in range(3)
    ]
    assert [a.status_code for a in answers] == [401, 401, 429]
    assert answers[-1].headers["content-type"] == HTML
    assert "Too many sign-in attempts" in answers[-1].text
    assert int(answers[-1].headers["retry-after"]) >= 1


def test_behind_a_trusted_proxy_the_client_cannot_choose_its_counted_address(
    api: dict[str, Any],
) -> None:
    """HAProxy's `option forwardfor` adds its own X-Forwarded-For line after any the client
    sent; nginx appends to the one line. Either way the address counted is the proxy's last."""
    client = TestClient(
        runtime_for(
            api["db"], api["catalog"], api["objects"],
            trust_forwarded_headers=True, sign_in_failures_per_minute=2,
        ).app()
    )  # fmt: skip

    def haproxy(spoof: str) -> list[tuple[str, str]]:  # a line of its own after the client's
        return [("X-Forwarded-For", spoof), ("X-Forwarded-For", "198.51.100.7")]

    def nginx(spoof: str) -> list[tuple[str, str]]:  # appended to the client's line
        return [("X-Forwarded-For", f"{spoof}, 198.51.100.8")]

    for shape in (haproxy, nginx):
        form = client.get("/sign-in")
        value = re.search(r'name="form_token" value="([^"]+)"', form.text)
        assert value is not None
        answers = [
            client.post(
                "/sign-in",
                data={"token": "rxp_wrong", "form_token": value.group(1)},
                headers=shape(f"10.0.0.{attempt}"),
            )
            for attempt in range(3)
        ]
        assert [a.status_code for a in answers] == [401, 401, 429], shape.__name__


def test_signing_in_needs_the_forms_own_value(api: dict[str, Any]) -> None:
    """No other site can sign a browser in as someone else (login CSRF)."""
    client = api["client"]
    client.cookies.clear()
    forged = client.post("/sign-in", data={"token": api["tokens"]["alice"], "form_token": "x" * 43})
    assert forged.status_code == 400
    assert "rx_session" not in forged.headers.get("set-cookie", "")


def test_cookies_are_secure_behind_a_trusted_https_proxy(api: dict[str, Any]) -> None:
    for trusted, secure in ((True, True), (False, False)):
        client = TestClient(
            runtime_for(
                api["db"], api["catalog"], api["objects"], trust_forwarded_headers=trusted
            ).app()
        )
        signed = client.get("/sign-in", headers={"X-Forwarded-Proto": "https"})
        value = re.search(r'name="form_token" value="([^"]+)"', signed.text)
        assert value is not None
        pre = signed.cookies["rx_sign_in"]  # a Secure cookie: sent by hand over plain HTTP
        client.cookies.clear()
        answer = client.post(
            "/sign-in",
            data={"token": api["tokens"]["alice"], "form_token": value.group(1)},
            headers={"X-Forwarded-Proto": "https", "Cookie": f"rx_sign_in={pre}"},
            follow_redirects=False,
        )
        cookie = next(v for k, v in answer.headers.multi_items() if v.startswith("rx_session="))
        assert ("Secure" in cookie) is secure


PAGES = (
    "/sign-in", "/lifecycle", "/jobs", "/exports/new", "/jobs/abc", "/nowhere", "/docs",
    "/schedules", "/operators", "/operators/audit",
)  # fmt: skip


@pytest.mark.parametrize("path", PAGES)
def test_every_page_sends_the_security_headers(api: dict[str, Any], path: str) -> None:
    client = api["client"]
    alice = sign_in(client, api["tokens"]["alice"])
    page = client.get(path, headers={**alice.headers, "Accept": "text/html"})
    assert page.headers["content-type"] == HTML, path
    policy = page.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "same-origin"


def templates(folder: Any) -> Iterator[Any]:
    for entry in folder.iterdir():
        if entry.is_dir():
            yield from templates(entry)
        else:
            yield entry


def test_no_template_holds_inline_script_or_event_attributes() -> None:
    found = list(templates(resources.files("reportexport.web.dashboard") / "templates"))
    assert any(t.name == "side_effects.html" for t in found)  # the operators' folder too
    for template in found:
        text = template.read_text(encoding="utf-8")
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), template.name
        assert not re.search(r"\son[a-z]+\s*=", text), template.name
        assert "style=" not in text, template.name
