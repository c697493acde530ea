"""schemathesis over the OpenAPI schema: no 5xx, and every response matches the schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import positive_data_acceptance

from reportexport.api.app import Services, create_app
from reportexport.objects import open_object_store
from reportexport.store import open_database
from tests.api.test_api import QUERIES
from tests.exports.conftest import catalog_for
from tests.store.conftest import GRAPH


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from reportexport.demo import build_demo_database

    folder = tmp_path_factory.mktemp("schemathesis")
    build_demo_database(folder / "demo.duckdb", rows=1_000)
    sources = Path(folder)
    database = open_database(f"sqlite:///{folder / 'jobs.db'}", GRAPH, check=False)
    database.upgrade()
    services = Services(
        db=database,
        catalog=catalog_for(sources, None, QUERIES),
        objects=open_object_store(f"file://{folder / 'objects'}", link_secret=b"secret"),
        graph=GRAPH,
        link_secret=b"secret",
    )
    _, token = database.add_user("operator", "operator")
    yield {"app": create_app(services), "token": token}
    database.close()


def test_the_api_keeps_its_schema(served: dict[str, Any]) -> None:
    """Every operation, with generated requests: no 5xx, every response as the schema says.

    (schemathesis' pytest plugin predates this pytest, so operations are driven directly.)
    """
    schema = schemathesis.openapi.from_asgi("/openapi.json", served["app"])
    headers = {"Authorization": f"Bearer {served['token']}"}
    checked = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings(max_examples=25, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))  # fmt: skip
        @given(case=operation.as_strategy())
        def check(case: Any) -> None:
            # Valid-looking requests may still be refused for what a schema cannot say (a saved
            # query that does not exist, a job in the wrong status): 4xx is an answer, 5xx not.
            case.call_and_validate(headers=headers, excluded_checks=[positive_data_acceptance])

        check()
        checked.append(operation.label)
    assert len(checked) >= 15, checked
