"""Every error is an RFC 9457 problem, the framework's own included, and nothing answers 500."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from reportexport.links import sign_download
from reportexport.store import JobFilter
from tests.api.test_api import api as api
from tests.api.test_api import auth, create

PROBLEM = "application/problem+json"
HTML = "text/html; charset=utf-8"


def is_problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body: dict[str, Any] = response.json()
    assert (body["status"], body["instance"]) == (status, response.request.url.path)
    return body


def post_json(api: dict[str, Any], path: str, body: bytes) -> Any:
    headers = {**auth(api, "alice"), "content-type": "application/json"}
    return api["client"].post(path, content=body, headers=headers)


def test_an_unknown_route_is_a_404_problem(api: dict[str, Any]) -> None:
    assert is_problem(api["client"].get("/api/nothing-here"), 404)["title"] == "Not Found"


def test_a_wrong_method_is_405_with_every_allowed_method(api: dict[str, Any]) -> None:
    client = api["client"]
    wrong = client.delete("/api/exports", headers=auth(api, "alice"))
    is_problem(wrong, 405)
    assert wrong.headers["allow"] == "GET, POST"  # both routes of the path, not the first only
    assert client.put("/api/webhooks/1", headers=auth(api, "alice")).headers["allow"] == "DELETE"


def test_malformed_json_is_400_and_a_form_body_is_415(api: dict[str, Any]) -> None:
    assert is_problem(post_json(api, "/api/exports", b'{"saved_query": '), 400)["title"] == (
        "Malformed JSON"
    )
    form = api["client"].post(
        "/api/exports", data={"saved_query": "products"}, headers=auth(api, "alice")
    )
    assert "application/json" in is_problem(form, 415)["detail"]


def test_a_problem_quoting_a_lone_surrogate_is_still_valid_utf8(api: dict[str, Any]) -> None:
    sent = b'{"saved_query": "products", "parameters": {"\\ud800": "x", "category": "toys"}}'
    refused = post_json(api, "/api/exports", sent)
    assert is_problem(refused, 422)["rule"] == "unknown"
    refused.content.decode("utf-8")


def test_a_poisoned_parameter_value_creates_no_job(api: dict[str, Any]) -> None:
    """The poison from the report: a valid JSON escape of a lone surrogate in free text (and
    NUL, which PostgreSQL's jsonb refuses while SQLite keeps it)."""
    for text in (b'"\\ud800"', b'"a\\u0000b"'):
        sent = b'{"saved_query": "search", "parameters": {"term": ' + text + b"}}"
        problem = is_problem(post_json(api, "/api/exports", sent), 422)
        assert (problem["parameter"], problem["rule"]) == ("term", "text")
    assert api["db"].list_jobs(JobFilter()).jobs == ()
    assert api["client"].get("/api/exports", headers=auth(api, "olga")).status_code == 200


def test_a_webhook_url_with_an_impossible_port_is_422(api: dict[str, Any]) -> None:
    refused = api["client"].post(
        "/api/webhooks",
        json={"url": "https://hooks.example.com:99999/x"},
        headers=auth(api, "alice"),
    )
    assert "port" in is_problem(refused, 422)["detail"]


def test_a_download_token_whose_key_leaves_the_store_is_403(api: dict[str, Any]) -> None:
    token = sign_download(b"secret", "../../etc/passwd", "x.csv", 60)
    problem = is_problem(api["client"].get(f"/api/downloads/{token}"), 403)
    assert "leaves the object store" in problem["detail"]


def test_dashboard_pages_for_missing_foreign_and_malformed_jobs_are_pages(
    api: dict[str, Any],
) -> None:
    client = api["client"]
    job_id = create(api).json()["id"]
    bob = {"Cookie": f"rx_token={api['tokens']['bob']}"}
    for path in ("/jobs/99999999999999999999", "/jobs/abc", f"/jobs/{job_id}", "/jobs/0"):
        page = client.get(path, headers=bob)
        assert (page.status_code, page.headers["content-type"]) == (404, HTML), path
        assert "No export" in page.text
    for path in ("/jobs/99999999999999999999/cancel", "/jobs/99999999999999999999/rerun",
                 f"/jobs/{job_id + 100}/rerun", f"/jobs/{job_id}/rerun"):  # fmt: skip
        page = client.post(path, headers=bob, follow_redirects=False)
        assert (page.status_code, page.headers["content-type"]) == (404, HTML), path


def test_webhooks_add_refuses_a_bad_port_and_an_unknown_owner_in_one_line(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "REPORTEXPORT_HOME": str(tmp_path)}
    cli = [sys.executable, "-m", "reportexport", "webhooks", "add"]
    for arguments, message in (
        (["https://hooks.example.com:99999/x", "--owner", "nobody"], "port must be a number"),
        (["https://hooks.example.com/x", "--owner", "nobody"], "no user named 'nobody'"),
    ):
        done = subprocess.run([*cli, *arguments], env=env, capture_output=True, text=True,
                              check=False)  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert message in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
