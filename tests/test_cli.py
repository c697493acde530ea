"""The command line on this machine: demo, local exports and their owner, and its refusals."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport import cli

TOKENS: dict[str, str] = {}


@pytest.fixture
def home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    """A demo data directory (1,000 orders) with its first people, as `demo` leaves it."""
    for name in ("DATABASE_URL", "CATALOG", "OBJECTS_URL", "SERVER", "TOKEN", "OWNER", "CONFIG"):
        monkeypatch.delenv(f"REPORTEXPORT_{name}", raising=False)
    monkeypatch.setenv("REPORTEXPORT_HOME", str(tmp_path / "var"))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["demo", "--rows", "1000"]) == 0
    out = capsys.readouterr().out
    TOKENS.clear()
    TOKENS.update(re.findall(r"created \w+ '(\w+)'; token \(shown once\): (\S+)", out))
    assert set(TOKENS) == {"operator", "demo"}
    return tmp_path / "var"


def jobs_in(home: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(home / "reportexport.db") as conn:
        return conn.execute("SELECT id, owner, status, rows_written FROM jobs").fetchall()


def test_a_local_export_is_owned_by_the_default_user_and_written(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = home.parent / "orders.csv"
    code = cli.main(["export", "orders_by_day", "--param", "day=2024-01-05", "-o", str(target)])
    assert code == 0, capsys.readouterr().err
    ((_, owner, status, rows),) = jobs_in(home)
    assert (owner, status) == ("demo", "succeeded")
    assert target.read_text().startswith("order_id,ordered_at,customer,")
    assert rows == len(target.read_text().splitlines()) - 1 > 0


def test_a_bad_output_path_is_refused_before_a_job_is_made(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for target, why in (("missing/dir/x.csv", "does not exist"), (".", "is a directory")):
        code = cli.main(["export", "orders_by_day", "--param", "day=2024-01-05", "-o", target])
        assert code == 2
        assert why in capsys.readouterr().err
    assert jobs_in(home) == []


def test_an_owner_who_is_not_a_user_is_refused(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["export", "orders_by_day", "--param", "day=2024-01-05", "--owner", "ghost"])
    assert code == 2
    err = capsys.readouterr().err
    assert "no active user 'ghost'" in err
    assert "--owner" in err
    assert jobs_in(home) == []


def test_a_refused_parameter_is_one_line_and_exit_2(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["export", "orders_by_day", "--param", "day=2019-01-01"]) == 2
    assert capsys.readouterr().err.strip() == (
        "reportexport export: parameter 'day': must be at least 2024-01-01"
    )
    assert cli.main(["export", "no_such_query"]) == 2
    assert "see: reportexport queries list" in capsys.readouterr().err


def test_demo_with_another_database_creates_its_schema(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = home.parent / "other.db"
    assert cli.main(["demo", "--database", f"sqlite:///{other}"]) == 0
    assert "the job store is ready" in capsys.readouterr().out
    assert cli.main(["db", "check", "--database", f"sqlite:///{other}"]) == 0


def test_serve_refuses_a_missing_catalog_before_it_creates_anyone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "shared.db"
    monkeypatch.setenv("REPORTEXPORT_HOME", str(tmp_path / "var"))
    assert cli.main(["db", "upgrade", "--database", f"sqlite:///{database}"]) == 0
    code = cli.main(["serve", "--database", f"sqlite:///{database}",
                     "--catalog", str(tmp_path / "nope.toml")])  # fmt: skip
    assert code == 2
    assert "no catalog at" in capsys.readouterr().err
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT count(*) FROM users").fetchone() == (0,)


def test_jobs_download_writes_the_file_whole(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`jobs download` over the API (the app in process), to a file that appears only whole."""
    from reportexport import client as remote
    from reportexport.composition import load_settings, running

    assert cli.main(["export", "orders_by_day", "--param", "day=2024-01-06"]) == 0
    ((job_id, *_),) = jobs_in(home)
    with running(load_settings()) as runtime:
        app = runtime.app()
        bearer = {"Authorization": f"Bearer {TOKENS['demo']}"}
        monkeypatch.setattr(remote, "connect", lambda settings: TestClient(app, headers=bearer))
        monkeypatch.setenv("REPORTEXPORT_SERVER", "http://testserver")
        monkeypatch.setenv("REPORTEXPORT_TOKEN", TOKENS["demo"])
        target = home.parent / "again.csv"
        assert cli.main(["jobs", "download", str(job_id), "-o", str(target)]) == 0
        assert target.read_text().startswith("order_id,")
        assert not target.with_name("again.csv.download").exists()
        assert cli.main(["jobs", "download", "999", "-o", str(target)]) == 1
        assert "HTTP 404" in capsys.readouterr().err
