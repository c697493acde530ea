"""Findings tied to what carries the lifecycle: with `status-types`, `holders` and `moves`
configured, the rules judge the configured enum, SQL type and moves, and words elsewhere
(another enum, a mapping, a test double's list, a task named like an alias) are no finding."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from snippets import LEXICON

from frozen_lifecycle.gate.config import Carriers, ConfigError, load_config
from frozen_lifecycle.gate.lexicon import Lexicon
from frozen_lifecycle.gate.python_rules import PythonRules
from frozen_lifecycle.gate.sources import SQL
from frozen_lifecycle.gate.text_rules import TextRules

CARRIED = LEXICON.with_carriers(
    ["JobStatus", "job_status"],
    {"FinishedRegistry": "succeeded", "FailedRegistry": "failed"},
    {"_enqueue_job": "queued"},
)


def found(source: str, lexicon: Lexicon = CARRIED) -> list[tuple[int, str, str]]:
    text = textwrap.dedent(source).lstrip("\n")
    facts = PythonRules(lexicon).check(ast.parse(text), text)
    return sorted((h.line, h.code, h.message) for h in facts.hits)


def sql_found(source: str, lexicon: Lexicon = CARRIED) -> list[tuple[int, str]]:
    text = textwrap.dedent(source).lstrip("\n")
    return sorted({(h.line, h.code) for h in TextRules(lexicon).check(SQL, text).hits})


OTHER_WORDS = """
    class EventType(Enum):
        STARTED = "started"
        QUEUED = "queued"

    class WorkerStatus(str, Enum):
        IDLE = "idle"
        RUNNING = "running"

    EMOJI = {"queued": "q", "running": "r", "paused": "p"}
    KWARGS = {"on_success": None, "write_csv_object": None}

    class FakeConnector:
        def open(self):
            self.states.append("open")

    @app.task(name="retrying")
    def retrying():
        return ("queued", "stalled")

    def heartbeat(worker, invoice, log):
        worker.status = "idle"
        if invoice.status == "paid":
            log.info("worker status=draining")
        return Invoice.objects.filter(status="open")
    """


def test_words_outside_the_carriers_are_no_finding() -> None:
    assert found(OTHER_WORDS) == []


def test_the_same_words_are_findings_without_carriers() -> None:
    codes = {code for _, code, _ in found(OTHER_WORDS, LEXICON)}
    assert codes >= {"states-invented", "forbidden-alias", "effect-handlers"}


def test_the_configured_enum_holds_exactly_the_states() -> None:
    source = """
        class JobStatus(str, Enum):
            QUEUED = "queued"
            RUNNING = "running"
            SUCCEEDED = "succeeded"
            FAILED = "failed"
            RETRYING = "retrying"
        """
    assert found(source) == [
        (1, "states-drift", "JobStatus lacks fixture state(s) canceled"),
        (6, "states-drift", "JobStatus names 'retrying', not a state"),
    ]
    facts = PythonRules(CARRIED).check(ast.parse(textwrap.dedent(source)), "")
    assert facts.states_defined  # the repository's STATES definition


def test_a_status_still_takes_states_only() -> None:
    source = """
        def f(job, connector):
            connector.finish_job_run(job_id=1, status="finished")
            if job.status == "retrying":
                return
        """
    assert [code for _, code, _ in found(source)] == ["unknown-status", "unknown-status"]
    owned = """
        class JobStatus(str, Enum):
            QUEUED = "queued"

            def bump(self, jobs):
                jobs[0]["status"] = "stalled"
                ExportJob.objects.filter(status="stalled")
        """
    unknown = [line for line, code, _ in found(owned) if code == "unknown-status"]
    assert unknown == [5, 6]  # a job's row, a job model's query


def test_only_the_configured_sql_type_is_judged() -> None:
    source = """
        CREATE TYPE job_event_type AS ENUM ('deferred', 'started', 'queued');
        CREATE TYPE job_status AS ENUM ('queued', 'running', 'succeeded', 'failed',
            'canceled', 'aborting');
        SELECT id FROM jobs_events WHERE kind IN ('started', 'queued', 'deferred');
        """
    assert sql_found(source) == [(2, "states-invented")]


HOLDERS = """
    class BaseRegistry:
        def requeue(self, job):
            queue._enqueue_job(job)

        def expire(self, job):
            job.set_status(JobStatus.FAILED)

    class FinishedRegistry(BaseRegistry):
        pass

    class FailedRegistry(BaseRegistry):
        def expire(self, job):
            job.set_status("canceled")
    """


def test_a_holders_inherited_method_moves_out_of_its_state() -> None:
    edge = "is not an edge of the fixture"
    assert found(HOLDERS) == [
        (
            3,
            "undeclared-edge",
            f"FailedRegistry.requeue (from BaseRegistry): failed -> queued {edge}",
        ),
        (
            3,
            "undeclared-edge",
            f"FinishedRegistry.requeue (from BaseRegistry): succeeded -> queued {edge}",
        ),
        (
            6,
            "undeclared-edge",
            f"FinishedRegistry.expire (from BaseRegistry): succeeded -> failed {edge}",
        ),
        (13, "undeclared-edge", f"FailedRegistry.expire: failed -> canceled {edge}"),
    ]


def test_the_carriers_are_read_from_the_configuration(tmp_path: Path) -> None:
    (tmp_path / "gate.toml").write_text(
        'status-types = ["JobStatus"]\n'
        'holders = { FinishedJobRegistry = "finished" }\n'
        'moves = { _enqueue_job = "queued" }\n'
    )
    assert load_config(tmp_path).carriers == Carriers(
        status_types=("JobStatus",),
        holders=(("FinishedJobRegistry", "finished"),),
        moves=(("_enqueue_job", "queued"),),
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('holders = ["FinishedJobRegistry"]\n', "holders must be a table of names and states"),
        ("moves = { _enqueue_job = 1 }\n", "moves must be a table of names and states"),
        ('status-types = "JobStatus"\n', "status-types must be a list of strings"),
    ],
)
def test_a_malformed_carrier_is_refused(tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / "gate.toml").write_text(line)
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path)


def test_a_job_models_default_and_constructors_give_the_initial_state() -> None:
    source = """
        class ExportJob(models.Model):
            status = models.CharField(default=JobStatus.RUNNING)

        class Invoice(models.Model):
            status = models.CharField(default="open")

        def run_now(user, store):
            ExportJob.objects.create(owner=user, status="running")
            ExportJob(owner=user, status=JobStatus.QUEUED)
            store.create_job(status=JobStatus.RUNNING)  # a member: the type checker's
        """
    assert [(line, code) for line, code, _ in found(source)] == [
        (2, "not-initial"),
        (8, "not-initial"),
    ]


def test_a_test_then_an_assignment_is_a_move() -> None:
    source = """
        def requeue(job, worker):
            if job.status == JobStatus.SUCCEEDED:
                job.status = JobStatus.QUEUED
            if job.status in ("running",) and job.late:
                job.status = "failed"
            if worker.status == "succeeded":
                worker.status = "queued"
        """
    assert [(line, message) for line, _, message in found(source)] == [
        (3, "succeeded -> queued is not an edge of the fixture"),
    ]
    words = """
        if job["status"] == "failed":
            job["status"] = "running"
        """
    assert [line for line, _, _ in found(words, LEXICON)] == [2]
