"""`frozen-lifecycle init --from PATH:NAME`: the fixture drafted from what the repository has
(its states; the edges a person's to write), then the tests once it is finished."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frozen_lifecycle.cli import main
from frozen_lifecycle.draft import DraftError, draft_from

SOURCES = {
    "an enum": (
        "jobs.py",
        "class Status(Enum):\n    TODO = 'todo'\n    DOING = 'doing'\n    FAILED = 'failed'\n",
        "Status",
    ),
    "a StrEnum of auto()": (
        "jobs.py",
        "class Status(StrEnum):\n    TODO = auto()\n    DOING = auto()\n    FAILED = auto()\n",
        "Status",
    ),
    "a Literal": ("types.py", 'JobState = Literal["todo", "doing", "failed"]\n', "JobState"),
    "a SQL enum type": (
        "schema.sql",
        "CREATE TYPE other AS ENUM ('x');\n"
        "CREATE TYPE job_status AS ENUM ('todo', 'doing', 'failed');\n",
        "job_status",
    ),
    "a table's CHECK": (
        "schema.sql",
        "CREATE TABLE jobs (\n  id integer,\n  status text NOT NULL DEFAULT 'todo'\n"
        "    CHECK (status IN ('todo', 'doing', 'failed')),\n  note text\n);\n",
        "jobs",
    ),
    "a CHECK added later": (
        "schema.sql",
        "CREATE TABLE jobs (id integer, status text);\n"
        "ALTER TABLE jobs ADD CONSTRAINT jobs_status\n"
        "  CHECK (status IN ('todo', 'doing', 'failed'));\n",
        "jobs",
    ),
}


@pytest.mark.parametrize("case", SOURCES, ids=list(SOURCES))
def test_the_states_come_from_what_holds_them(tmp_path: Path, case: str) -> None:
    name, text, carrier = SOURCES[case]
    (tmp_path / name).write_text(text)
    draft = draft_from(tmp_path, f"{name}:{carrier}")
    assert draft.states == ("todo", "doing", "failed")
    assert draft.carrier == carrier


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("jobs.py", "takes PATH:NAME"),
        ("missing.py:Status", "no such file missing.py"),
        ("jobs.py:Other", "holds no states named Other"),
        ("notes.txt:Status", "reads a Python or SQL file"),
    ],
)
def test_a_source_without_states_is_refused(tmp_path: Path, source: str, message: str) -> None:
    (tmp_path / "jobs.py").write_text("class Status(Enum):\n    A = 'todo'\n")
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(DraftError, match=message):
        draft_from(tmp_path, source)


def test_adoption_in_three_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "queue"
    (root / "queue").mkdir(parents=True)
    (root / "queue" / "jobs.py").write_text(
        "class JobStatus(str, Enum):\n    QUEUED = 'queued'\n    STARTED = 'started'\n"
        "    FINISHED = 'finished'\n    FAILED = 'failed'\n"
    )
    init = ["init", "--root", str(root), "--language", "python"]
    assert main([*init, "--from", "queue/jobs.py:JobStatus"]) == 0
    out = capsys.readouterr().out
    assert "drafted contracts/job-status-graph.json from queue/jobs.py:JobStatus" in out
    fixture = root / "contracts" / "job-status-graph.json"
    draft = json.loads(fixture.read_text())
    assert draft["states"] == ["queued", "started", "finished", "failed"]
    assert (draft["initial"], draft["terminal"], draft["transitions"]) == (
        "queued",
        ["finished", "failed"],
        [],
    )
    assert (root / "gate.toml").read_text().endswith('status-types = ["JobStatus"]\n')
    assert not (root / "tests").exists()  # nothing is written for a lifecycle not yet decided
    assert main(init) == 2  # a draft without edges is no fixture yet
    assert "transitions" in capsys.readouterr().err
    draft["transitions"] = [
        {"from": "queued", "to": "started", "actor": "worker"},
        {"from": "started", "to": "finished", "actor": "worker"},
        {"from": "started", "to": "failed", "actor": "worker"},
    ]
    fixture.write_text(json.dumps(draft))
    assert main(init) == 0
    assert (root / "tests" / "test_job_status_graph.py").is_file()
    assert main(["gate", "--root", str(root)]) == 0, capsys.readouterr().out
