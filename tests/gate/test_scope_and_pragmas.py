"""Where the gate looks (the whole repository, configured paths and excludes) and the pragma
that records a deliberate exception with its reason."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from reportexport import gate
from reportexport.gate.config import compile_patterns, load_config
from reportexport.graph import load_graph
from tests.conftest import REPO_ROOT
from tests.gate.test_gate_command import run_gate, tree  # noqa: F401 - the fixture is reused

ALIAS = "retrying"  # the forbidden alias these tests quote on purpose


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_whole_repository_is_checked_by_default(tree: Path) -> None:  # noqa: F811
    write(
        tree, "scripts/requeue.sql", "UPDATE jobs SET status = 'queued' WHERE status = 'failed';\n"
    )
    write(tree, "deploy/seed.yaml", "jobs:\n  - status: stalled\n")
    done = run_gate(tree)
    assert done.returncode == 1
    assert "scripts/requeue.sql:1: undeclared-edge: failed -> queued" in done.stdout
    assert "deploy/seed.yaml:2: unknown-status: 'stalled'" in done.stdout


def test_an_executable_script_without_a_suffix_is_read(tree: Path) -> None:  # noqa: F811
    write(tree, "scripts/requeue", f"#!/bin/sh\npsql -c \"UPDATE jobs SET status = '{ALIAS}'\"\n")
    write(tree, "scripts/notes", f"not a script: '{ALIAS}'\n")
    done = run_gate(tree)
    assert f'scripts/requeue:2: forbidden-alias: "{ALIAS}"' in done.stdout
    assert "scripts/notes" not in done.stdout


def test_a_blind_status_write_is_found_outside_tests_only(tree: Path) -> None:  # noqa: F811
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


def test_the_corpus_and_the_mutants_are_left_out_by_default(tree: Path) -> None:  # noqa: F811
    write(tree, "tests/gate/corpus/drift/x.toml", f'append = """X = "{ALIAS}" """\n')
    write(tree, "tests/contract/mutants/job_status.py", f'STATES = ("{ALIAS}",)\n')
    done = run_gate(tree)
    assert done.returncode == 0, done.stdout


def test_pyproject_configures_paths_and_excludes(tree: Path) -> None:  # noqa: F811
    write(tree, "legacy/old.sql", "UPDATE jobs SET status = 'stalled';\n")
    write(tree, "scripts/new.sql", "UPDATE jobs SET status = 'stalled';\n")
    write(tree, "pyproject.toml", '[tool.reportexport.gate]\nexclude = ["legacy"]\n')
    done = run_gate(tree)
    assert "scripts/new.sql" in done.stdout
    assert "legacy/old.sql" not in done.stdout
    write(tree, "pyproject.toml", '[tool.reportexport.gate]\npaths = ["src", "legacy"]\n')
    done = run_gate(tree)
    assert "legacy/old.sql" in done.stdout
    assert "scripts/new.sql" not in done.stdout


def test_a_gate_toml_serves_a_repository_without_pyproject(tree: Path) -> None:  # noqa: F811
    write(tree, "scripts/new.sql", "UPDATE jobs SET status = 'stalled';\n")
    write(tree, "gate.toml", 'exclude = ["scripts/**"]\n')
    assert run_gate(tree).returncode == 0


def test_the_command_line_narrows_and_excludes(tree: Path) -> None:  # noqa: F811
    write(tree, "scripts/new.sql", "UPDATE jobs SET status = 'stalled';\n")
    assert run_gate(tree, "--exclude", "scripts/*.sql").returncode == 0
    assert run_gate(tree, "src").returncode == 0
    assert run_gate(tree, "scripts").returncode == 1


def test_a_wrong_configuration_exits_2(tree: Path) -> None:  # noqa: F811
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


def test_a_pragma_with_a_reason_waives_its_line_and_is_listed(tree: Path) -> None:  # noqa: F811
    write(
        tree,
        "scripts/serve.py",
        f'run(log_level="{ALIAS}")  # gate: allow forbidden-alias -- another tool\'s word\n',
    )
    done = run_gate(tree)
    assert done.returncode == 0, done.stdout
    assert "deliberate exception(s), each with its reason" in done.stderr
    assert "scripts/serve.py:1: forbidden-alias -- another tool's word" in done.stderr


def test_a_pragma_on_its_own_line_waives_the_next(tree: Path) -> None:  # noqa: F811
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
def test_each_comment_form_carries_a_pragma(tree: Path, name: str, text: str) -> None:  # noqa: F811
    write(tree, name, text)
    done = run_gate(tree)
    assert done.returncode == 0, done.stdout


def test_a_pragma_in_a_markdown_code_block_is_an_example(tree: Path) -> None:  # noqa: F811
    write(tree, "docs/a.md", "```python\n# gate: allow unknown-status -- an example\n```\n")
    assert run_gate(tree).returncode == 0


def test_a_pragma_without_a_reason_waives_nothing(tree: Path) -> None:  # noqa: F811
    write(tree, "scripts/serve.py", f'run(log_level="{ALIAS}")  # gate: allow forbidden-alias\n')
    done = run_gate(tree)
    assert done.returncode == 1
    assert "scripts/serve.py:1: forbidden-alias" in done.stdout
    assert "scripts/serve.py:1: pragma-reason" in done.stdout


def test_a_pragma_that_waives_nothing_is_a_finding(tree: Path) -> None:  # noqa: F811
    write(tree, "scripts/serve.py", "run()  # gate: allow forbidden-alias -- nothing here\n")
    done = run_gate(tree)
    assert done.stdout.startswith("scripts/serve.py:1: pragma-unused:")


def test_a_quoted_alias_in_src_is_never_waived(tree: Path) -> None:  # noqa: F811
    target = tree / "src" / "reportexport" / "render.py"
    target.write_text(
        target.read_text() + f'\nLEVEL = "{ALIAS}"  # gate: allow forbidden-alias -- no\n'
    )
    done = run_gate(tree)
    assert done.returncode == 1
    assert "src/reportexport/render.py" in done.stdout
    assert "no pragma waives this here" in done.stdout


def test_in_src_a_pragma_still_serves_the_other_rules(tree: Path) -> None:  # noqa: F811
    target = tree / "src" / "reportexport" / "render.py"
    target.write_text(
        target.read_text()
        + "\n# gate: allow unknown-status -- a word another system sends us\n"
        + 'FOREIGN = {"status": "stalled"}\n'
    )
    assert run_gate(tree).returncode == 0


# -- speed ---------------------------------------------------------------------------------------


def test_the_gate_takes_well_under_a_second_of_cpu_on_this_tree() -> None:
    """Wall time depends on what else the machine runs; the CPU the gate spends does not."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    env.pop("REPORTEXPORT_GRAPH", None)
    done = subprocess.run(
        [sys.executable, "-S", "-m", "reportexport.gate"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert done.returncode == 0, done.stdout
    assert spent < 1.0


def test_scanning_in_two_processes_finds_what_one_process_finds() -> None:
    """The per-file rules depend on the file alone, so a forked half gives the same results."""
    config = load_config(REPO_ROOT)
    fixture = REPO_ROOT / "contracts" / "job-status-graph.json"
    files = gate.read_sources(REPO_ROOT, (REPO_ROOT,), fixture, config.exclude)
    assert len(files) >= gate.PARALLEL_FROM
    graph = load_graph(fixture)
    alone = gate.scan_all(gate.Scanner(graph, memo={}), files)
    forked = gate.scan_all(gate.Scanner(graph), files)
    assert forked == alone
