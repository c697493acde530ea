"""A local store's download link behaves as browsers and download managers expect."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any

import pytest

from reportexport.core.links import sign_download
from reportexport.runners.worker import Worker, WorkerSettings
from reportexport.web.api.ranges import Part, Unsatisfiable, requested_part
from tests.dashboard_session import sign_in
from tests.helpers import auth, create


@pytest.fixture
def finished(api: dict[str, Any]) -> dict[str, Any]:
    """A succeeded job of alice's, its signed link and its bytes."""
    client, db = api["client"], api["db"]
    job_id = create(api).json()["id"]
    worker = Worker(db, api["catalog"], api["objects"], WorkerSettings(poll_seconds=0.1))
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while db.jobs.get_job(job_id).job.finished_at is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        worker.stop(grace_seconds=0)
    job = db.jobs.get_job(job_id).job
    assert job.status == "succeeded"
    link = client.get(
        f"/api/exports/{job_id}/download", headers=auth(api, "alice"), follow_redirects=False
    ).headers["location"]
    with api["objects"].read(job.object_key) as handle:
        content = handle.read()
    return {"job": job, "link": link, "content": content}


def test_head_answers_the_headers_of_the_file(
    api: dict[str, Any], finished: dict[str, Any]
) -> None:
    head = api["client"].head(finished["link"])
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == str(len(finished["content"]))
    assert head.headers["accept-ranges"] == "bytes"
    assert head.headers["etag"].startswith('"')
    assert head.headers["last-modified"].endswith("GMT")
    assert head.headers["content-disposition"] == (
        f'attachment; filename="{finished["job"].file_name}"'
    )


def test_one_range_is_a_206_with_that_part(api: dict[str, Any], finished: dict[str, Any]) -> None:
    content = finished["content"]
    for header, part in (("bytes=0-9", content[:10]), ("bytes=5-", content[5:]),
                         ("bytes=-4", content[-4:])):  # fmt: skip
        answer = api["client"].get(finished["link"], headers={"Range": header})
        assert answer.status_code == 206, header
        assert answer.content == part
        assert answer.headers["content-length"] == str(len(part))
        start = (
            len(content) - len(part)
            if header.startswith("bytes=-")
            else int(header[6:].split("-")[0])
        )
        assert answer.headers["content-range"] == (
            f"bytes {start}-{start + len(part) - 1}/{len(content)}"
        )


def test_a_range_past_the_end_is_416(api: dict[str, Any], finished: dict[str, Any]) -> None:
    size = len(finished["content"])
    answer = api["client"].get(finished["link"], headers={"Range": f"bytes={size}-"})
    assert answer.status_code == 416
    assert answer.headers["content-range"] == f"bytes */{size}"
    assert answer.headers["content-type"] == "application/problem+json"


def test_several_ranges_or_a_stale_if_range_get_the_whole_file(
    api: dict[str, Any], finished: dict[str, Any]
) -> None:
    client = api["client"]
    several = client.get(finished["link"], headers={"Range": "bytes=0-1,4-5"})
    assert (several.status_code, several.content) == (200, finished["content"])
    stale = client.get(finished["link"], headers={"Range": "bytes=0-1", "If-Range": '"other"'})
    assert (stale.status_code, stale.content) == (200, finished["content"])
    etag = several.headers["etag"]
    fresh = client.get(finished["link"], headers={"Range": "bytes=0-1", "If-Range": etag})
    assert (fresh.status_code, fresh.content) == (206, finished["content"][:2])
    unchanged = client.get(finished["link"], headers={"If-None-Match": etag})
    assert (unchanged.status_code, unchanged.content) == (304, b"")


def test_if_modified_since_is_answered_304_when_the_file_has_not_changed(
    api: dict[str, Any], finished: dict[str, Any]
) -> None:
    client, link = api["client"], finished["link"]
    first = client.get(link)
    stamp = first.headers["last-modified"]
    for method in ("GET", "HEAD"):
        again = client.request(method, link, headers={"If-Modified-Since": stamp})
        assert (again.status_code, again.content) == (304, b""), method
        assert (again.headers["etag"], again.headers["last-modified"]) == (
            first.headers["etag"], stamp
        )  # fmt: skip
    modified = parsedate_to_datetime(stamp)
    for since, status in (
        (format_datetime(modified - timedelta(seconds=1), usegmt=True), 200),  # changed since
        (format_datetime(modified + timedelta(days=1), usegmt=True), 200),  # a future date
        ("not a date", 200),
        (format_datetime(datetime.now(UTC), usegmt=True), 304),
    ):
        answer = client.get(link, headers={"If-Modified-Since": since})
        assert answer.status_code == status, since
    # If-None-Match decides when both are sent; a Range of an unchanged file is still 304.
    mismatched = {"If-Modified-Since": stamp, "If-None-Match": '"other"'}
    assert client.get(link, headers=mismatched).status_code == 200
    ranged = client.get(link, headers={"If-Modified-Since": stamp, "Range": "bytes=0-9"})
    assert ranged.status_code == 304


