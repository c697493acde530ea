"""The operators' access page shows the demo as the demo catalog has it: each saved query it
names exists there, with the rule the page says."""

from __future__ import annotations

import re
import tomllib

from reportexport.entrypoints.demo import DEMO_CATALOG
from reportexport.web.dashboard.groups import GROUPS
from tests.helpers import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "how-to" / "operators" / "access.md"


def demo_section() -> str:
    text = PAGE.read_text("utf-8")
    return text.split("## In the demo", 1)[1].split("\n## ", 1)[0]


def test_the_demo_section_names_a_query_for_everyone_one_for_a_group_and_one_bound() -> None:
    queries = tomllib.loads(DEMO_CATALOG)["queries"]
    rows = dict(re.findall(r"^\| `(\w+)` \| (.+) \|$", demo_section(), re.MULTILINE))
    assert set(rows) <= set(queries), "the page names a query the demo does not have"
    kinds = set()
    for name, said in rows.items():
        query = queries[name]
        bound = [p["bind"] for p in query.get("parameters", {}).values() if "bind" in p]
        if "access" in query:
            kinds.add("group")
            assert all(f"`{group}`" in said for group in query["access"]), name
        elif bound:
            kinds.add("bound")
            assert all(f"`{attribute}`" in said for attribute in bound), name
        else:
            kinds.add("everyone")
            assert "everyone" in said, name
    assert kinds == {"everyone", "group", "bound"}


def test_the_page_says_where_the_dashboard_manages_groups() -> None:
    words = " ".join(PAGE.read_text("utf-8").split())
    assert "operators manage them: the dashboard, the command line, the API" in words
    assert f"(`{GROUPS}`)" in words  # the page the dashboard serves
