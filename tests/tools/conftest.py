"""The development tools (./scripts/mutate)."""

from tests.tiers import Tier

TIER = Tier("tools", budget_seconds=300, marks=("processes", "slow"))
