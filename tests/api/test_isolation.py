"""The isolation matrix: user A, user B, an operator, no token, a bad token, over every endpoint."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import auth, create

PUBLIC = {
    "/healthz",
    "/readyz",
    "/api/graph",
    "/metrics",
    "/api/downloads/{token}",
    "/openapi.json",
}
BODIES: dict[str, Any] = {
    "POST /api/exports": {"saved_query": "products", "parameters": {"category": "toys"}},
    "POST /api/webhooks": {"url": "https://hooks.example.com/in"},
    "POST /api/schedules": {"saved_query": "products", "parameters": {"category": "toys"},
                            "cron": "0 8 * * *", "time_zone": "UTC"},
}  # fmt: skip


def operations(client: Any) -> list[tuple[str, str]]:
    """Every authenticated operation, deletions last so that the rest find what they act on,
    and what a path holds deleted before the path itself (a recipient before its schedule)."""
    schema = client.get("/openapi.json").json()
    found = [(method.upper(), path) for path, item in schema["paths"].items() for method in item
             if path not in PUBLIC]  # fmt: skip
    return sorted(
        found, key=lambda op: (op[0] == "DELETE", -op[1].count("/") * (op[0] == "DELETE"))
    )


def call(client: Any, method: str, path: str, headers: dict[str, str], ids: dict[str, Any]) -> Any:
    concrete = path.format(**ids)
    return client.request(method, concrete, headers=headers, json=BODIES.get(f"{method} {path}"))


@pytest.fixture
def matrix(api: dict[str, Any]) -> dict[str, Any]:
    from reportexport.webhooks.signing import new_secret

    job_id = create(api).json()["id"]
    alice = api["db"].users.user_by_name("alice")
    api["db"].users.set_email(alice.id, "alice@example.com")  # so she may receive her schedule
    endpoint = api["db"].endpoints.add_webhook_endpoint(owner="alice", url="https://h.example.com/x",
                                              secret=new_secret())  # fmt: skip
    schedule = api["client"].post("/api/schedules", json=BODIES["POST /api/schedules"],
                                  headers=auth(api, "alice")).json()  # fmt: skip
    channel = api["db"].channels.add_chat_channel(  # one alice may add to her schedules
        owner="alice", name="#alice", url="https://h.example.com/c", schedules_only=True
    )
    api["db"].schedules.add_address(
        schedule["id"],
        "partner@example.com",
        attach_max_bytes=None,
        attach_gzip=False,
        added_by="olga",
    )  # only operators add one
    ids = {"job_id": job_id, "endpoint_id": endpoint.id, "name": "products",
           "effect": "emit_failed_webhook", "schedule_id": schedule["id"], "person": "alice",
           "attribute": "country",
           # redriving one delivery: an operator's, any id
           "delivery_id": 1, "channel_id": channel.id,
           "address": "partner@example.com"}  # fmt: skip
    return {**api, "ids": ids}


def test_every_operation_needs_a_valid_token(matrix: dict[str, Any]) -> None:
    client = matrix["client"]
    checked = 0
    for method, path in operations(client):
        for headers in ({}, {"Authorization": "Bearer not-a-token"}):
            response = call(client, method, path, headers, matrix["ids"])
            assert response.status_code == 401, (method, path, headers)
            assert response.headers["content-type"] == "application/problem+json"
        checked += 1
    assert checked >= 14


def test_another_users_things_do_not_exist_for_them(matrix: dict[str, Any]) -> None:
    client = matrix["client"]
    for method, path in operations(client):
        if not any(f"{{{name}}}" in path for name in ("job_id", "endpoint_id", "schedule_id")):
            continue
        bob = call(client, method, path, auth(matrix, "bob"), matrix["ids"])
        expected = {403} if "/redrive" in path else {404}
        assert bob.status_code in expected, (method, path, bob.status_code)
        olga = call(client, method, path, auth(matrix, "olga"), matrix["ids"])
        if path.endswith("/notify"):  # the e-mail would go to the owner: only they ask for it
            assert olga.status_code == 403, (method, path, olga.status_code)
            continue
        assert olga.status_code not in (401, 403, 404), (method, path, olga.status_code)


def test_the_owner_reaches_their_own_things(matrix: dict[str, Any]) -> None:
    client = matrix["client"]
    for method, path in operations(client):
        alice = call(client, method, path, auth(matrix, "alice"), matrix["ids"])
        allowed = {403} if "/redrive" in path else set()
        assert alice.status_code not in {401, 404} - allowed, (method, path, alice.status_code)
        assert alice.status_code < 500


def test_the_audit_is_for_operators_and_shows_what_they_did_through_the_api(
    matrix: dict[str, Any],
) -> None:
    client = matrix["client"]
    job_id = matrix["ids"]["job_id"]
    for who in ("alice", "bob"):
        refused = client.get("/api/audit", headers=auth(matrix, who))
        assert (refused.status_code, refused.json()["title"]) == (403, "Forbidden")
    endpoint = matrix["ids"]["endpoint_id"]
    assert client.post(f"/api/webhooks/{endpoint}/rotate", headers=auth(matrix, "alice")).is_success
    assert client.post(f"/api/exports/{job_id}/cancel", headers=auth(matrix, "olga")).is_success
    assert client.post(f"/api/webhooks/{endpoint}/rotate", headers=auth(matrix, "olga")).is_success
    page = client.get("/api/audit", headers=auth(matrix, "olga")).json()
    assert [(e["person"], e["action"], e["object_id"]) for e in page["entries"]] == [
        ("olga", "rotate_webhook_secret", str(endpoint)),
        ("olga", "cancel_job", str(job_id)),
    ]  # alice's rotation of her own endpoint is hers, not an operator's action
    only = client.get("/api/audit?action=cancel_job&limit=1", headers=auth(matrix, "olga"))
    assert [e["object_kind"] for e in only.json()["entries"]] == ["job"]
    wrong = client.get("/api/audit?action=delete_everything", headers=auth(matrix, "olga"))
    assert wrong.status_code == 422
