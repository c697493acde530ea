"""Findings tied to what carries the lifecycle: with `status-types`, `holders` and `moves`
configured, the rules judge the configured enum, SQL type and moves, and words elsewhere
(another enum, a mapping, a test double's list, a task named like an alias) are no finding;
with `job-models`, `status-columns` and `job-tables`, the job's model, column and tables are
named instead of guessed."""

from __future__ import annotations

import ast
import json
import shutil
import textwrap
from pathlib import Path

import pytest
from snippets import LEXICON

from conftest import STARTER_FIXTURE, run_gate
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


# A repository whose jobs are `tasks`, beside `schedules` whose status takes the same words.
TASKS_AND_SCHEDULES = {
    "db/queries.sql": """\
        CREATE TABLE tasks (id bigint PRIMARY KEY, status text NOT NULL);
        CREATE TABLE schedules (id bigint PRIMARY KEY, status text NOT NULL);
        -- A schedule's own lifecycle, in the same words as a task's.
        UPDATE schedules SET status = 'paused' WHERE id = $1 AND status = 'running';
        UPDATE schedules SET status = 'queued' WHERE id = $1;
        UPDATE schedules SET status = 'running' WHERE id = $1 AND status = 'canceled';
        INSERT INTO schedules (id, status) VALUES ($1, 'running');
        -- The tasks: one drift each.
        UPDATE tasks SET status = 'queued' WHERE id = $1 AND status = 'succeeded';
        UPDATE tasks SET status = 'running' WHERE id = $1;
        INSERT INTO tasks (id, status) VALUES ($1, 'running');
        """,
    "app/store.py": """\
        class Task(Model):
            status = CharField(default="running")


        class Schedule(Model):
            status = CharField(default="running")


        def rearm(db, schedule_id):
            db.execute("UPDATE schedules SET status = 'queued' WHERE id = %s AND status = 'failed'")
            Schedule(status="running")
            Task(status="succeeded")
        """,
}


def gate_findings(root: Path, config: str) -> list[tuple[str, int, str]]:
    """The gate's findings in a repository of TASKS_AND_SCHEDULES with that gate.toml."""
    (root / "contracts").mkdir()
    shutil.copy(STARTER_FIXTURE, root / "contracts" / "job-status-graph.json")
    for name, text in TASKS_AND_SCHEDULES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    (root / "gate.toml").write_text(config)
    ran = run_gate(root, "--format", "json")
    assert ran.returncode in (0, 1), ran.stderr
    findings = json.loads(ran.stdout)
    return [(f["path"], f["line"], f["code"]) for f in findings if f["code"] != "states-missing"]


def test_only_the_configured_job_tables_and_models_are_judged(tmp_path: Path) -> None:
    """With job-tables and job-models named, a schedule's moves in the job's words are no
    finding, and the tasks' moves and creations are."""
    config = 'job-tables = ["tasks"]\njob-models = ["Task"]\n'
    assert gate_findings(tmp_path, config) == [
        ("app/store.py", 2, "not-initial"),
        ("app/store.py", 12, "not-initial"),
        ("db/queries.sql", 9, "undeclared-edge"),
        ("db/queries.sql", 10, "no-source-state"),
        ("db/queries.sql", 11, "not-initial"),
    ]


def test_without_job_tables_every_updated_status_is_judged(tmp_path: Path) -> None:
    """Without the keys the gate guesses as it did: any table's `UPDATE ... SET status`, an
    `INSERT` into a table named for jobs (not `tasks`), no model's constructor."""
    assert gate_findings(tmp_path, "") == [
        ("app/store.py", 10, "undeclared-edge"),
        ("db/queries.sql", 4, "unknown-status"),
        ("db/queries.sql", 5, "no-source-state"),
        ("db/queries.sql", 5, "undeclared-edge"),
        ("db/queries.sql", 6, "undeclared-edge"),
        ("db/queries.sql", 9, "undeclared-edge"),
        ("db/queries.sql", 10, "no-source-state"),
    ]


def test_a_configured_status_column_is_the_one_read() -> None:
    """With status-columns named, SQL moves and a job model's field are read on that column,
    and another column named status is another thing's."""
    lexicon = LEXICON.with_jobs(["Task"], ["state"], ["tasks"])
    sql = """
        UPDATE tasks SET state = 'queued', status = 'x' WHERE id = $1 AND state = 'succeeded';
        UPDATE tasks SET status = 'queued' WHERE id = $1 AND status = 'succeeded';
        INSERT INTO tasks (id, status, state) VALUES ($1, 'running', 'running');
        SELECT id FROM tasks WHERE state = 'stalled';
        """
    assert sql_found(sql, lexicon) == [
        (1, "undeclared-edge"),
        (3, "not-initial"),
        (4, "unknown-status"),
    ]
    source = """
        class Task(Model):
            state = CharField(default="running")
            status = CharField(default="running")
        """
    assert [(line, code) for line, code, _ in found(source, lexicon)] == [(2, "not-initial")]


def test_the_job_names_are_read_from_the_configuration(tmp_path: Path) -> None:
    (tmp_path / "gate.toml").write_text(
        'job-models = ["Task"]\nstatus-columns = ["state"]\njob-tables = ["public.tasks"]\n'
    )
    carriers = load_config(tmp_path).carriers
    assert (carriers.job_models, carriers.status_columns, carriers.job_tables) == (
        ("Task",),
        ("state",),
        ("public.tasks",),
    )
    assert not carriers.configured  # naming the job does not switch to reading by carriers


@pytest.mark.parametrize(
    "line",
    ['job-tables = "tasks"\n', "job-tables = []\n", 'status-columns = ["a state"]\n'],
)
def test_a_malformed_job_name_is_refused(tmp_path: Path, line: str) -> None:
    (tmp_path / "gate.toml").write_text(line)
    with pytest.raises(ConfigError, match="must be a list of"):
        load_config(tmp_path)


def test_a_statement_that_writes_no_other_table_is_still_read() -> None:
    """Job tables named, a write to another table is its own, and every other statement (a
    read, a write to a job table that also writes history, a PL/pgSQL body) is read."""
    lexicon = LEXICON.with_jobs([], [], ["tasks"])
    sql = """
        UPDATE schedules SET status = 'paused' WHERE id = $1 AND status = 'succeeded';
        SELECT id FROM task_history WHERE to_status = 'stalled';
        WITH moved AS (UPDATE tasks SET status = 'queued' WHERE status = 'failed' RETURNING id)
        INSERT INTO task_history (task_id) SELECT id FROM moved;
        DO $$ BEGIN
            UPDATE schedules SET status = 'running' WHERE status = 'canceled';
            UPDATE tasks SET status = 'running' WHERE status = 'canceled';
        END $$;
        """
    assert sql_found(sql, lexicon) == [
        (2, "unknown-status"),
        (3, "undeclared-edge"),
        (7, "undeclared-edge"),
    ]


def test_named_job_models_replace_the_guessed_ones() -> None:
    """With job-models named, those models make jobs, and no other class is taken for one:
    not `NewJob`, not a class whose name ends in Job."""
    source = """
        NewJob(status="running")
        ExportJob(status="running")
        Task(status="running")
        Task.objects.create(status="running")
        """
    named = LEXICON.with_jobs(["Task"], [], [])
    assert [line for line, _, _ in found(source, named)] == [3, 4]
    assert [line for line, _, _ in found(source, LEXICON)] == [1]  # the guess, as before
