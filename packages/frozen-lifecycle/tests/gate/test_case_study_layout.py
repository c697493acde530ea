"""The case study's own repository, in JavaScript, checked by the gate.

Its files are the case study's (`../shared/seeds/000_9b61ee2b2ce65262.txt`): the fixture, the
worker module `src/job-status.js` and the contract tests `test/job-status-graph.test.mjs`, kept
in `repositories/case-study` (the `case_study` fixture adds the starter fixture).
Laid out as the case study lays it out, the repository passes; each of its labeled failures,
and a few more drifts of the same module, fails.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_gate

DERIVED = "export const STATES = Object.freeze([...graph.states]);"


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
