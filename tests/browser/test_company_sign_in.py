"""Company sign-in in a real headless Chromium, at a desktop and a phone viewport, against a
real OpenID Connect provider on loopback (oidc-provider-mock): a person signs in through the
provider's page, is made with the provider's groups and attributes, and sees the finance query
and their country's one; a person the provider refuses is told so on the sign-in page. Each
page is checked by axe-core and photographed under var/screenshots/."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.browser.pages import Watched, accessible, fits, require_chromium, serving, shot


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    importlib.import_module("authlib.deprecate")  # its "always" filter before ours
    with warnings.catch_warnings():  # the test double imports Authlib's deprecated jose
        warnings.simplefilter("ignore", DeprecationWarning)
        from oidc_provider_mock import run_server_in_thread
    with run_server_in_thread() as server:
        yield f"http://127.0.0.1:{server.server_port}"


@pytest.fixture(scope="module")
def service(provider: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_chromium()
    home = tmp_path_factory.mktemp("company") / "var"
    settings = {"oidc_issuer": provider, "oidc_client_id": "reportexport",
                "oidc_client_secret": "s3cret", "oidc_group_map": "Finance Team=finance",
                "oidc_attribute_claims": "country=country"}  # fmt: skip
    # The provider sends the browser back to `public_url`: serve is told its port beforehand.
    with serving(home, port_told=True, **settings) as running:
        yield {**running, "provider": provider}


def through_the_provider(seen: Watched, sub: str, *, deny: bool = False) -> None:
    page = seen.page
    page.goto("/sign-in")
    accessible(page)
    page.click("#company-sign-in")
    page.wait_for_selector("input[name=sub]")
    if deny:
        page.click("button[value=deny]")
    else:
        page.fill("input[name=sub]", sub)
        page.click("form button[type=submit]:has-text('Authorize')")


def test_signing_in_through_the_provider_makes_the_person_with_its_groups(
    service: dict[str, Any], watched: Watched
) -> None:
    sub = f"sub-frank-{watched.viewport}"
    claims = {"preferred_username": f"frank-{watched.viewport}", "groups": ["Finance Team"],
              "country": "DE", "email": "frank@example.com"}  # fmt: skip
    assert httpx.put(f"{service['provider']}/users/{sub}", json=claims).status_code == 204
    through_the_provider(watched, sub)
    page = watched.page
    page.wait_for_url("**/jobs")
    assert f"Signed in as frank-{watched.viewport}" in page.text_content("#flash")
    accessible(page)
    page.goto("/exports/new")
    offered = page.text_content("main")
    assert "Revenue by month (finance)" in offered
    assert "Customers of my country" in offered
    accessible(page)
    fits(page)
    shot(watched, "company-sign-in-new-export")


def test_a_person_the_provider_refuses_is_told_so(
    service: dict[str, Any], watched: Watched
) -> None:
    through_the_provider(watched, "", deny=True)
    page = watched.page
    page.wait_for_selector("#sign-in-problem")
    assert "sign-in refused: access_denied" in page.text_content("#sign-in-problem")
    assert page.context.cookies() == [] or all(
        c["name"] != "rx_session" for c in page.context.cookies()
    )
    accessible(page)
    shot(watched, "company-sign-in-refused")
