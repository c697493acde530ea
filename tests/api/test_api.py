"""The HTTP API through FastAPI's test client: real stores, a real worker, real objects."""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport.core.csvformat import DIALECT_VERSION
from reportexport.core.links import sign_download
from reportexport.core.records import JobId
from reportexport.objects import ObjectStore
from reportexport.runners.worker import Worker, WorkerSettings
from reportexport.store import Database
from tests.helpers import GRAPH, auth, catalog_for, create, runtime_for


def test_health_and_readiness(api: dict[str, Any]) -> None:
    client = api["client"]
    assert client.get("/healthz").json() == {"healthy": True}
    assert client.get("/readyz").json() == {"healthy": True, "degraded": []}
    assert client.get("/api/graph").json() == dict(GRAPH.document)


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/api/saved-queries"), ("GET", "/api/exports"), ("POST", "/api/exports"),
     ("GET", "/api/exports/1"), ("POST", "/api/exports/1/cancel")],
)  # fmt: skip
@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic abc"])
def test_no_or_a_bad_token_is_401_problem(
    api: dict[str, Any], method: str, path: str, header: str | None
) -> None:
    headers = {"Authorization": header} if header else {}
    response = api["client"].request(method, path, headers=headers, json={})
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == 401


def test_saved_queries_show_their_parameters(api: dict[str, Any]) -> None:
    client = api["client"]
    listed = client.get("/api/saved-queries", headers=auth(api, "alice")).json()
    assert [q["name"] for q in listed] == ["products", "endless", "search"]
    one = client.get("/api/saved-queries/products", headers=auth(api, "alice")).json()
    assert one["parameters"] == [
        {"name": "category", "type": "enum", "required": True, "choices": ["toys", "books"]}
    ]
    missing = client.get("/api/saved-queries/nope", headers=auth(api, "alice"))
    assert (missing.status_code, missing.json()["title"]) == (404, "Not found")


def test_creating_an_export_queues_a_job(api: dict[str, Any]) -> None:
    response = create(api)
    assert response.status_code == 201
    job = response.json()
    assert (job["status"], job["owner"], job["parameters"]) == (
        "queued", "alice", {"category": "toys"}
    )  # fmt: skip


def test_notify_asks_for_an_email_at_the_end_and_needs_an_address(api: dict[str, Any]) -> None:
    """`notify` is refused (422 naming `notify`) until an operator gave the person an
    address; then the job says so."""
    refused = create(api, notify=True)
    assert (refused.status_code, refused.json()["title"]) == (422, "No e-mail address")
    assert refused.json()["parameter"] == "notify"
    assert "notify: you have no e-mail address" in refused.json()["detail"]
    db: Database = api["db"]
    alice = db.users.user_by_name("alice")
    assert alice is not None
    db.users.set_email(alice.id, "alice@example.com")
    made = create(api, notify=True)
    assert (made.status_code, made.json()["notify"]) == (201, True)
    assert create(api).json()["notify"] is False


def test_a_bad_parameter_is_422_naming_it(api: dict[str, Any]) -> None:
    response = create(api, parameters={"category": "cars"})
    assert response.status_code == 422
    problem = response.json()
    assert (problem["parameter"], problem["rule"]) == ("category", "choices")
    assert "cars" in problem["detail"]
    unknown = create(api, saved_query="nope")
    assert (unknown.status_code, unknown.json()["parameter"]) == (422, "saved_query")


def test_an_idempotency_key_makes_a_retried_post_return_the_same_job(api: dict[str, Any]) -> None:
    client = api["client"]
    headers = {**auth(api, "alice"), "Idempotency-Key": "k-1"}
    body = {"saved_query": "products", "parameters": {"category": "toys"}}
    first = client.post("/api/exports", json=body, headers=headers)
    again = client.post("/api/exports", json=body, headers=headers)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    other = client.post("/api/exports", json={**body, "parameters": {"category": "books"}},
                        headers=headers)  # fmt: skip
    assert (other.status_code, other.json()["title"]) == (409, "Idempotency key reused")


