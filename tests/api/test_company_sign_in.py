"""Company sign-in against a real OpenID Connect provider on loopback (oidc-provider-mock):
the first sign-in makes the person with the provider's name, e-mail, groups and attributes; a
person the provider refuses starts no session; an open session is checked with the provider
again, and what the provider took away is withdrawn at once (recorded as the identity
provider's doing); a revoked grant ends the session."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterator
from datetime import timedelta
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient

from reportexport.core.records import AuditFilter, JobId
from reportexport.objects import ObjectStore
from reportexport.services.exports import Acting
from reportexport.store import Database
from tests.helpers import API_QUERIES, catalog_for, runtime_for

HTML = "text/html; charset=utf-8"
QUERIES: dict[str, Any] = {
    **API_QUERIES,
    "invoices": {
        "source": "demo",
        "title": "Invoices of the finance team",
        "sql": "SELECT order_id, amount FROM orders WHERE order_id < 20",
        "access": ["finance"],
    },
}


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:

    # Authlib's own "always" filter first, so that the one below comes before it.
    importlib.import_module("authlib.deprecate")
    with warnings.catch_warnings():  # the test double imports Authlib's deprecated jose
        warnings.simplefilter("ignore", DeprecationWarning)
        from oidc_provider_mock import run_server_in_thread

    with run_server_in_thread() as server:
        yield f"http://127.0.0.1:{server.server_port}"


@pytest.fixture
def site(
    provider: str, jobs_db: Database, local_objects: ObjectStore, sources_dir: Path
) -> Iterator[dict[str, Any]]:
    catalog = catalog_for(sources_dir, None, QUERIES)
    jobs_db.users.add_user("olga", "operator")
    runtime = runtime_for(
        jobs_db, catalog, local_objects, public_url="http://testserver",
        oidc_issuer=provider, oidc_client_id="reportexport", oidc_client_secret="s3cret",
        oidc_group_map="Finance Team=finance", oidc_attribute_claims="country=country",
    )  # fmt: skip
    runtime.access.create_group(Acting(name="olga", role="operator"), "finance")
    with TestClient(runtime.app()) as client:
        yield {"client": client, "runtime": runtime, "db": jobs_db, "provider": provider}


def set_claims(site: dict[str, Any], sub: str, **claims: Any) -> None:
    answer = httpx.put(f"{site['provider']}/users/{sub}", json=claims, timeout=10)
    assert answer.status_code == 204, answer.text


def sign_in(site: dict[str, Any], sub: str, *, deny: bool = False) -> Any:
    """The browser's journey: our page sends it to the provider, the person picks `sub` there
    (or denies), the provider sends it back to our callback."""
    client = site["client"]
    client.cookies.clear()
    started = client.get("/sign-in/company?next=/schedules", follow_redirects=False)
    assert started.status_code == 303, started.text
    authorize = started.headers["location"]
    assert authorize.startswith(site["provider"])
    assert "code_challenge=" in authorize
    assert "nonce=" in authorize
    form = {"action": "deny"} if deny else {"sub": sub}
    back = httpx.post(authorize, data=form, follow_redirects=False, timeout=10)
    assert back.status_code == 302, back.text
    target = urlsplit(back.headers["location"])
    assert target.path == "/sign-in/company/callback"
    return client.get(f"{target.path}?{target.query}", follow_redirects=False)


def test_the_first_sign_in_makes_the_person_with_the_providers_groups(
    site: dict[str, Any],
) -> None:
    set_claims(site, "sub-carol", preferred_username="carol", email="carol@example.com",
               groups=["Finance Team", "Other"], country="FR")  # fmt: skip
    done = sign_in(site, "sub-carol")
    assert (done.status_code, done.headers["location"]) == (303, "/schedules")
    session = done.cookies["rx_session"]
    carol = site["db"].users.user_by_name("carol")
    assert carol is not None
    assert carol.role == "user"
    access = site["db"].groups.access_of("carol")
    assert access.groups == (("finance", "provider"),)
    assert access.attributes == (("country", "FR", "provider"),)
    page = site["client"].get("/exports/new", headers={"Cookie": f"rx_session={session}"})
    assert "Invoices of the finance team" in page.text
    made = site["db"].audit.entries(AuditFilter(action="add_person", limit=5)).records
    assert [(r.person, r.object_id) for r in made] == [("identity provider", "carol")]
    # The same subject again is the same person, whatever name it now gives.
    set_claims(site, "sub-carol", preferred_username="carol2", groups=["Finance Team"])
    assert sign_in(site, "sub-carol").status_code == 303
    assert site["db"].users.user_by_name("carol2") is None


def test_a_person_the_provider_refuses_starts_no_session(site: dict[str, Any]) -> None:
    refused = sign_in(site, "sub-dave", deny=True)
    assert (refused.status_code, refused.headers["content-type"]) == (403, HTML)
    assert "Your company's sign-in refused: access_denied" in unescape(refused.text)
    assert "rx_session" not in refused.cookies
    assert site["db"].users.user_by_subject("sub-dave") is None


def test_a_known_person_the_provider_denies_next_time_starts_no_session(
    site: dict[str, Any],
) -> None:
    """Signed in once through the provider; denied there the next time: refused, no session,
    and the refusal counted."""
    set_claims(site, "sub-gina", preferred_username="gina", groups=[])
    assert sign_in(site, "sub-gina").status_code == 303
    refused = sign_in(site, "sub-gina", deny=True)
    assert (refused.status_code, refused.headers["content-type"]) == (403, HTML)
    assert "Your company's sign-in refused: access_denied" in unescape(refused.text)
    assert "rx_session" not in refused.cookies
    after = site["client"].get("/jobs", follow_redirects=False)
    assert (after.status_code, after.headers["location"][:8]) == (303, "/sign-in")
    metrics = site["client"].get("/metrics").text
    assert 'reportexport_access_refusals_total{path="sign_in",rule="provider"} 1.0' in metrics


def test_a_suspended_person_is_refused_at_sign_in_with_the_reason(site: dict[str, Any]) -> None:
    """The provider still lets them in, but an operator suspended them: no session, and the
    page says who suspended them and why."""
    set_claims(site, "sub-hal", preferred_username="hal", groups=[])
    assert sign_in(site, "sub-hal").status_code == 303
    site["runtime"].access.suspend(Acting(name="olga", role="operator"), "hal", "on leave")
    refused = sign_in(site, "sub-hal")
    assert (refused.status_code, refused.headers["content-type"]) == (403, HTML)
    assert "Hal may not sign in here: olga suspended them: on leave." in unescape(refused.text)
    assert "rx_session" not in refused.cookies
    metrics = site["client"].get("/metrics").text
    assert 'reportexport_access_refusals_total{path="sign_in",rule="suspended"} 1.0' in metrics


def test_the_providers_membership_changes_are_in_the_audit(site: dict[str, Any]) -> None:
    """Groups the provider gives or takes away at sign-in are audited as the operators'
    changes are, the person acting being the identity provider."""
    set_claims(site, "sub-ivy", preferred_username="ivy", groups=["Finance Team"], country="FR")
    assert sign_in(site, "sub-ivy").status_code == 303
    set_claims(site, "sub-ivy", preferred_username="ivy", groups=[], country="FR")
    assert sign_in(site, "sub-ivy").status_code == 303
    entries = site["db"].audit.entries(AuditFilter(person="identity provider", limit=20)).records
    said = [(r.action, r.object_id, r.detail) for r in reversed(entries)]
    assert said == [
        ("add_person", "ivy", "at their first company sign-in"),
        ("add_member", "finance", "added ivy"),
        ("set_attribute", "ivy", "country = FR"),
        ("remove_member", "finance", "removed ivy"),
    ]


def test_a_callback_with_another_state_is_refused(site: dict[str, Any]) -> None:
    client = site["client"]
    client.cookies.clear()
    client.get("/sign-in/company", follow_redirects=False)
    forged = client.get("/sign-in/company/callback?code=abc&state=forged")
    assert forged.status_code == 403
    assert "did not start here" in unescape(forged.text)


def test_an_open_session_is_checked_again_and_the_loss_withdrawn_at_once(
    site: dict[str, Any],
) -> None:
    set_claims(site, "sub-erin", preferred_username="erin", groups=["Finance Team"],
               country="DE")  # fmt: skip
    session = sign_in(site, "sub-erin").cookies["rx_session"]
    cookie = {"Cookie": f"rx_session={session}"}
    erin = Acting(name="erin", role="user")
    job = site["runtime"].exports.create(erin, "invoices", {}).job
    company = site["runtime"].company_sign_in
    real = company.clock
    # Within the bound, the provider is not asked: what it says meanwhile waits.
    set_claims(site, "sub-erin", preferred_username="erin", groups=[], country="DE")
    assert site["client"].get("/jobs", headers=cookie).status_code == 200
    assert site["db"].jobs.get_job(JobId(job.id)).job.status == "queued"
    company.clock = lambda: real() + timedelta(minutes=16)  # past oidc_recheck_minutes (15)
    assert site["client"].get("/jobs", headers=cookie).status_code == 200  # still signed in
    detail = site["db"].jobs.get_job(JobId(job.id))
    assert detail.job.status == "canceled"
    last = detail.history[-1]
    assert (last.actor, last.person) == ("user", "identity provider")
    assert "the identity provider took away the group finance" in (last.reason or "")
    assert site["db"].groups.access_of("erin").groups == ()
    cancels = site["db"].audit.entries(AuditFilter(action="cancel_job", limit=5)).records
    assert [(r.person, r.object_id) for r in cancels] == [("identity provider", str(job.id))]

    # The provider revokes the grant: the next check ends the session.
    revoked = httpx.post(f"{site['provider']}/users/sub-erin/revoke-tokens", timeout=10)
    assert revoked.status_code == 204
    company.clock = lambda: real() + timedelta(minutes=40)
    ended = site["client"].get("/jobs", headers=cookie, follow_redirects=False)
    assert ended.status_code == 303
    assert ended.headers["location"].startswith("/sign-in")
    company.clock = real
    again = site["client"].get("/jobs", headers=cookie, follow_redirects=False)
    assert again.status_code == 303  # ended for good, not only while the provider refuses


def test_without_a_provider_there_is_no_company_sign_in(
    jobs_db: Database, local_objects: ObjectStore, sources_dir: Path
) -> None:
    runtime = runtime_for(jobs_db, catalog_for(sources_dir, None, API_QUERIES), local_objects)
    with TestClient(runtime.app()) as client:
        assert client.get("/sign-in/company").status_code == 404
        assert "company-sign-in" not in client.get("/sign-in").text
