"""The short fault run: real processes, a PostgreSQL cluster of its own, faults."""

from tests.tiers import Tier

TIER = Tier("faults", budget_seconds=900, marks=("processes", "slow"))