def test_an_operators_idempotency_key_is_kept_apart_from_the_owners(api: dict[str, Any]) -> None:
    client = api["client"]
    job_id = create(api).json()["id"]
    key = {"Idempotency-Key": "r1"}
    by_olga = client.post(f"/api/exports/{job_id}/rerun", headers={**auth(api, "olga"), **key})
    by_alice = client.post(f"/api/exports/{job_id}/rerun", headers={**auth(api, "alice"), **key})
    assert (by_olga.status_code, by_alice.status_code) == (201, 201)
    assert by_olga.json()["id"] != by_alice.json()["id"]
    assert by_olga.json()["requested_by"] == "olga"
    again = client.post(f"/api/exports/{job_id}/rerun", headers={**auth(api, "olga"), **key})
    assert (again.status_code, again.json()["id"]) == (200, by_olga.json()["id"])
    body = {"saved_query": "products", "parameters": {"category": "books"}}
    mine = client.post("/api/exports", json=body, headers={**auth(api, "alice"), **key})
    assert mine.status_code == 409  # alice's own r1 named her rerun


def test_users_see_and_cancel_only_their_own_jobs(api: dict[str, Any]) -> None:
    client = api["client"]
    job_id = create(api).json()["id"]
    for method, path in (("GET", f"/api/exports/{job_id}"),
                         ("POST", f"/api/exports/{job_id}/cancel"),
                         ("GET", f"/api/exports/{job_id}/download")):  # fmt: skip
        assert client.request(method, path, headers=auth(api, "bob")).status_code == 404
    assert client.get("/api/exports", headers=auth(api, "bob")).json()["jobs"] == []
    everyone = client.get("/api/exports?owner=alice", headers=auth(api, "olga")).json()
    assert [j["id"] for j in everyone["jobs"]] == [job_id]
    canceled = client.post(f"/api/exports/{job_id}/cancel", headers=auth(api, "olga"))
    assert canceled.json()["status"] == "canceled"
    detail = client.get(f"/api/exports/{job_id}", headers=auth(api, "alice")).json()
    (entry,) = detail["history"]
    assert (entry["to_status"], entry["actor"], entry["person"]) == ("canceled", "user", "olga")
    assert [e["effect"] for e in detail["side_effects"]] == ["delete_temp_object"]


def test_an_illegal_move_is_409_with_the_graphs_code(api: dict[str, Any]) -> None:
    client = api["client"]
    job_id = create(api).json()["id"]
    client.post(f"/api/exports/{job_id}/cancel", headers=auth(api, "alice"))
    again = client.post(f"/api/exports/{job_id}/cancel", headers=auth(api, "alice"))
    assert again.status_code == 409
    assert again.json()["code"] == "terminal:canceled"


def test_listing_filters_by_status_and_pages(api: dict[str, Any]) -> None:
    client = api["client"]
    ids = [create(api).json()["id"] for _ in range(3)]
    client.post(f"/api/exports/{ids[0]}/cancel", headers=auth(api, "alice"))
    page = client.get("/api/exports?limit=2", headers=auth(api, "alice")).json()
    assert [j["id"] for j in page["jobs"]] == ids[::-1][:2]
    rest = client.get(f"/api/exports?limit=2&before={page['next_cursor']}",
                      headers=auth(api, "alice")).json()  # fmt: skip
    assert [j["id"] for j in rest["jobs"]] == ids[:1]
    canceled = client.get("/api/exports?status=canceled", headers=auth(api, "alice")).json()
    assert [j["id"] for j in canceled["jobs"]] == [ids[0]]
    # gate: allow unknown-status -- a word the API must refuse
    invalid = client.get("/api/exports?status=retrying", headers=auth(api, "alice"))
    assert invalid.status_code == 422
    assert invalid.headers["content-type"] == "application/problem+json"


