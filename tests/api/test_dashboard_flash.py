"""What the dashboard says once after an action (its flash message) is true when the next page
shows it: a job may have moved on in between, so the message states no status of its own."""

from __future__ import annotations

from html import unescape
from typing import Any

import pytest

from reportexport.store import Database, Outcome
from tests.dashboard_session import sign_in
from tests.helpers import auth, create

HTML = "text/html; charset=utf-8"


def run_to_success(db: Database) -> int:
    """A worker takes the queued export and finishes it at once."""
    (claim,) = db.queue.claim_jobs("w1", limit=1, lease_seconds=60)
    assert db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="succeeded")]) == [True]
    return claim.lease.job_id


@pytest.mark.parametrize("action", ["new export", "rerun"])
def test_the_message_after_an_export_is_made_states_no_status_that_has_gone_stale(
    api: dict[str, Any], action: str
) -> None:
    """The export succeeds between the form's answer and the page it leads to: the page says
    it succeeded and its message does not say it is queued."""
    client, db = api["client"], api["db"]
    alice = sign_in(client, api["tokens"]["alice"])
    if action == "new export":
        fields = {"saved-query": "products", "category": "toys", "form-key": "k-1"}
        answer = client.post("/exports/new", data=alice.form(**fields), headers=alice.headers,
                             follow_redirects=False)  # fmt: skip
    else:
        earlier = create(api).json()["id"]
        run_to_success(db)
        answer = client.post(f"/jobs/{earlier}/rerun", data=alice.form(key="k-2"),
                             headers=alice.headers, follow_redirects=False)  # fmt: skip
    assert answer.status_code == 303, answer.text
    made = run_to_success(db)
    assert answer.headers["location"] == f"/jobs/{made}"
    cookies = "; ".join([alice.headers["Cookie"], *(f"{k}={v}" for k, v in answer.cookies.items())])
    client.cookies.clear()
    shown = client.get(answer.headers["location"], headers={"Cookie": cookies})
    assert (shown.status_code, shown.headers["content-type"]) == (200, HTML)
    status = client.get(f"/api/exports/{made}", headers=auth(api, "alice")).json()["job"]
    assert status["status"] == "succeeded"
    flash = unescape(shown.text.split('id="flash">', 1)[1].split("</div>", 1)[0])
    assert flash.startswith(f"Export #{made} was created"), flash
    assert "queued" not in flash
    assert "runs" not in flash
