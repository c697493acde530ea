"""Where the gate looks (the whole repository, configured paths and excludes) and the pragma
that records a deliberate exception with its reason."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import gate_environ, run_gate
from frozen_lifecycle import gate
from frozen_lifecycle.gate.config import compile_patterns, load_config
from frozen_lifecycle.graph import load_graph

ALIAS = "retrying"  # the forbidden alias these tests quote on purpose


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_whole_repository_is_checked_by_default(tree: Path) -> None:
    write(
        tree, "scripts/requeue.sql", "UPDATE jobs SET status = 'queued' WHERE status = 'failed';\n"
    )
    write(tree, "deploy/seed.yaml", "jobs:\n  - status: stalled\n")
    done = run_gate(tree)
    assert done.returncode == 1
    assert "scripts/requeue.sql:1: undeclared-edge: failed -> queued" in done.stdout
    assert "deploy/seed.yaml:2: unknown-status: 'stalled'" in done.stdout


def test_an_executable_script_without_a_suffix_is_read(tree: Path) -> None:
    write(tree, "scripts/requeue", f"#!/bin/sh\npsql -c \"UPDATE jobs SET status = '{ALIAS}'\"\n")
    write(tree, "scripts/notes", f"not a script: '{ALIAS}'\n")
    done = run_gate(tree)
    assert f'scripts/requeue:2: forbidden-alias: "{ALIAS}"' in done.stdout
    assert "scripts/notes" not in done.stdout


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_in_a_git_checkout_what_git_ignores_is_not_read(tree: Path) -> None:
    """A local database folder or a mutation run holds copies and data, not the repository."""
    git(tree, "init", "-q")
    write(tree, ".gitignore", "/scratch/\n*.local.sql\n")
    write(tree, "scratch/copy.sql", "UPDATE jobs SET status = 'stalled';\n")
    write(tree, "db/seed.local.sql", "UPDATE jobs SET status = 'stalled';\n")
    write(tree, "db/new.sql", "UPDATE jobs SET status = 'stalled';\n")  # new, not yet added
    done = run_gate(tree)
    assert "db/new.sql:1: unknown-status" in done.stdout
    assert "scratch/" not in done.stdout
    assert "seed.local" not in done.stdout


def test_outside_git_tool_and_data_folders_are_not_read(tree: Path) -> None:
    for folder in (".mutate/run1", ".hypothesis", "var", "htmlcov"):
        write(tree, f"{folder}/copy.py", f'STATUS = "{ALIAS}"\n')
    write(
        tree, "src/var/kept.sql", "UPDATE jobs SET status = 'stalled';\n"
    )  # var/ at the root only
    done = run_gate(tree)
    assert [line.split(": ")[0] for line in done.stdout.splitlines()] == ["src/var/kept.sql:1"]


def test_a_python_module_that_names_nothing_the_rules_read_is_not_parsed(
    tree: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write(tree, "src/shop/plain.py", "def double(x: int) -> int:\n    return 2 * x\n")
    parsed: list[str] = []
    parse = ast.parse

    def counted(source: str, filename: str = "<unknown>", *args: Any, **kwargs: Any) -> Any:
        parsed.append(filename)
        return parse(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counted)
    config = load_config(tree)
    fixture = tree / "contracts" / "job-status-graph.json"
    files = gate.read_sources(tree, (tree,), fixture, config.exclude)
    gate.scan_all(gate.Scanner(load_graph(fixture), memo={}), files)
    assert "src/shop/plain.py" not in parsed
    assert "src/shop/worker.py" in parsed


def test_a_blind_status_write_is_found_outside_tests_only(tree: Path) -> None:
    """Tests write statuses by hand on purpose, as an operator in a shell would."""
    blind = (
        "def give_up(conn, job_id):\n"
        "    conn.execute(f\"UPDATE jobs SET status = 'failed', change_actor = 'worker' "
        'WHERE id = {job_id}")\n'
    )
    write(tree, "tests/store/test_by_hand.py", blind)
    write(tree, "tools/give_up.py", blind)
    done = run_gate(tree)
    assert "tools/give_up.py:2: no-source-state" in done.stdout
    assert "test_by_hand" not in done.stdout


def test_the_corpus_and_the_mutants_are_left_out_by_default(tree: Path) -> None:
    write(tree, "tests/gate/corpus/drift/x.toml", f'append = """X = "{ALIAS}" """\n')
    write(tree, "tests/contract/mutants/job_status.py", f'STATES = ("{ALIAS}",)\n')
    done = run_gate(tree)
    assert done.returncode == 0, done.stdout


# What the shop generates, as its pyproject.toml says it, for configurations written anew.
GENERATED_HERE = 'typed-names = "src/shop/lifecycle.py"\n'


def test_pyproject_configures_paths_and_excludes(tree: Path) -> None:
    write(tree, "legacy/old.sql", "UPDATE jobs SET status = 'stalled';\n")
    write(tree, "scripts/new.sql", "UPDATE jobs SET status = 'stalled';\n")
    write(tree, "pyproject.toml", '[tool.frozen-lifecycle.gate]\nexclude = ["legacy"]\n')
    done = run_gate(tree)
    assert "scripts/new.sql" in done.stdout
    assert "legacy/old.sql" not in done.stdout
    write(tree, "pyproject.toml", '[tool.frozen-lifecycle.gate]\npaths = ["src", "legacy"]\n')
    done = run_gate(tree)
    assert "legacy/old.sql" in done.stdout
    assert "scripts/new.sql" not in done.stdout


def test_the_former_table_name_is_read_and_both_names_at_once_are_refused(
    tree: Path,
) -> None:
    """`[tool.reportexport.gate]`, where the gate's settings lived before the toolkit was a
    package of its own, still configures it; both tables at once is a mistake to name."""
    write(tree, "scripts/new.sql", "UPDATE jobs SET status = 'stalled';\n")
    former = '[tool.reportexport.gate]\nexclude = ["scripts"]\n'
    write(tree, "pyproject.toml", former + GENERATED_HERE)
    assert run_gate(tree).returncode == 0
    both = "[tool.reportexport.gate]\nexclude = []\n[tool.frozen-lifecycle.gate]\nexclude = []\n"
    write(tree, "pyproject.toml", both)
    done = run_gate(tree)
    assert done.returncode == 2
    assert "both [tool.frozen-lifecycle.gate] and [tool.reportexport.gate]" in done.stderr


def test_a_gate_toml_serves_a_repository_without_pyproject(tree: Path) -> None:
    (tree / "pyproject.toml").unlink()
    write(tree, "scripts/new.sql", "UPDATE jobs SET status = 'stalled';\n")
    write(tree, "gate.toml", 'exclude = ["scripts/**"]\n' + GENERATED_HERE)
    assert run_gate(tree).returncode == 0


def test_the_command_line_narrows_and_excludes(tree: Path) -> None:
    write(tree, "scripts/new.sql", "UPDATE jobs SET status = 'stalled';\n")
    assert run_gate(tree, "--exclude", "scripts/*.sql").returncode == 0
    assert run_gate(tree, "src").returncode == 0
    assert run_gate(tree, "scripts").returncode == 1


def test_a_wrong_configuration_exits_2(tree: Path) -> None:
    (tree / "pyproject.toml").unlink()
    write(tree, "gate.toml", 'excludes = ["scripts"]\n')
    done = run_gate(tree)
    assert done.returncode == 2
    assert "unknown gate setting(s) excludes" in done.stderr


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("tests/**/corpus/**", "tests/gate/corpus/drift/a.toml", True),
        ("tests/**/corpus/**", "tests/corpus/a.toml", True),
        ("src/*/migrations/000[1-7]_*.sql", "src/store/migrations/0003_x.sql", True),
        ("src/*/migrations/000[1-7]_*.sql", "src/store/migrations/0008_x.sql", False),
        ("legacy", "legacy/deep/file.py", True),
        ("*.sql", "deep/file.sql", False),
        ("**/*.sql", "deep/file.sql", True),
    ],
)
def test_exclude_patterns(pattern: str, path: str, matches: bool) -> None:
    compiled = compile_patterns([pattern])
    assert compiled is not None
    assert (compiled.fullmatch(path) is not None) is matches


# -- pragmas ---------------------------------------------------------------------------------------


def test_a_pragma_with_a_reason_waives_its_line_and_is_listed(tree: Path) -> None:
    write(
        tree,
        "scripts/serve.py",
        f'run(log_level="{ALIAS}")  # gate: allow forbidden-alias -- another tool\'s word\n',
    )
    done = run_gate(tree)
    assert done.returncode == 0, done.stdout
    assert "deliberate exception(s), each with its reason" in done.stderr
    assert "scripts/serve.py:1: forbidden-alias -- another tool's word" in done.stderr


def test_a_pragma_on_its_own_line_waives_the_next(tree: Path) -> None:
    write(
        tree,
        "scripts/check.py",
        "# gate: allow unknown-status -- the refusal under test\n"
        "SQL = \"UPDATE jobs SET status = 'stalled'\"\n",
    )
    assert run_gate(tree).returncode == 0


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "scripts/a.sql",
            "SELECT 1 WHERE status = 'stalled'; -- gate: allow unknown-status -- why\n",
        ),
        ("scripts/a.js", "if (job.status === 'stalled') {} // gate: allow unknown-status -- why\n"),
        (
            "scripts/a.js",
            "/* gate: allow unknown-status -- why */\nif (job.status === 'stalled') {}\n",
        ),
        ("docs/a.md", "`status = 'stalled'` <!-- gate: allow unknown-status -- why -->\n"),
        (
            "docs/a.html",
            "{# gate: allow unknown-status -- why #}\n{% if job.status == 'stalled' %}\n",
        ),
        ("deploy/a.yaml", "status: stalled  # gate: allow unknown-status -- why\n"),
        ("deploy/a.toml", 'status = "stalled"  # gate: allow unknown-status -- why\n'),
    ],
)
def test_each_comment_form_carries_a_pragma(tree: Path, name: str, text: str) -> None:
    write(tree, name, text)
    done = run_gate(tree)
    assert done.returncode == 0, done.stdout


def test_a_pragma_in_a_markdown_code_block_is_an_example(tree: Path) -> None:
    write(tree, "docs/a.md", "```python\n# gate: allow unknown-status -- an example\n```\n")
    assert run_gate(tree).returncode == 0


def test_a_pragma_without_a_reason_waives_nothing(tree: Path) -> None:
    write(tree, "scripts/serve.py", f'run(log_level="{ALIAS}")  # gate: allow forbidden-alias\n')
    done = run_gate(tree)
    assert done.returncode == 1
    assert "scripts/serve.py:1: forbidden-alias" in done.stdout
    assert "scripts/serve.py:1: pragma-reason" in done.stdout


def test_a_pragma_that_waives_nothing_is_a_finding(tree: Path) -> None:
    write(tree, "scripts/serve.py", "run()  # gate: allow forbidden-alias -- nothing here\n")
    done = run_gate(tree)
    assert done.stdout.startswith("scripts/serve.py:1: pragma-unused:")


def test_a_quoted_alias_in_src_is_never_waived(tree: Path) -> None:
    target = tree / "src" / "shop" / "worker.py"
    target.write_text(
        target.read_text() + f'\nLEVEL = "{ALIAS}"  # gate: allow forbidden-alias -- no\n'
    )
    done = run_gate(tree)
    assert done.returncode == 1
    assert "src/shop/worker.py" in done.stdout
    assert "no pragma waives this here" in done.stdout


def test_in_src_a_pragma_still_serves_the_other_rules(tree: Path) -> None:
    target = tree / "src" / "shop" / "worker.py"
    target.write_text(
        target.read_text()
        + "\n# gate: allow unknown-status -- a word another system sends us\n"
        + 'FOREIGN = {"status": "stalled"}\n'
    )
    assert run_gate(tree).returncode == 0


# -- two processes ---------------------------------------------------------------------------


FORK_PROBE = """
import json, os, sys
from pathlib import Path
from frozen_lifecycle import gate
from frozen_lifecycle.gate.config import load_config
from frozen_lifecycle.graph import load_graph