def test_a_finished_export_downloads_through_a_signed_link(api: dict[str, Any]) -> None:
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
    job = client.get(f"/api/exports/{job_id}", headers=auth(api, "alice")).json()["job"]
    assert job["status"] == "succeeded"
    redirect = client.get(f"/api/exports/{job_id}/download", headers=auth(api, "alice"),
                          follow_redirects=False)  # fmt: skip
    assert redirect.status_code == 302
    assert redirect.headers["location"].startswith("/api/downloads/")
    file = client.get(redirect.headers["location"])
    assert file.status_code == 200
    assert file.headers["content-disposition"] == f'attachment; filename="{job["file_name"]}"'
    with api["objects"].read(db.jobs.get_job(job_id).job.object_key) as handle:
        assert file.content == handle.read()
    assert job["rows"] == len(list(csv.reader(io.StringIO(file.text, newline="")))) - 1
    expired = sign_download(b"secret", db.jobs.get_job(job_id).job.object_key, "x.csv", -1)
    assert client.get(f"/api/downloads/{expired}").status_code == 410
    forged = sign_download(b"other", db.jobs.get_job(job_id).job.object_key, "x.csv", 60)
    assert client.get(f"/api/downloads/{forged}").status_code == 403
    downloads = client.get(f"/api/exports/{job_id}", headers=auth(api, "alice")).json()
    assert [d["person"] for d in downloads["downloads"]] == ["alice"]  # each download recorded
    rerun = client.post(f"/api/exports/{job_id}/rerun", headers=auth(api, "alice"))
    assert (rerun.status_code, rerun.json()["rerun_of"]) == (201, job_id)


def test_a_finished_export_offers_its_schema_next_to_the_csv(api: dict[str, Any]) -> None:
    """The job and the schema name every column's type, so a reader can be told them."""
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
    job = client.get(f"/api/exports/{job_id}", headers=auth(api, "alice")).json()["job"]
    assert job["dialect_version"] == DIALECT_VERSION
    assert job["column_types"] == ["integer", "text", "text", "decimal(10,2)"]
    response = client.get(f"/api/exports/{job_id}/schema", headers=auth(api, "alice"))
    assert response.status_code == 200
    assert response.headers["content-disposition"] == (
        f'inline; filename="products-{job_id}.schema.json"'
    )
    schema = response.json()
    assert schema["columns"] == [
        {"name": name, "type": kind}
        for name, kind in zip(job["columns"], job["column_types"], strict=True)
    ]
    assert (schema["file_name"], schema["rows"]) == (job["file_name"], job["rows"])
    assert (schema["delimiter"], schema["null"], schema["dialect_version"]) == (",", "", 2)


def test_a_download_before_the_file_exists_is_409(api: dict[str, Any]) -> None:
    job_id = create(api).json()["id"]
    response = api["client"].get(f"/api/exports/{job_id}/download", headers=auth(api, "alice"))
    assert response.status_code == 409
    schema = api["client"].get(f"/api/exports/{job_id}/schema", headers=auth(api, "alice"))
    assert schema.status_code == 409


def test_the_openapi_status_enum_is_the_fixtures(api: dict[str, Any]) -> None:
    schema = api["client"].get("/openapi.json").json()
    assert schema["openapi"].startswith("3.1")
    job = schema["components"]["schemas"]["JobOut"]["properties"]["status"]
    assert job["enum"] == list(GRAPH.states)


def test_users_are_added_listed_and_revoked(api: dict[str, Any]) -> None:
    from datetime import UTC, datetime

    from reportexport.services.errors import ConflictError
    from reportexport.services.people import PeopleService

    db = api["db"]
    assert [(u.name, u.role) for u in db.users.list_users()] == [
        ("alice", "user"), ("bob", "user"), ("olga", "operator")
    ]  # fmt: skip
    assert all(
        u.token_hash != api["tokens"][u.name] for u in db.users.list_users()
    )  # stored hashed
    with pytest.raises(ConflictError, match="already exists"):
        PeopleService(users=db.users).add("alice", "user")
    assert db.users.revoke_user("bob", now=datetime.now(UTC))
    assert api["client"].get("/api/exports", headers=auth(api, "bob")).status_code == 401


def fair_api(api: dict[str, Any], **rules: int) -> TestClient:
    return TestClient(runtime_for(api["db"], api["catalog"], api["objects"], **rules).app())


