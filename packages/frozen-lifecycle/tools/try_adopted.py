"""Reproduce the README's "Tried on two public job queues": for each adopted repository, get
its source at the commit the README names, copy in the fixture and gate.toml kept in
tests/repositories/adopted/<name>/, run the gate from this package's source (`python3 -S`,
nothing installed) and compare its findings with the README's table for that repository.

    python3 packages/frozen-lifecycle/tools/try_adopted.py [--cache DIR] [NAME ...]

Each finding is printed with its verdict from the README, `missing` for a README finding the
gate no longer gives, `new` for one the README does not list; the exit status is 1 on any
difference. The README is the one source of the expected findings and of the pinned commits
(`**name** (`commit`, ...)` and the table under it); tests/test_try_adopted.py checks,
offline, that this parser reads them.

Standard library only. It needs git and network to GitHub, unless `--cache DIR` already holds
clones (DIR/<name>, reused and checked out at the commit) or `--source NAME=DIR` names a tree
to use as it is (an unpacked sdist, say: not checked against the commit, and reported so).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
README = PACKAGE / "README.md"
ADOPTED = PACKAGE / "tests" / "repositories" / "adopted"
SECTION = "## Tried on two public job queues"
URLS = {
    "procrastinate": "https://github.com/procrastinate/procrastinate",
    "rq": "https://github.com/rq/rq",
}
# What the adopted folder puts into the repository's root (the config is gate.toml there).
ADDED = (Path("gate.toml"), Path("contracts") / "job-status-graph.json")

_HEADING = re.compile(r"^\*\*(?P<name>[\w.-]+)\*\* \(`(?P<commit>[0-9a-f]{7,40})`")
_SPAN = re.compile(r"`([^`]*)`")
_TAIL = re.compile(r"^(?P<path>[^:]*):(?P<line>\d+): (?P<rest>.+)$")
_HEAD = re.compile(r"^(?P<path>[^:]*):(?P<line>\d+)$")


@dataclass
class Adopted:
    """One repository of the README's section: its pinned commit and its table, as
    (finding text, verdict) pairs, a row naming several lines giving one pair each."""

    name: str
    commit: str
    expected: list[tuple[str, str]] = field(default_factory=list)


def row_findings(cell: str) -> list[str]:
    """The findings of a table row's first cell: `path:line: code: message`, or several lines
    of one finding written `path:179`, `:557: code: message`."""
    spans = _SPAN.findall(cell)
    if not spans:
        raise ValueError(f"no finding in table cell {cell!r}")
    tail = _TAIL.match(spans[-1])
    if tail is None:
        raise ValueError(f"not a finding: {spans[-1]!r}")
    found: list[str] = []
    path = ""
    for span in spans[:-1]:
        head = _HEAD.match(span)
        if head is None:
            raise ValueError(f"not a file and line: {span!r}")
        path = head["path"] or path
        found.append(f"{path}:{head['line']}: {tail['rest']}")
    path = tail["path"] or path
    found.append(f"{path}:{tail['line']}: {tail['rest']}")
    return found


def read_readme(text: str) -> list[Adopted]:
    """The repositories of the README's section, in its order."""
    lines = iter(text.splitlines())
    for line in lines:
        if line.strip() == SECTION:
            break
    else:
        raise ValueError(f"no section {SECTION!r}")
    repos: list[Adopted] = []
    for line in lines:
        if line.startswith("## "):
            break
        heading = _HEADING.match(line)
        if heading:
            repos.append(Adopted(heading["name"], heading["commit"]))
            continue
        if not repos or not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        verdict = cells[1] if len(cells) > 1 else ""
        repos[-1].expected.extend((found, verdict) for found in row_findings(cells[0]))
    return repos


def checkout(name: str, commit: str, cache: Path) -> Path:
    """A clone of the repository at `commit`, in cache/name (reused when it is there)."""
    clone = cache / name
    if not (clone / ".git").exists():
        clone.parent.mkdir(parents=True, exist_ok=True)
        git("clone", "--quiet", "--filter=blob:none", "--no-checkout", URLS[name], str(clone))
    if subprocess.run(
        ["git", "-C", str(clone), "cat-file", "-e", f"{commit}^{{commit}}"],
        capture_output=True,
        check=False,
    ).returncode:
        git("-C", str(clone), "fetch", "--quiet", "origin")
    git("-C", str(clone), "checkout", "--quiet", "--detach", commit)
    return clone