root = Path(sys.argv[1])
fixture = root / "contracts" / "job-status-graph.json"
files = gate.read_sources(root, (root,), fixture, load_config(root).exclude)
graph = load_graph(fixture)
alone = gate.scan_all(gate.Scanner(graph, memo={}), files)
parent, scanned_here, forks = os.getpid(), [], []
scan, fork = gate.Scanner.scan, os.fork


def counted_scan(self, source):
    if os.getpid() == parent:
        scanned_here.append(source.name)
    return scan(self, source)


def counted_fork():
    pid = fork()
    if pid:
        forks.append(pid)
    return pid


gate.Scanner.scan, os.fork = counted_scan, counted_fork
forked = gate.scan_all(gate.Scanner(graph), files)
print(json.dumps({
    "files": len(files),
    "forks": len(forks),
    "same": forked == alone,
    "hits": sum(len(scanned.facts.hits) for scanned in forked),
    "parent_scanned_only_its_half": scanned_here == [f.name for f in files[0::2]],
}))
"""


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the gate forks only with a second core")
def test_scanning_in_two_processes_finds_what_one_process_finds(tree: Path) -> None:
    """The per-file rules depend on the file alone, so a forked half gives the same results.

    Run in a fresh process: this one has threads, and the gate never forks beside threads.
    The shop grows to enough files for a fork, some with findings, so "the same" compares
    findings and not only silence."""
    worker = (tree / "src" / "shop" / "worker.py").read_text(encoding="utf-8")
    stalled = [f"scripts/requeue_{n}.sql" for n in range(8)]
    for n in range(gate.PARALLEL_FROM):
        write(tree, f"src/shop/jobs/worker_{n}.py", worker)
    for name in stalled:
        write(tree, name, "UPDATE jobs SET status = 'stalled';\n")
    env = gate_environ()
    done = subprocess.run(
        [sys.executable, "-S", "-c", FORK_PROBE, str(tree)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout)
    assert found["files"] >= gate.PARALLEL_FROM
    assert found["forks"] == 1  # the child scanned every other file...
    assert found["parent_scanned_only_its_half"]  # ...and its results were the ones used
    assert found["same"]
    assert found["hits"] >= len(stalled)  # each half found some
