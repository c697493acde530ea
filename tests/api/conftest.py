"""The API under FastAPI's test client over a SQLite job store, the demo source and a local
object store (`api`); the tests that start `serve` itself are marked `processes`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport.objects import ObjectStore
from reportexport.store import Database
from tests.helpers import API_QUERIES, catalog_for, runtime_for
from tests.tiers import Tier

TIER = Tier(
    "api",
    budget_seconds=1500,
    modules={
        "test_serve.py": ("processes",),
        "test_schemathesis.py": ("processes", "slow"),
    },
)


@pytest.fixture
def api(
    jobs_db: Database,
    local_objects: ObjectStore,
    sources_dir: Path,
) -> Iterator[dict[str, Any]]:
    catalog = catalog_for(sources_dir, None, API_QUERIES)
    people = (("alice", "user"), ("bob", "user"), ("olga", "operator"))
    tokens = {name: jobs_db.users.add_user(name, role)[1] for name, role in people}
    with TestClient(runtime_for(jobs_db, catalog, local_objects).app()) as client:
        yield {"client": client, "tokens": tokens, "db": jobs_db, "catalog": catalog,
               "objects": local_objects}  # fmt: skip
