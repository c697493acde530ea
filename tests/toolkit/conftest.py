"""The toolkit built, installed and hooked into a fresh git repository."""

from tests.tiers import Tier

TIER = Tier("toolkit builds", budget_seconds=600, marks=("processes", "slow"))
