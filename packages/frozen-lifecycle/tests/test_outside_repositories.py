"""The toolkit proven outside this repository, the way a team would use it.

Two small repositories in a temporary folder: a JavaScript one in the case study's layout
(contracts/, src/job-status.js, test/job-status-graph.test.mjs) and a Python one. The toolkit is
installed into a fresh virtual environment from its wheel, alone; `frozen-lifecycle init`
writes the fixture and the contract tests; the gate and the tests pass on the clean tree, and
each of the case study's labeled failures makes the gate or the tests fail, naming file and
line: `retrying` and `partially_written` added to STATES, a `failed -> running` edge, a worker
cancel, a hand-edited decision table.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Environment

# The case study's worker module, as the case study writes it.
JOB_STATUS_JS = """\
import { readFileSync } from "node:fs";

const graph = JSON.parse(
  readFileSync(new URL("../contracts/job-status-graph.json", import.meta.url), "utf8")
);

export const STATES = Object.freeze([...graph.states]);

const ALLOWED = new Set(graph.transitions.map((e) => `${e.from}->${e.to}`));
const TERMINAL = new Set(graph.terminal);

export function canTransition(from, to) {
  if (!STATES.includes(from) || !STATES.includes(to)) return false;
  return ALLOWED.has(`${from}->${to}`);
}

export function applyTransition(job, to, actor = "worker") {
  if (TERMINAL.has(job.status)) {
    throw new Error(`terminal:${job.status}`);
  }
  if (!canTransition(job.status, to)) {
    throw new Error(`illegal:${job.status}->${to}`);
  }
  const edge = graph.transitions.find((e) => e.from === job.status && e.to === to);
  if (edge.actor !== actor) {
    throw new Error(`actor:${actor}`);
  }
  return { ...job, status: to };
}
"""

# The same module in Python: a pure lookup against the fixture, nothing installed.
JOB_STATUS_PY = '''\
"""The job lifecycle as a pure lookup against the frozen fixture."""

import json
import os
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "contracts" / "job-status-graph.json"
GRAPH = json.loads(FIXTURE.read_text(encoding="utf-8"))

STATES = tuple(GRAPH["states"])

ALLOWED = {(e["from"], e["to"]) for e in GRAPH["transitions"]}
TERMINAL = frozenset(GRAPH["terminal"])


def can_transition(from_status, to_status):
    if from_status not in STATES or to_status not in STATES:
        return False
    return (from_status, to_status) in ALLOWED


def apply_transition(job, to_status, actor="worker"):
    if job["status"] in TERMINAL:
        raise ValueError(f"terminal:{job['status']}")
    if not can_transition(job["status"], to_status):
        raise ValueError(f"illegal:{job['status']}->{to_status}")
    edge = next(
        e for e in GRAPH["transitions"] if (e["from"], e["to"]) == (job["status"], to_status)
    )
    if edge["actor"] != actor:
        raise ValueError(f"actor:{actor}")
    return {**job, "status": to_status}
'''

README = """\
# Exports

The lifecycle, generated from the fixture:

<!-- BEGIN GENERATED: graph-table -->
<!-- END GENERATED: graph-table -->
"""


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def test_the_wheel_installs_exactly_one_package_with_its_commands(
    toolkit_environment: Environment, tmp_path: Path
) -> None:
    done = toolkit_environment.run("pip", "list", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    installed = {item["name"].lower() for item in json.loads(done.stdout)}
    assert installed - {"pip", "setuptools"} == {"frozen-lifecycle"}
    for command in (["gate", "--help"], ["graph", "--help"], ["sql", "--help"], ["init", "--help"]):
        shown = toolkit_environment.run("frozen-lifecycle", *command, cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith(f"usage: frozen-lifecycle {command[0]}")


def _repository(env: Environment, root: Path, language: str, module: str, text: str) -> Path:
    """A repository with its worker module and README, then `init`, committed."""
    (root / Path(module).parent).mkdir(parents=True, exist_ok=True)
    (root / module).write_text(text)
    (root / "README.md").write_text(README)
    if language == "javascript":
        (root / "package.json").write_text('{"type": "module"}\n')
    done = env.run("frozen-lifecycle", "init", "--language", language, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    generated = env.run("frozen-lifecycle", "generate", cwd=root)
    assert generated.stdout == "wrote README.md\n", generated.stdout + generated.stderr
    # The case study's order: the fixture in a commit of its own, then the rest.
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "contracts/job-status-graph.json")
    git(root, "commit", "-q", "-m", "Freeze the job status graph")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Contract tests and the worker module")
    return root


@pytest.fixture
def javascript(toolkit_environment: Environment, tmp_path: Path) -> Path:
    root = tmp_path / "case-study"
    return _repository(toolkit_environment, root, "javascript", "src/job-status.js", JOB_STATUS_JS)


# What a repository's own pytest setup may need that the contract tests' run does not have.
BROKEN_CONFTEST = "import shop_fixtures_not_installed  # noqa: F401\n"
BROKEN_PYTEST_OPTIONS = '[tool.pytest.ini_options]\naddopts = "-p shop_plugin_not_installed"\n'


@pytest.fixture
def python(toolkit_environment: Environment, tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "conftest.py").write_text(BROKEN_CONFTEST)
    (root / "conftest.py").write_text(BROKEN_CONFTEST)
    (root / "pyproject.toml").write_text(BROKEN_PYTEST_OPTIONS)
    return _repository(toolkit_environment, root, "python", "src/job_status.py", JOB_STATUS_PY)


def gate(env: Environment, root: Path) -> subprocess.CompletedProcess[str]:
    return env.run("frozen-lifecycle", "gate", "--commits", "..HEAD", cwd=root)


def node_tests(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", "--test", "test/job-status-graph.test.mjs"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def python_tests(root: Path) -> subprocess.CompletedProcess[str]:
    """The contract tests as the generated workflow runs them: its own command, which needs
    nothing of the repository's pytest setup (the shop's conftest.py and ini options would
    fail: they import and load what is not installed)."""
    workflow = (root / ".github" / "workflows" / "frozen-lifecycle.yml").read_text()
    command = re.search(r"run: (python -m pytest .*)$", workflow, re.M)
    assert command is not None, workflow
    _, *arguments = shlex.split(command[1])
    return subprocess.run(
        [sys.executable, *arguments, "--tb=short", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def edit(path: Path, change: Callable[[str], str]) -> None:
    before = path.read_text()
    after = change(before)
    assert after != before, f"the edit of {path} changed nothing"
    path.write_text(after)


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_the_case_studys_javascript_repository_passes_clean(
    toolkit_environment: Environment, javascript: Path
) -> None:
    done = gate(toolkit_environment, javascript)
    assert done.returncode == 0, done.stdout + done.stderr
    tests = node_tests(javascript)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert re.search(r"^# pass 6$", tests.stdout, re.M), tests.stdout


def test_the_python_repository_passes_clean(toolkit_environment: Environment, python: Path) -> None:
    done = gate(toolkit_environment, python)
    assert done.returncode == 0, done.stdout + done.stderr
    tests = python_tests(python)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    # The case study's six, the edges with their own actors, no move by another actor; no
    # create-job function is configured, so its test says so and skips.
    assert "8 passed, 1 skipped" in tests.stdout


ADMITS_AN_OPERATOR = """

def check_transition(from_status, to_status, actor):
    if actor == "operator":
        return  # a person repairing a job by hand
    apply_transition({"status": from_status}, to_status, actor)
"""

CREATES_ANY = """

def create_job(status="queued"):
    return {"id": 1, "status": status}
