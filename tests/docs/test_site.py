"""The docs site builds with `mkdocs build --strict` (a broken link or anchor fails it) and
fetches nothing; the README stays short and its links lead somewhere; the changelog's fragments
make a release's notes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO_ROOT

# What a theme fetches from outside when it is not told otherwise.
OUTSIDE = re.compile(r"fonts\.googleapis\.com|fonts\.gstatic\.com|unpkg\.com|cdn\.jsdelivr\.net")


def test_the_site_builds_strict_and_needs_no_network(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO_ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    pages = list(site.rglob("*.html"))
    assert (site / "reference" / "settings" / "index.html").is_file()
    assert (site / "reference" / "lifecycle.svg").is_file()
    fetching = [str(p.relative_to(site)) for p in pages if OUTSIDE.search(p.read_text("utf-8"))]
    assert fetching == []


def test_the_readme_is_short_and_its_links_lead_to_files() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 200
    for command in ("./scripts/run", "./scripts/test"):
        assert command in readme
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links the docs"
    missing = [t for t in local if not (REPO_ROOT / t).exists()]
    assert missing == []


def test_the_changelog_fragments_make_the_next_release_notes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "towncrier", "build", "--draft", "--version", "9.9.9"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    notes = " ".join(done.stdout.split())
    fragments = [
        p
        for p in (REPO_ROOT / "changelog.d").iterdir()
        if p.name.endswith(".md") and p.name != "README.md"
    ]
    for fragment in fragments:
        kind = fragment.name.split(".")[-2]
        first_line = fragment.read_text(encoding="utf-8").splitlines()[0]
        assert " ".join(first_line.split()) in notes, fragment.name
        assert kind in {"added", "changed", "deprecated", "removed", "fixed", "security"}