def git(*args: str) -> None:
    if subprocess.run(["git", *args], check=False).returncode:
        raise SystemExit(f"git {' '.join(args)} failed (no network? --source NAME=DIR then)")


def run_gate(tree: Path, name: str) -> list[str]:
    """The gate's findings in `tree` with the adopted fixture and gate.toml copied in (and
    taken out again afterwards)."""
    added: list[Path] = []
    try:
        for relative in ADDED:
            target = tree / relative
            if target.exists():
                raise SystemExit(f"{target} is there already; the repository has its own")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ADOPTED / name / relative, target)
            added.append(target)
        env = {key: value for key, value in os.environ.items() if not key.endswith("_GRAPH")}
        env["PYTHONPATH"] = str(PACKAGE / "src")
        done = subprocess.run(
            [sys.executable, "-S", "-m", "frozen_lifecycle", "gate", "--format", "json"],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        for target in added:
            target.unlink()
        contracts = tree / "contracts"
        if contracts.is_dir() and not any(contracts.iterdir()):
            contracts.rmdir()
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise SystemExit(f"the gate failed in {tree} ({done.returncode}):\n{done.stderr}")
    return [
        f"{f['path']}:{f['line']}: {f['code']}: {f['message']}" for f in json.loads(done.stdout)
    ]


def compare(expected: Sequence[tuple[str, str]], found: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(verdict, finding) for every finding the gate gives: the README's verdict where its
    table lists it, `new` where it does not; then (`missing`, finding) for each README finding
    the gate did not give. The README shortens messages (`failed -> todo` for `failed -> todo
    is not an edge of the fixture`), so a README finding matches a finding it begins."""
    unmatched = list(expected)
    for text in found:
        for index, (listed, verdict) in enumerate(unmatched):
            if text == listed or text.startswith(listed + " ") or text.startswith(listed + ","):
                del unmatched[index]
                yield verdict.split(":")[0], text
                break
        else:
            yield "new", text
    for listed, _ in unmatched:
        yield "missing", listed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("names", nargs="*", metavar="NAME", help="repositories (default: all)")
    parser.add_argument("--cache", type=Path, help="keep (and reuse) the clones in DIR/<name>")
    parser.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="use DIR as NAME's source as it is (not checked against the commit)",
    )
    args = parser.parse_args(argv)
    sources = dict(item.split("=", 1) for item in args.source)
    repos = read_readme(README.read_text(encoding="utf-8"))
    chosen = [repo for repo in repos if not args.names or repo.name in args.names]
    differ = False
    with tempfile.TemporaryDirectory(prefix="try-adopted-") as scratch:
        cache = args.cache.resolve() if args.cache else Path(scratch)
        for repo in chosen:
            if repo.name in sources:
                tree = Path(sources[repo.name]).resolve()
                origin = f"{tree}, as it is: not checked against {repo.commit}"
            else:
                tree = checkout(repo.name, repo.commit, cache)
                remote = subprocess.run(
                    ["git", "-C", str(tree), "remote", "get-url", "origin"],
                    capture_output=True,
                    text=True,
                    check=False,
                ).stdout.strip()
                origin = f"{remote or URLS[repo.name]} at {repo.commit}"
            print(f"{repo.name} ({origin})")
            counts: Counter[str] = Counter()
            for verdict, text in compare(repo.expected, run_gate(tree, repo.name)):
                kind = verdict if verdict in ("missing", "new") else "matched"
                counts[kind] += 1
                absent = kind == "missing" and not (tree / text.split(":")[0]).is_file()
                print(f"  {verdict:8} {text}" + ("  (no such file in this source)" * absent))
            print(
                f"{repo.name}: {counts['matched']} matched, {counts['missing']} missing, "
                f"{counts['new']} new (README lists {len(repo.expected)})\n"
            )
            differ = differ or bool(counts["missing"] or counts["new"])
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