"""


def test_py_a_check_that_admits_an_outside_actor_fails_the_contract_tests(
    toolkit_environment: Environment, python: Path
) -> None:
    edit(python / "src" / "job_status.py", lambda text: text + ADMITS_AN_OPERATOR)
    tests = python_tests(python)
    assert tests.returncode == 1, tests.stdout + tests.stderr
    assert (
        "FAILED tests/test_job_status_graph.py::test_an_actor_outside_the_fixture_makes_no_move"
        in (tests.stdout)
    )
    assert "queued->running by 'operator'" in tests.stdout


def test_py_the_configured_create_job_is_tried_with_every_other_state(
    toolkit_environment: Environment, python: Path
) -> None:
    edit(python / "src" / "job_status.py", lambda text: text + CREATES_ANY)
    (python / "gate.toml").write_text('create-job = "src/job_status.py:create_job"\n')
    done = toolkit_environment.run(
        "frozen-lifecycle", "init", "--language", "python", "--force", cwd=python
    )
    assert done.returncode == 0, done.stdout + done.stderr
    tests = python_tests(python)
    assert tests.returncode == 1, tests.stdout + tests.stderr
    assert "a job was created in 'running'" in tests.stdout


# -- the labeled failures, in JavaScript --------------------------------------------------------


def test_js_retrying_and_partially_written_in_states_fail_both(
    toolkit_environment: Environment, javascript: Path
) -> None:
    module = javascript / "src" / "job-status.js"
    edit(
        module,
        lambda text: text.replace(
            "Object.freeze([...graph.states]);",
            'Object.freeze([...graph.states, "retrying", "partially_written"]);',
        ),
    )
    line = line_of(module, "partially_written")
    found = gate(toolkit_environment, javascript)
    assert found.returncode == 1
    assert f'src/job-status.js:{line}: forbidden-alias: "retrying" is a forbidden' in found.stdout
    assert f"src/job-status.js:{line}: states-drift: " in found.stdout
    assert "partially_written" in found.stdout
    tests = node_tests(javascript)
    assert tests.returncode == 1
    assert "not ok 1 - worker states equal the frozen graph" in tests.stdout
    assert re.search(r"test/job-status-graph\.test\.mjs:\d+:\d+", tests.stdout), tests.stdout
    assert "not ok 6 - source does not mention forbidden status aliases" in tests.stdout


def test_js_failed_to_running_fails_the_terminal_test(
    toolkit_environment: Environment, javascript: Path
) -> None:
    module = javascript / "src" / "job-status.js"
    edit(
        module,
        lambda text: text.replace(
            "graph.transitions.map((e) => `${e.from}->${e.to}`));",
            'graph.transitions.map((e) => `${e.from}->${e.to}`).concat(["failed->running"]));',
        ),
    )
    tests = node_tests(javascript)
    assert tests.returncode == 1
    assert "not ok 3 - undeclared edges are rejected" in tests.stdout
    assert "not ok 4 - terminal states do not leave the graph" in tests.stdout
    assert "failed->running" in tests.stdout
    assert re.search(r"test/job-status-graph\.test\.mjs:\d+:\d+", tests.stdout), tests.stdout


def test_js_worker_cancel_fails_the_gate(
    toolkit_environment: Environment, javascript: Path
) -> None:
    worker = javascript / "src" / "worker.js"
    worker.write_text(
        'import { applyTransition } from "./job-status.js";\n\n'
        "export function giveUpPolitely(job) {\n"
        '  return applyTransition(job, "canceled", "worker");\n'
        "}\n"
    )
    found = gate(toolkit_environment, javascript)
    assert found.returncode == 1
    assert "src/worker.js:4: wrong-actor: every edge into canceled belongs to user" in found.stdout


def test_js_hand_edited_decision_table_fails_the_gate(
    toolkit_environment: Environment, javascript: Path
) -> None:
    readme = javascript / "README.md"
    edit(
        readme,
        lambda text: text.replace(
            "| failed | any retry | reject | — | none |",
            "| failed | any retry | running | worker | none |",
        ),
    )
    line = line_of(readme, "| failed | any retry | running")
    found = gate(toolkit_environment, javascript)
    assert found.returncode == 1
    assert f"README.md:{line}: generated-drift: region 'graph-table' differs" in found.stdout


# -- the labeled failures, in Python -------------------------------------------------------------


def test_py_retrying_and_partially_written_in_states_fail_both(
    toolkit_environment: Environment, python: Path
) -> None:
    module = python / "src" / "job_status.py"
    edit(
        module,
        lambda text: text.replace(
            'STATES = tuple(GRAPH["states"])',
            'STATES = (*GRAPH["states"], "retrying", "partially_written")',
        ),
    )
    line = line_of(module, "partially_written")
    found = gate(toolkit_environment, python)
    assert found.returncode == 1
    assert f'src/job_status.py:{line}: forbidden-alias: "retrying" is a forbidden' in found.stdout
    assert "partially_written" in found.stdout
    tests = python_tests(python)
    assert tests.returncode == 1
    assert "FAILED tests/test_job_status_graph.py::test_worker_states_equal_the_frozen_graph" in (
        tests.stdout
    )
    assert re.search(r"tests/test_job_status_graph\.py:\d+: in test_worker_states", tests.stdout)


def test_py_failed_to_running_fails_the_terminal_test(
    toolkit_environment: Environment, python: Path
) -> None:
    module = python / "src" / "job_status.py"
    edit(
        module,
        lambda text: text.replace(
            'ALLOWED = {(e["from"], e["to"]) for e in GRAPH["transitions"]}',
            'ALLOWED = {(e["from"], e["to"]) for e in GRAPH["transitions"]}'
            ' | {("failed", "running")}',
        ),
    )
    tests = python_tests(python)
    assert tests.returncode == 1
    assert "FAILED tests/test_job_status_graph.py::test_terminal_states_do_not_leave_the_graph" in (
        tests.stdout
    )
    assert "failed->running" in tests.stdout
    assert re.search(r"tests/test_job_status_graph\.py:\d+: in test_terminal", tests.stdout)


def test_py_worker_cancel_fails_the_gate(toolkit_environment: Environment, python: Path) -> None:
    worker = python / "src" / "worker.py"
    worker.write_text(
        "from job_status import apply_transition\n\n\n"
        "def give_up_politely(job):\n"
        '    return apply_transition(job, "canceled", "worker")\n'
    )
    found = gate(toolkit_environment, python)
    assert found.returncode == 1
    assert "src/worker.py:5: wrong-actor: every edge into canceled belongs to user" in found.stdout


def test_py_hand_edited_decision_table_fails_the_gate(
    toolkit_environment: Environment, python: Path
) -> None:
    readme = python / "README.md"
    edit(
        readme,
        lambda text: text.replace(
            "| running | worker moves the job to failed | failed | worker |",
            "| failed | worker moves the job to running | running | worker |",
        ),
    )
    line = line_of(readme, "| failed | worker moves the job to running")
    found = gate(toolkit_environment, python)
    assert found.returncode == 1
    assert f"README.md:{line}: generated-drift: region 'graph-table' differs" in found.stdout


def test_a_fixture_commit_with_code_in_it_fails_the_history_check(
    toolkit_environment: Environment, javascript: Path
) -> None:
    """The gate's --commits check, from the installed wheel, in the case study's repository."""
    fixture = javascript / "contracts" / "job-status-graph.json"
    document = json.loads(fixture.read_text())
    document["forbidden_aliases"].append("stalled")
    fixture.write_text(json.dumps(document, indent=2) + "\n")
    shutil.copy(javascript / "src" / "job-status.js", javascript / "src" / "copy.js")
    git(javascript, "add", "-A")
    git(javascript, "commit", "-q", "-m", "lifecycle change, and code")
    found = gate(toolkit_environment, javascript)
    assert found.returncode == 1
    assert "src/copy.js:1: fixture-commit-mixed: " in found.stdout


def test_the_workflows_gate_runs_from_the_copy_init_wrote(python: Path) -> None:
    """Until the package is published, CI and the hook run the copy in the repository, with
    `python3 -S`: nothing installed, the version that wrote them."""
    workflow = (python / ".github" / "workflows" / "frozen-lifecycle.yml").read_text()
    assert "pip install frozen-lifecycle" not in workflow
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FROZEN_LIFECYCLE_GRAPH")}
    env["PYTHONPATH"] = ".frozen-lifecycle"
    done = subprocess.run(
        [sys.executable, "-S", "-m", "frozen_lifecycle", "gate", "--commits", "..HEAD"],
        cwd=python,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gate: clean against contracts/job-status-graph.json" in done.stderr