def test_too_many_unfinished_exports_answer_429_naming_the_limit(api: dict[str, Any]) -> None:
    client = fair_api(api, max_active_exports=2)
    body = {"saved_query": "products", "parameters": {"category": "toys"}}
    for _ in range(2):
        assert client.post("/api/exports", json=body, headers=auth(api, "alice")).status_code == 201
    refused = client.post("/api/exports", json=body, headers=auth(api, "alice"))
    assert refused.status_code == 429
    assert (refused.json()["limit"], refused.headers["retry-after"]) == ("max_active", "10")
    assert client.post("/api/exports", json=body, headers=auth(api, "bob")).status_code == 201
    first = client.get("/api/exports", headers=auth(api, "alice")).json()["jobs"][-1]["id"]
    client.post(f"/api/exports/{first}/cancel", headers=auth(api, "alice"))
    assert client.post("/api/exports", json=body, headers=auth(api, "alice")).status_code == 201


def test_creating_too_fast_answers_429_with_retry_after(api: dict[str, Any]) -> None:
    client = fair_api(api, max_exports_per_minute=2)
    body = {"saved_query": "products", "parameters": {"category": "toys"}}
    keyed = {**auth(api, "alice"), "Idempotency-Key": "again"}
    assert client.post("/api/exports", json=body, headers=keyed).status_code == 201
    assert client.post("/api/exports", json=body, headers=auth(api, "alice")).status_code == 201
    refused = client.post("/api/exports", json=body, headers=auth(api, "alice"))
    assert refused.status_code == 429
    assert refused.json()["limit"] == "max_per_window"
    assert refused.headers["retry-after"] == "60"
    assert client.post("/api/exports", json=body, headers=keyed).status_code == 200  # a retry


def test_metrics_count_jobs_by_fixture_status_and_edges(api: dict[str, Any]) -> None:
    client = api["client"]
    job_id = create(api).json()["id"]
    create(api)
    client.post(f"/api/exports/{job_id}/cancel", headers=auth(api, "alice"))
    text = client.get("/metrics").text
    for state in GRAPH.states:
        assert f'reportexport_jobs{{status="{state}"}}' in text
    assert 'reportexport_jobs{status="queued"} 1.0' in text
    assert 'reportexport_jobs{status="canceled"} 1.0' in text
    assert (
        'reportexport_transitions_total{actor="user",from_status="queued",to_status="canceled"} 1.0'
        in text
    )
    assert 'reportexport_side_effect_attempts_total{effect="delete_temp_object"} 0.0' in text
    statuses = {line.split('status="')[1].split('"')[0] for line in text.splitlines()
                if line.startswith("reportexport_jobs{")}  # fmt: skip
    assert statuses == set(GRAPH.states)


def hooks_api(api: dict[str, Any]) -> TestClient:
    runtime = runtime_for(api["db"], api["catalog"], api["objects"], webhooks_allow_private=True)
    return TestClient(runtime.app())


def test_webhook_endpoints_are_managed_by_their_owner(api: dict[str, Any]) -> None:
    from standardwebhooks import Webhook

    from tests.effects.receiver import Receiver, running_receiver

    client = hooks_api(api)
    with running_receiver(Receiver()) as receiver:
        created = client.post(
            "/api/webhooks", json={"url": receiver.url}, headers=auth(api, "alice")
        )
        assert created.status_code == 201
        hook = created.json()
        assert hook["secret"].startswith("whsec_")
        assert hook["owner"] == "alice"
        listed = client.get("/api/webhooks", headers=auth(api, "alice")).json()
        assert [h["id"] for h in listed] == [hook["id"]]
        assert "secret" not in listed[0]
        assert client.get("/api/webhooks", headers=auth(api, "bob")).json() == []
        assert client.post(f"/api/webhooks/{hook['id']}/test",
                           headers=auth(api, "bob")).status_code == 404  # fmt: skip
        tested = client.post(f"/api/webhooks/{hook['id']}/test", headers=auth(api, "alice"))
        assert tested.json() == {"delivered": True, "response_status": 200, "problem": None}
        (delivery,) = receiver.received
        assert Webhook(hook["secret"]).verify(delivery.body, delivery.headers)["type"] == (
            "webhook.test"
        )
        rotated = client.post(f"/api/webhooks/{hook['id']}/rotate", headers=auth(api, "alice"))
        assert rotated.json()["secret"] != hook["secret"]
        assert client.delete(f"/api/webhooks/{hook['id']}",
                             headers=auth(api, "alice")).status_code == 204  # fmt: skip
        assert client.get("/api/webhooks", headers=auth(api, "alice")).json()[0]["disabled_at"]


