"""The docs site built strict and offline, and the generated reference pages."""

from tests.tiers import Tier

TIER = Tier("docs", budget_seconds=300, modules={"test_site.py": ("processes",)})
