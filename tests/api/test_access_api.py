"""Who may export what, over HTTP: operators manage groups, members and attributes; a person
sees and runs only what their groups allow; a refusal is a problem naming the rule, and a query
they may not see answers as one that does not exist."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport.core.records import AuditFilter
from reportexport.objects import ObjectStore
from reportexport.store import Database
from tests.helpers import API_QUERIES, auth, catalog_for, runtime_for

QUERIES: dict[str, Any] = {
    **API_QUERIES,
    "invoices": {
        "source": "demo",
        "title": "Invoices of the finance team",
        "sql": "SELECT order_id, amount FROM orders WHERE order_id < 20",
        "access": ["finance"],
    },
    "my_customers": {
        "source": "demo",
        "title": "Customers of my country",
        "sql": "SELECT customer_id, country FROM customers WHERE country = :country",
        "parameters": {"country": {"type": "string", "bind": "country"}},
    },
}


@pytest.fixture
def api(
    jobs_db: Database, local_objects: ObjectStore, sources_dir: Path
) -> Iterator[dict[str, Any]]:
    catalog = catalog_for(sources_dir, None, QUERIES)
    people = (("alice", "user"), ("bob", "user"), ("olga", "operator"))
    tokens = {name: jobs_db.users.add_user(name, role)[1] for name, role in people}
    with TestClient(runtime_for(jobs_db, catalog, local_objects).app()) as client:
        yield {"client": client, "tokens": tokens, "db": jobs_db}


def call(api: dict[str, Any], who: str, method: str, path: str, **kwargs: Any) -> Any:
    return api["client"].request(method, path, headers=auth(api, who), **kwargs)


def listed(api: dict[str, Any], who: str) -> set[str]:
    answer = call(api, who, "GET", "/api/saved-queries")
    assert answer.status_code == 200
    return {query["name"] for query in answer.json()}


def test_an_operator_adds_someone_to_a_group_and_the_query_appears(api: dict[str, Any]) -> None:
    assert "invoices" not in listed(api, "alice")
    made = call(api, "olga", "POST", "/api/groups", json={"name": "finance"})
    assert made.status_code == 201, made.text
    assert made.json()["member_count"] == 0
    assert call(api, "olga", "PUT", "/api/groups/finance/members/alice").status_code == 204
    assert "invoices" in listed(api, "alice")
    assert call(api, "olga", "GET", "/api/groups/finance/members").json() == ["alice"]
    assert call(api, "olga", "GET", "/api/groups").json()[0]["member_count"] == 1
    job = call(api, "alice", "POST", "/api/exports", json={"saved_query": "invoices"})
    assert job.status_code == 201, job.text

    removed = call(api, "olga", "DELETE", "/api/groups/finance/members/alice")
    assert removed.status_code == 200
    assert removed.json() == {"canceled_exports": [job.json()["id"]], "paused_schedules": []}
    assert "invoices" not in listed(api, "alice")
    rerun = call(api, "alice", "POST", f"/api/exports/{job.json()['id']}/rerun")
    assert rerun.status_code == 403
    problem = rerun.json()
    assert problem["title"] == "Access refused"
    assert problem["access_rule"] == "queries.invoices.access"
    assert "does not include alice" in problem["detail"]
    shown = call(api, "alice", "GET", f"/api/exports/{job.json()['id']}").json()
    assert shown["job"]["status"] == "canceled"
    audit = api["db"].audit.entries(AuditFilter(limit=20)).records
    assert [(a.person, a.action) for a in audit][:3] == [
        ("olga", "cancel_job"), ("olga", "remove_member"), ("olga", "add_member"),
    ]  # fmt: skip


def test_every_refusal_for_lost_access_is_declared_in_the_api_document(
    api: dict[str, Any],
) -> None:
    """Each operation on a person's own job or schedule whose query they lost access to answers
    403, and the OpenAPI document says it can (a client generated from it expects the 403)."""
    call(api, "olga", "POST", "/api/groups", json={"name": "finance"})
    call(api, "olga", "PUT", "/api/groups/finance/members/alice")
    job = call(api, "alice", "POST", "/api/exports", json={"saved_query": "invoices"}).json()
    daily = {"saved_query": "invoices", "cron": "0 8 * * *", "time_zone": "UTC"}
    schedule = call(api, "alice", "POST", "/api/schedules", json=daily)
    assert schedule.status_code == 201, schedule.text
    removed = call(api, "olga", "DELETE", "/api/groups/finance/members/alice").json()
    assert removed["paused_schedules"] == [schedule.json()["id"]]

    refused = {
        "rerun_export": ("POST", f"/api/exports/{job['id']}/rerun"),
        "download_export": ("GET", f"/api/exports/{job['id']}/download"),
        "export_schema": ("GET", f"/api/exports/{job['id']}/schema"),
        "resume_schedule": ("POST", f"/api/schedules/{schedule.json()['id']}/resume"),
        "run_schedule": ("POST", f"/api/schedules/{schedule.json()['id']}/run"),
    }
    document = api["client"].get("/openapi.json").json()
    declared = {
        operation["operationId"]: set(operation["responses"])
        for path in document["paths"].values()
        for operation in path.values()
    }
    for operation_id, (method, path) in refused.items():
        answer = call(api, "alice", method, path)
        assert answer.status_code == 403, (operation_id, answer.text)
        assert answer.json()["access_rule"] == "queries.invoices.access"
        assert "403" in declared[operation_id], operation_id


def test_a_query_one_may_not_see_answers_as_one_that_does_not_exist(api: dict[str, Any]) -> None:
    hidden = call(api, "alice", "GET", "/api/saved-queries/invoices")
    missing = call(api, "alice", "GET", "/api/saved-queries/nothing")
    assert (hidden.status_code, missing.status_code) == (404, 404)
    assert hidden.json()["detail"].replace("invoices", "nothing") == missing.json()["detail"]
    for name in ("invoices", "nothing"):
        made = call(api, "alice", "POST", "/api/exports", json={"saved_query": name})
        assert made.status_code == 422
        assert made.json()["rule"] == "unknown"
    document = api["client"].get("/openapi.json").text
    assert "invoices" not in document
    assert "Invoices of the finance team" not in document
    assert "my_customers" not in document


def test_a_bound_parameter_is_filled_from_the_record_and_refused_when_sent(
    api: dict[str, Any],
) -> None:
    assert "my_customers" not in listed(api, "bob")
    set_country = call(api, "olga", "PUT", "/api/people/bob/attributes/country",
                       json={"value": "JP"})  # fmt: skip
    assert set_country.status_code == 200, set_country.text
    described = call(api, "bob", "GET", "/api/saved-queries/my_customers").json()
    assert described["parameters"][0]["bind"] == "country"
    sent = call(api, "bob", "POST", "/api/exports",
                json={"saved_query": "my_customers", "parameters": {"country": "FR"}})  # fmt: skip
    assert sent.status_code == 422
    assert (sent.json()["parameter"], sent.json()["rule"]) == ("country", "bound")
    made = call(api, "bob", "POST", "/api/exports", json={"saved_query": "my_customers"})
    assert made.status_code == 201
    assert made.json()["parameters"] == {"country": "JP"}
    mine = call(api, "bob", "GET", "/api/people/bob/access").json()
    assert mine["groups"] == []
    assert mine["attributes"] == [{"name": "country", "value": "JP", "origin": "operator"}]
    assert call(api, "bob", "GET", "/api/people/alice/access").status_code == 403


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/api/groups", None),
        ("POST", "/api/groups", {"name": "sales"}),
        ("DELETE", "/api/groups/finance", None),
        ("GET", "/api/groups/finance/members", None),
        ("PUT", "/api/groups/finance/members/alice", None),
        ("DELETE", "/api/groups/finance/members/alice", None),
        ("PUT", "/api/people/alice/attributes/country", {"value": "FR"}),
        ("DELETE", "/api/people/alice/attributes/country", None),
    ],
)
def test_only_operators_manage_groups_and_attributes(
    api: dict[str, Any], method: str, path: str, body: dict[str, Any] | None
) -> None:
    call(api, "olga", "POST", "/api/groups", json={"name": "finance"})
    answer = call(api, "alice", method, path, json=body)
    assert answer.status_code == 403, answer.text
    assert answer.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "said"),
    [
        ("POST", "/api/groups", {"name": "everyone"}, 422, "not everyone"),
        ("POST", "/api/groups", {"name": "Sales"}, 422, "name"),
        ("POST", "/api/groups", {"name": "finance"}, 409, "exists already"),
        ("PUT", "/api/groups/sales/members/alice", None, 404, "no group 'sales'"),
        ("PUT", "/api/groups/finance/members/carol", None, 404, "no person 'carol'"),
        ("DELETE", "/api/groups/finance/members/bob", None, 404, "not a member"),
        ("PUT", "/api/people/alice/attributes/Country", {"value": "FR"}, 422, "attribute"),
        ("DELETE", "/api/people/alice/attributes/country", None, 404, "no attribute"),
        ("DELETE", "/api/groups/sales", None, 404, "no group 'sales'"),
    ],
)
def test_wrong_requests_are_problems_that_say_what_was_wrong(
    api: dict[str, Any], method: str, path: str, body: Any, status: int, said: str
) -> None:
    call(api, "olga", "POST", "/api/groups", json={"name": "finance"})
    answer = call(api, "olga", method, path, json=body)
    assert answer.status_code == status, answer.text
    assert said in answer.text


def test_a_suspended_persons_token_and_a_service_accounts_dashboard_sign_in_are_refused(
    api: dict[str, Any],
) -> None:
    from reportexport.services.exports import Acting
    from reportexport.services.people import PeopleService
    from tests.dashboard_session import sign_in

    people = PeopleService(users=api["db"].users)
    _, robot_token = people.add("robot", "user", by=Acting(name="olga", role="operator"),
                                service=True)  # fmt: skip
    api["tokens"]["robot"] = robot_token
    assert call(api, "robot", "GET", "/api/saved-queries").status_code == 200
    with pytest.raises(AssertionError, match="service account: it uses the API only"):
        sign_in(api["client"], robot_token)

    session = sign_in(api["client"], api["tokens"]["bob"])
    api["db"].users.suspend_user("bob", now=datetime.now(UTC), by="olga", reason="on leave")
    assert call(api, "bob", "GET", "/api/exports").status_code == 401
    page = api["client"].get("/jobs", headers=session.headers, follow_redirects=False)
    assert page.status_code == 303  # the session stopped with the token
