"""One behavioural suite, run against SQLite files and a real PostgreSQL (the `db`, `raw` and
`database_url` fixtures of tests/conftest.py, over both backends).

Each PostgreSQL test gets a fresh database cloned from its worker's upgraded template database.
"""

from tests.tiers import Tier

TIER = Tier("store", budget_seconds=600)
