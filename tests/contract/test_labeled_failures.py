"""The case study's labeled failures, reproduced against mutated copies of the module.

Each mutant is the real source of reportexport/core/job_status.py with one change appended,
loaded as a module of its own; the case study's own contract tests must then fail.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.contract import test_job_status_graph as contract
from tests.contract.conftest import MODULE_PATH

# gate: allow forbidden-alias -- the case study's labeled failure, as a mutant
WIDEN_STATES = '\nSTATES = (*STATES, "retrying")\n'

ALLOW_FAILED_TO_RUNNING = """
_declared_can_transition = can_transition


def can_transition(from_status, to_status, **kwargs):
    if (from_status, to_status) == ("failed", "running"):
        return True
    return _declared_can_transition(from_status, to_status, **kwargs)
"""

POLITE_ERROR_PATH = """

def give_up_politely(job):
    return apply_transition(job, "canceled", "worker")
"""


def load_mutant(tmp_path: Path, name: str, addition: str) -> tuple[ModuleType, str]:
    source = MODULE_PATH.read_text(encoding="utf-8") + addition
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module, source


def test_a_module_that_adds_retrying_fails_the_states_test(
    tmp_path: Path, graph: dict[str, Any]
) -> None:
    mutant, source = load_mutant(tmp_path, "widened_states", WIDEN_STATES)
    with pytest.raises(AssertionError):
        contract.test_worker_states_equal_the_frozen_graph(mutant, graph)
    # gate: allow forbidden-alias -- the word the mutant's failure names
    with pytest.raises(AssertionError, match="retrying"):
        contract.test_source_does_not_mention_forbidden_status_aliases(source, graph)


def test_a_module_that_allows_failed_to_running_fails_the_terminal_test(
    tmp_path: Path, graph: dict[str, Any]
) -> None:
    mutant, _ = load_mutant(tmp_path, "reopens_failed", ALLOW_FAILED_TO_RUNNING)
    with pytest.raises(AssertionError, match="failed->running"):
        contract.test_terminal_states_do_not_leave_the_graph(mutant, graph)
    with pytest.raises(AssertionError, match="failed->running"):
        contract.test_undeclared_edges_are_rejected(mutant, graph)


def test_a_worker_cancel_in_an_error_path_raises_actor_worker(tmp_path: Path) -> None:
    mutant, _ = load_mutant(tmp_path, "polite_error_path", POLITE_ERROR_PATH)
    with pytest.raises(mutant.ActorError) as raised:
        mutant.give_up_politely({"id": "job_1", "status": "running"})
    assert str(raised.value) == "actor:worker"


def test_the_unmutated_module_passes_every_contract_test(
    tmp_path: Path, graph: dict[str, Any]
) -> None:
    """Control: loading the source the same way without a change breaks nothing."""
    module, source = load_mutant(tmp_path, "unchanged", "")
    contract.test_worker_states_equal_the_frozen_graph(module, graph)
    contract.test_every_declared_edge_is_accepted(module, graph)
    contract.test_undeclared_edges_are_rejected(module, graph)
    contract.test_terminal_states_do_not_leave_the_graph(module, graph)
    contract.test_apply_transition_throws_on_illegal_moves(module)
    contract.test_source_does_not_mention_forbidden_status_aliases(source, graph)