def test_a_disabled_endpoint_refuses_a_test_event(api: dict[str, Any]) -> None:
    """A test asked for after the endpoint was disabled (a client that listed it before) sends
    nothing and answers 409, saying it is disabled and why."""
    from tests.effects.receiver import Receiver, running_receiver

    client = hooks_api(api)
    with running_receiver(Receiver()) as receiver:
        made = client.post("/api/webhooks", json={"url": receiver.url}, headers=auth(api, "alice"))
        hook = made.json()["id"]
        assert client.delete(f"/api/webhooks/{hook}", headers=auth(api, "alice")).status_code == 204
        tested = client.post(f"/api/webhooks/{hook}/test", headers=auth(api, "alice"))
        assert tested.status_code == 409
        assert tested.headers["content-type"] == "application/problem+json"
        assert tested.json()["title"] == "Endpoint disabled"
        assert tested.json()["detail"] == (
            f"webhook endpoint {hook} is disabled (removed by alice): it takes no test event"
        )
        assert receiver.received == []


def test_only_operators_register_the_global_endpoint_or_redrive(api: dict[str, Any]) -> None:
    client = hooks_api(api)
    body = {"url": "http://127.0.0.1:9/all", "everyone": True}
    assert client.post("/api/webhooks", json=body, headers=auth(api, "alice")).status_code == 403
    made = client.post("/api/webhooks", json=body, headers=auth(api, "olga"))
    assert (made.status_code, made.json()["owner"]) == (201, None)
    job_id = create(api).json()["id"]
    redrive = f"/api/side-effects/{job_id}/emit_failed_webhook/redrive"
    assert client.post(redrive, headers=auth(api, "alice")).status_code == 403
    assert client.post(redrive, headers=auth(api, "olga")).status_code == 409


def test_an_unsafe_webhook_url_is_refused(api: dict[str, Any]) -> None:
    refused = api["client"].post("/api/webhooks", json={"url": "http://169.254.169.254/x"},
                                 headers=auth(api, "alice"))  # fmt: skip
    assert refused.status_code == 422
    assert refused.json()["parameter"] == "url"
    assert "webhook URLs name their host" in refused.json()["detail"]
    development = hooks_api(api).post("/api/webhooks", json={"url": "http://169.254.169.254/x"},
                                      headers=auth(api, "alice"))  # fmt: skip
    assert "link-local" in development.json()["detail"]


