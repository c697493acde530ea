"""The case study's own repository, in JavaScript, checked by the gate.

Its files are the case study's (`../shared/seeds/000_9b61ee2b2ce65262.txt`): the fixture, the
worker module `src/job-status.js` and the contract tests `test/job-status-graph.test.mjs`.
Laid out as the case study lays it out, the repository passes; each of its labeled failures,
and a few more drifts of the same module, fails.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_PATH
from tests.gate.test_gate_command import run_gate

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

CONTRACT_TEST_MJS = """\
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  applyTransition,
  canTransition,
  STATES,
} from "../src/job-status.js";

const graph = JSON.parse(
  readFileSync(new URL("../contracts/job-status-graph.json", import.meta.url), "utf8")
);

const src = readFileSync(
  new URL("../src/job-status.js", import.meta.url),
  "utf8"
);

test("worker states equal the frozen graph", () => {
  assert.deepEqual([...STATES].sort(), [...graph.states].sort());
});

test("every declared edge is accepted", () => {
  for (const edge of graph.transitions) {
    assert.equal(canTransition(edge.from, edge.to), true, `${edge.from}->${edge.to}`);
  }
});

test("undeclared edges are rejected", () => {
  const allowed = new Set(graph.transitions.map((e) => `${e.from}->${e.to}`));
  for (const from of graph.states) {
    for (const to of graph.states) {
      if (from === to) continue;
      const key = `${from}->${to}`;
      if (!allowed.has(key)) {
        assert.equal(canTransition(from, to), false, key);
      }
    }
  }
});

test("terminal states do not leave the graph", () => {
  for (const term of graph.terminal) {
    for (const to of graph.states) {
      if (to === term) continue;
      assert.equal(canTransition(term, to), false, `${term}->${to}`);
    }
  }
});

test("applyTransition throws on illegal moves", () => {
  assert.throws(() =>
    applyTransition({ id: "job_1", status: "succeeded" }, "running")
  );
});

test("source does not mention forbidden status aliases", () => {
  for (const alias of graph.forbidden_aliases) {
    assert.equal(src.includes(`"${alias}"`) || src.includes(`'${alias}'`), false, alias);
  }
});
"""

DERIVED = "export const STATES = Object.freeze([...graph.states]);"


@pytest.fixture
def case_study(tmp_path: Path) -> Path:
    """The case study's repository: the fixture, the worker module, the contract tests."""
    root = tmp_path / "case-study"
    (root / "contracts").mkdir(parents=True)
    shutil.copy(FIXTURE_PATH, root / "contracts" / "job-status-graph.json")
    (root / "src").mkdir()
    (root / "src" / "job-status.js").write_text(JOB_STATUS_JS)
    (root / "test").mkdir()
    (root / "test" / "job-status-graph.test.mjs").write_text(CONTRACT_TEST_MJS)
    (root / "package.json").write_text('{"type": "module"}\n')  # Node reads them as ES modules
    return root


def edit(root: Path, old: str, new: str) -> None:
    module = root / "src" / "job-status.js"
    text = module.read_text()
    assert old in text
    module.write_text(text.replace(old, new))


def test_the_case_study_layout_passes(case_study: Path) -> None:
    done = run_gate(case_study)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_layout_is_the_case_studys_own_its_contract_tests_pass(case_study: Path) -> None:
    done = subprocess.run(
        ["node", "--test", "test/job-status-graph.test.mjs"],
        cwd=case_study,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_without_states_the_layout_fails_with_states_missing(case_study: Path) -> None:
    edit(case_study, DERIVED, "export const NAMES = Object.freeze([...graph.states]);")
    assert "states-missing" in run_gate(case_study).stdout


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (  # the first labeled failure: an agent adds retrying to STATES
            'export const STATES = Object.freeze([...graph.states, "retrying"]);',
            ["states-drift: STATES names 'retrying'", 'forbidden-alias: "retrying"'],
        ),
        (
            'export const STATES = ["queued", "running", "succeeded", "failed", "canceled", '
            '"partially_written"];',
            ["states-drift: STATES names 'partially_written'"],
        ),
        (
            'export const STATES = Object.freeze(["queued", "running", "succeeded", "failed"]);',
            ["states-drift: STATES lacks fixture state(s) canceled"],
        ),
    ],
)
def test_a_states_definition_that_drifts_fails(
    case_study: Path, new: str, expected: list[str]
) -> None:
    edit(case_study, DERIVED, new)
    done = run_gate(case_study)
    assert done.returncode == 1
    for finding in expected:
        assert finding in done.stdout


@pytest.mark.parametrize(
    ("addition", "expected"),
    [
        (  # the second labeled failure: a polite error path that cancels as the worker
            "export function giveUp(job) {\n"
            '  return applyTransition(job, "canceled", "worker");\n'
            "}\n",
            "wrong-actor: every edge into canceled belongs to user, not worker",
        ),
        (
            "export function stuck(job) {\n  return job.status === 'uploading';\n}\n",
            "unknown-status: 'uploading' compared with a status",
        ),
        (
            'export const WAITING = ["queued", "paused"];\n',
            "states-invented: an array of states names 'paused'",
        ),
    ],
)
def test_a_worker_module_that_drifts_fails(case_study: Path, addition: str, expected: str) -> None:
    module = case_study / "src" / "job-status.js"
    module.write_text(module.read_text() + "\n" + addition)
    done = run_gate(case_study)
    assert done.returncode == 1
    assert expected in done.stdout


def test_a_typescript_union_of_the_states_counts_as_states(case_study: Path) -> None:
    edit(case_study, DERIVED, "const NAMES = Object.freeze([...graph.states]);")
    union = 'export type JobStatus = "queued" | "running" | "succeeded" | "failed" | "canceled";\n'
    (case_study / "src" / "types.ts").write_text(union)
    assert run_gate(case_study).returncode == 0
    (case_study / "src" / "types.ts").write_text(union.replace('"canceled"', '"cancelled"'))
    done = run_gate(case_study)
    assert "states-drift: the type JobStatus lacks fixture state(s) canceled" in done.stdout
    assert "states-invented: the type JobStatus names 'cancelled'" in done.stdout
