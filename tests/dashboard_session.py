"""Signing in to the dashboard as a browser does, for tests that drive its pages over HTTP."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from reportexport.services.sessions import SessionService


@dataclass(frozen=True)
class Signed:
    """A dashboard session: the Cookie header a browser would send, and its forms' token."""

    headers: dict[str, str]
    csrf: str
    session_id: str

    def form(self, **fields: str) -> dict[str, str]:
        return {"csrf-token": self.csrf, **fields}


def sign_in(client: Any, token: str) -> Signed:
    """Sign in through the form (its double-submitted value included); the client's own cookie
    jar is left empty, so several people can use one client."""
    client.cookies.clear()
    form = client.get("/sign-in")
    found = re.search(r'name="form_token" value="([^"]+)"', form.text)
    assert found is not None, form.text
    pre = form.cookies["rx_sign_in"]
    client.cookies.clear()
    answer = client.post(
        "/sign-in",
        data={"token": token, "form_token": found.group(1)},
        headers={"Cookie": f"rx_sign_in={pre}"},
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text
    session_id = answer.cookies["rx_session"]
    client.cookies.clear()
    return Signed(
        headers={"Cookie": f"rx_session={session_id}"},
        csrf=SessionService.csrf_token(session_id),
        session_id=session_id,
    )


def post_form(client: Any, who: Signed, path: str, **fields: str) -> Any:
    """The form sent, and the page it leads to with its one-time message, as a browser has."""
    answer = client.post(path, data=who.form(**fields), headers=who.headers,
                         follow_redirects=False)  # fmt: skip
    assert answer.status_code == 303, answer.text
    cookies = "; ".join([who.headers["Cookie"], *(f"{k}={v}" for k, v in answer.cookies.items())])
    client.cookies.clear()
    return client.get(answer.headers["location"], headers={"Cookie": cookies})