def test_reads_answer_while_another_process_holds_the_write_lock(api: dict[str, Any]) -> None:
    """Every read is a read transaction: in WAL mode it takes no part of SQLite's write lock,
    so a writer holding it (a long claim, a shell's BEGIN IMMEDIATE) delays no page or scrape.
    Were a read to wait for the lock, it would answer 503 after the lock timeout."""
    import sqlite3

    job_id = create(api).json()["id"]
    writer = sqlite3.connect(api["db"].url.removeprefix("sqlite:///"), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        client = api["client"]
        for path in ("/api/exports", f"/api/exports/{job_id}", "/api/saved-queries", "/readyz"):
            answer = client.get(path, headers=auth(api, "alice"))
            assert answer.status_code == 200, (path, answer.text)
        scrape = client.get("/metrics", headers=auth(api, "olga"))
        assert scrape.status_code == 200, scrape.text
        busy = create(api)  # a write does wait for the writer, and says so when it gives up
        assert busy.status_code == 503, busy.text
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_webhook_test_answers_in_seconds_when_the_name_does_not_resolve(
    api: dict[str, Any],
) -> None:
    """A person waits for a test delivery: a resolver that hangs is cut short, and said so."""
    import time

    from reportexport.services.exports import Acting
    from reportexport.services.webhooks import TEST_RESOLVE_SECONDS, WebhookService

    def hanging(host: str, port: int) -> list[str]:
        time.sleep(TEST_RESOLVE_SECONDS + 10)
        return ["93.184.216.34"]

    db: Database = api["db"]
    service = WebhookService(
        endpoints=db.endpoints, users=db.users, audit=db.audit, resolver=hanging
    )
    alice = Acting(name="alice", role="user")
    endpoint = service.add(alice, "https://hooks.example.com/in")
    started = time.monotonic()
    tested = service.test(alice, endpoint.id)
    assert time.monotonic() - started < TEST_RESOLVE_SECONDS + 6
    assert not tested.delivered
    assert tested.problem == (
        f"hooks.example.com does not resolve: no answer within {TEST_RESOLVE_SECONDS:g} s"
    )


def test_number_parameters_are_json_numbers_on_the_way_out(
    jobs_db: Database, local_objects: ObjectStore, sources_dir: Path
) -> None:
    """A number parameter is kept as exact text on the job (what its query runs with), and the
    API gives it back as the JSON number it took: a whole one as an integer, else a double."""
    catalog = catalog_for(sources_dir, None, {"scaled": {
        "source": "demo", "title": "Scaled", "sql": "SELECT :factor * 2 AS doubled",
        "parameters": {"factor": {"type": "number", "min": 0, "max": 1000.5, "default": 2}},
    }})  # fmt: skip
    token = jobs_db.users.add_user("alice", "user")[1]
    bearer = {"Authorization": f"Bearer {token}"}
    with TestClient(runtime_for(jobs_db, catalog, local_objects).app()) as client:
        described = client.get("/api/saved-queries/scaled", headers=bearer).json()
        (factor,) = described["parameters"]
        assert (factor["min"], factor["max"], factor["default"]) == (0, 1000.5, 2)
        for sent, kept in ((1.5, "1.5"), (3, "3"), (0.1, "0.1"), (12.25, "12.25")):
            body = {"saved_query": "scaled", "parameters": {"factor": sent}}
            made = client.post("/api/exports", headers=bearer, json=body)
            assert made.status_code == 201, made.text
            raw = made.content.decode()
            assert f'"parameters":{{"factor":{json.dumps(sent)}}}' in raw
            job_id = made.json()["id"]
            assert jobs_db.jobs.get_job(JobId(job_id)).job.parameters == {"factor": kept}
            shown = client.get(f"/api/exports/{job_id}", headers=bearer).json()["job"]
            assert shown["parameters"] == {"factor": sent}
            assert type(shown["parameters"]["factor"]) is type(sent)


def test_a_job_says_where_it_was_announced_and_an_operator_redrives_one_destination(
    api: dict[str, Any],
) -> None:
    """GET /api/exports/{id} lists each destination of its announcements; an operator re-drives
    a given-up one alone (others: 403), once (then 409), and an unknown one is 404."""
    from datetime import UTC, datetime

    from reportexport.store import Outcome

    db: Database = api["db"]
    endpoint = db.endpoints.add_webhook_endpoint(owner="alice", url="https://a.example", secret="s")
    job_id = create(api).json()["id"]
    (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="failed")])
    now = datetime.now(UTC)
    (claimed,) = db.effects.claim_side_effects("r", limit=5, now=now, claim_until=now)
    (delivery,) = db.deliveries.job_deliveries(job_id)
    db.deliveries.record_delivery_attempt(
        claimed.token, delivery.id, now=now, status=403, problem="HTTP 403", delivered=False,
        next_attempt_at=now, give_up=True,
    )  # fmt: skip
    client = api["client"]
    shown = client.get(f"/api/exports/{job_id}", headers=auth(api, "alice")).json()
    ((listed),) = shown["deliveries"]
    assert (listed["id"], listed["job_id"], listed["endpoint_id"], listed["address"]) == (
        delivery.id, job_id, endpoint.id, None
    )  # fmt: skip
    assert (listed["attempts"], listed["last_status"], listed["next_attempt_at"]) == (1, 403, None)
    assert listed["given_up_at"] is not None
    path = f"/api/deliveries/{delivery.id}/redrive"
    assert client.post(path, headers=auth(api, "alice")).status_code == 403
    again = client.post(path, headers=auth(api, "olga"))
    assert again.status_code == 200
    assert (again.json()["given_up_at"], again.json()["redrives"]) == (None, 1)
    assert again.json()["job_id"] == job_id  # a re-drive from a list says whose it was
    assert again.json()["next_attempt_at"] is not None
    assert client.post(path, headers=auth(api, "olga")).status_code == 409
    assert (
        client.post("/api/deliveries/999999/redrive", headers=auth(api, "olga")).status_code == 404
    )
