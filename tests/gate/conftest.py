"""The gate run as a command over copies of this repository, and the drift corpus."""

from tests.tiers import Tier

TIER = Tier("gate", budget_seconds=1200, modules={"test_drift_corpus.py": ("processes", "slow")})
