"""Chat channels over HTTP: operators register (only on a host `chat_hosts` names, through the
webhooks' URL checks), list (without URLs) and remove them; refusals are problem details that
name what was wrong; the document's URL pattern says which hosts are allowed; a job lists its
chat deliveries."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport.objects import ObjectStore
from reportexport.store import Database
from tests.helpers import API_QUERIES, catalog_for, failed_job, runtime_for

SLACK = "https://hooks.slack.com/services/T000/B000/secret-part"


def client_for(
    db: Database, objects: ObjectStore, sources_dir: Path, **settings: Any
) -> TestClient:
    catalog = catalog_for(sources_dir, None, API_QUERIES)
    return TestClient(runtime_for(db, catalog, objects, **settings).app())


@pytest.fixture
def api(
    jobs_db: Database, local_objects: ObjectStore, sources_dir: Path
) -> Iterator[dict[str, Any]]:
    people = (("alice", "user"), ("olga", "operator"))
    tokens = {name: jobs_db.users.add_user(name, role)[1] for name, role in people}
    with client_for(jobs_db, local_objects, sources_dir,
                    chat_hosts="hooks.slack.com, chat.example.org") as client:  # fmt: skip
        yield {"client": client, "tokens": tokens, "db": jobs_db}


def as_(api: dict[str, Any], who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api['tokens'][who]}"}


def add(api: dict[str, Any], who: str = "olga", **body: Any) -> Any:
    payload = {"url": SLACK, "name": "#exports", "owner": None, **body}
    return api["client"].post("/api/chat-channels", json=payload, headers=as_(api, who))


def test_an_operator_registers_lists_and_removes_a_channel_whose_url_is_never_shown(
    api: dict[str, Any],
) -> None:
    made = add(api, owner="alice", name="@alice")
    assert made.status_code == 201, made.text
    channel = made.json()
    assert (channel["owner"], channel["name"], channel["host"]) == (
        "alice",
        "@alice",
        "hooks.slack.com",
    )
    assert "url" not in channel
    assert add(api).status_code == 201  # everyone's
    listed = api["client"].get("/api/chat-channels", headers=as_(api, "olga")).json()
    assert [(c["owner"], c["name"]) for c in listed] == [("alice", "@alice"), (None, "#exports")]
    assert "secret-part" not in str(listed)

    gone = api["client"].delete(f"/api/chat-channels/{channel['id']}", headers=as_(api, "olga"))
    assert gone.status_code == 204
    (removed, _) = api["client"].get("/api/chat-channels", headers=as_(api, "olga")).json()
    assert removed["disabled_reason"] == "removed by olga"
    missing = api["client"].delete("/api/chat-channels/999", headers=as_(api, "olga"))
    assert (missing.status_code, missing.json()["detail"]) == (404, "no chat channel 999")
    audit = api["client"].get("/api/audit?object_kind=chat_channel", headers=as_(api, "olga"))
    assert [(e["action"], e["object_id"]) for e in audit.json()["entries"]] == [
        ("remove_chat_channel", str(channel["id"])),
        ("add_chat_channel", str(channel["id"] + 1)),
        ("add_chat_channel", str(channel["id"])),
    ]


def test_only_operators_manage_chat_channels(api: dict[str, Any]) -> None:
    for answer in (
        add(api, who="alice", owner="alice"),
        api["client"].get("/api/chat-channels", headers=as_(api, "alice")),
        api["client"].delete("/api/chat-channels/1", headers=as_(api, "alice")),
    ):
        assert answer.status_code == 403
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["detail"] == "only operators manage chat channels"


@pytest.mark.parametrize(
    ("body", "status", "title", "detail"),
    [
        (
            {"url": "https://evil.example.com/hook"},
            422,
            "Chat host not allowed",
            "evil.example.com is not a chat host allowed here "
            "(chat_hosts: hooks.slack.com, chat.example.org)",
        ),
        (
            {"url": "http://127.0.0.1:9/hook"},
            422,
            "Unsafe chat URL",
            "127.0.0.1 is an address: webhook URLs name their host (addresses are for "
            "development, with webhooks_allow_private)",
        ),
        (
            {"url": "https://user:pw@hooks.slack.com/x"},
            422,
            "Unsafe chat URL",
            "credentials in webhook URLs are not accepted",
        ),
        ({"owner": "nobody"}, 404, "Not found", "no person named 'nobody'"),
    ],
)
def test_a_refused_channel_is_a_problem_naming_what_was_wrong(
    api: dict[str, Any], body: dict[str, Any], status: int, title: str, detail: str
) -> None:
    answer = add(api, **body)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    assert (problem["title"], problem["detail"]) == (title, detail)
    assert api["client"].get("/api/chat-channels", headers=as_(api, "olga")).json() == []


def test_with_no_chat_host_set_every_channel_is_refused_and_the_document_says_so(
    jobs_db: Database, local_objects: ObjectStore, sources_dir: Path
) -> None:
    token = jobs_db.users.add_user("olga", "operator")[1]
    with client_for(jobs_db, local_objects, sources_dir) as client:
        answer = client.post(
            "/api/chat-channels",
            json={"url": SLACK, "name": "#exports", "owner": None},
            headers={"Authorization": f"Bearer {token}"},
        )
        document = client.get("/openapi.json").json()
    assert answer.status_code == 422
    assert answer.json()["detail"] == (
        "no chat host is allowed here: the setting chat_hosts is empty (an operator names the "
        "chat service's host there, such as hooks.slack.com)"
    )
    url = document["components"]["schemas"]["ChatChannelIn"]["properties"]["url"]
    assert re.search(url["pattern"], SLACK) is None
    assert "none here: it is empty" in url["description"]


def test_the_documents_url_pattern_takes_exactly_the_allowed_hosts(api: dict[str, Any]) -> None:
    document = api["client"].get("/openapi.json").json()
    pattern = document["components"]["schemas"]["ChatChannelIn"]["properties"]["url"]["pattern"]
    for url, allowed in (
        (SLACK, True),
        ("https://HOOKS.Slack.com/services/x", True),
        ("https://chat.example.org:8065/hooks/abc", True),
        ("https://hooks.slack.com.evil.example/x", False),
        ("https://xhooks.slack.com/x", False),
        ("https://evil.example.com/hook", False),
    ):
        assert (re.search(pattern, url) is not None) == allowed, url
        answer = add(api, url=url)
        assert (answer.status_code == 201) == allowed, (url, answer.text)


def test_a_job_lists_its_chat_delivery(api: dict[str, Any]) -> None:
    channel = add(api, owner="alice").json()
    job_id = failed_job(api["db"])
    job = api["client"].get(f"/api/exports/{job_id}", headers=as_(api, "alice")).json()
    (delivery,) = job["deliveries"]
    assert (delivery["channel_id"], delivery["endpoint_id"], delivery["address"]) == (
        channel["id"],
        None,
        None,
    )
    assert delivery["attempts"] == 0