def test_an_expired_link_is_a_page_for_a_browser_and_a_problem_for_a_client(
    api: dict[str, Any], finished: dict[str, Any]
) -> None:
    client = api["client"]
    alice = sign_in(client, api["tokens"]["alice"])
    expired = sign_download(b"secret", finished["job"].object_key, "x.csv", -1)
    browser = {**alice.headers, "Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    page = client.get(f"/api/downloads/{expired}", headers=browser)
    assert (page.status_code, page.headers["content-type"]) == (410, "text/html; charset=utf-8")
    assert "This download link has expired" in page.text
    assert "Back to your exports" in page.text
    problem = client.get(f"/api/downloads/{expired}", headers={"Accept": "application/json"})
    assert (problem.status_code, problem.headers["content-type"]) == (
        410,
        "application/problem+json",
    )


def test_the_dashboards_download_goes_to_the_signed_link(
    api: dict[str, Any], finished: dict[str, Any]
) -> None:
    client = api["client"]
    alice = sign_in(client, api["tokens"]["alice"])
    job_id = finished["job"].id
    answer = client.get(f"/jobs/{job_id}/download", headers=alice.headers, follow_redirects=False)
    assert answer.status_code == 302
    assert answer.headers["location"].startswith("/api/downloads/")
    bob = sign_in(client, api["tokens"]["bob"])
    foreign = client.get(f"/jobs/{job_id}/download", headers=bob.headers)
    assert foreign.status_code == 404
    assert "There is no export" in foreign.text


@pytest.mark.parametrize(
    ("header", "size", "expected"),
    [
        (None, 10, None),
        ("bytes=0-0", 10, Part(0, 0)),
        ("bytes=2-100", 10, Part(2, 9)),
        ("bytes=-100", 10, Part(0, 9)),
        ("items=0-1", 10, None),
        ("bytes=5-2", 10, None),
        ("bytes=-", 10, None),
    ],
)
def test_requested_part(header: str | None, size: int, expected: Part | None) -> None:
    assert requested_part(header, size) == expected


@pytest.mark.parametrize(("header", "size"), [("bytes=10-", 10), ("bytes=-0", 10), ("bytes=-5", 0)])
def test_unsatisfiable_ranges(header: str, size: int) -> None:
    with pytest.raises(Unsatisfiable):
        requested_part(header, size)


def test_an_expired_file_offers_to_run_again(api: dict[str, Any]) -> None:
    """A file kept for no time at all: its page says it expired and offers a rerun."""
    client, db = api["client"], api["db"]
    job_id = create(api).json()["id"]
    settings = WorkerSettings(poll_seconds=0.1, retention_seconds=0)
    worker = Worker(db, api["catalog"], api["objects"], settings)
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while db.jobs.get_job(job_id).job.finished_at is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        worker.stop(grace_seconds=0)
    alice = sign_in(client, api["tokens"]["alice"])
    page = client.get(f"/jobs/{job_id}", headers=alice.headers)
    assert "The file of this export expired" in page.text
    assert 'id="download"' not in page.text
    assert 'class="primary" id="rerun"' in page.text
    gone = client.get(f"/jobs/{job_id}/download", headers=alice.headers)
    assert (gone.status_code, gone.headers["content-type"]) == (410, "text/html; charset=utf-8")
    assert "This file has expired" in gone.text
    assert f'action="/jobs/{job_id}/rerun"' in gone.text
    assert alice.csrf in gone.text  # its Run again form works as it is
    # The moment is a <time> the page's script shows in the reader's own words, never ISO text.
    expires = db.jobs.get_job(job_id).job.object_expires_at
    assert expires.isoformat() not in gone.text
    assert re.search(r'expired <time datetime="[^"]+Z" data-style="exact">', gone.text)
    listed = client.get("/jobs", headers=alice.headers).text
    row = re.search(rf'<tr data-job="{job_id}".*?</tr>', listed, re.S)
    assert row is not None
    assert "Download" not in row.group(0)  # the list offers no file that is gone
    assert "File expired" in row.group(0)


def test_an_action_opened_as_a_page_is_a_page(api: dict[str, Any]) -> None:
    client = api["client"]
    alice = sign_in(client, api["tokens"]["alice"])
    page = client.get("/jobs/1/cancel", headers={**alice.headers, "Accept": "text/html"})
    assert (page.status_code, page.headers["content-type"]) == (405, "text/html; charset=utf-8")
    assert page.headers["allow"] == "POST"
    assert "Back to your exports" in page.text


def test_a_second_run_of_the_same_parameters_estimates_from_the_first(
    api: dict[str, Any], finished: dict[str, Any]
) -> None:
    client = api["client"]
    again = create(api).json()["id"]  # the same saved query and parameters, still queued
    alice = sign_in(client, api["tokens"]["alice"])
    page = client.get(f"/jobs/{again}", headers=alice.headers)
    first = finished["job"]
    assert f'data-estimate-bytes="{first.object_bytes}"' in page.text
    assert f'The last run of these parameters (<a href="/jobs/{first.id}">' in page.text
    other = create(api, parameters={"category": "books"}).json()["id"]
    assert (
        "The last run of these parameters"
        not in client.get(f"/jobs/{other}", headers=alice.headers).text
    )
