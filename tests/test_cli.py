"""The command line on this machine: demo, local exports and their owner, and its refusals."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport import cli
from tests.conftest import EXAMPLES

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


def test_hostile_arguments_to_every_local_command_are_one_line_never_a_traceback(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    hostile = st.one_of(
        st.text(max_size=30),
        st.sampled_from(["a\udcff", "\ud800", "x\x00y", "\u202eevil", "-", "--x", "", " "]),
    )
    commands = st.sampled_from([
        lambda t: ["webhooks", "add", "https://hooks.example.com/x", "--owner", t],
        lambda t: ["webhooks", "add", t, "--owner", "demo"],
        lambda t: ["webhooks", "list", "--owner", t],
        lambda t: ["effects", "redrive", "1", t],
        lambda t: ["users", "add", t],
        lambda t: ["users", "revoke", t],
        lambda t: ["users", "revoke-token", t],
        lambda t: ["audit", "--person", t],
        lambda t: ["audit", "--action", t],
        lambda t: ["export", "orders_by_day", f"--param=day={t}"],
        lambda t: ["export", t],
        lambda t: ["export", "orders_by_day", "--param=day=2024-01-05", "--owner", t],
        lambda t: ["db", "purge", "--before", "2020-01-01", "--person", t, "--yes"],
        lambda t: ["jobs", "list", "--server", t, "--token", "rxp_x"],
        lambda t: ["jobs", "list", "--server", "http://127.0.0.1:9", "--token", t],
    ])  # fmt: skip

    @settings(max_examples=EXAMPLES, deadline=None,
              database=None, suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(command=commands, text=hostile)
    def check(command: Any, text: str) -> None:
        try:
            code = cli.main(command(text))
        except SystemExit as exc:  # argparse refusing the shape of the arguments
            code = int(exc.code or 0)
        err = capsys.readouterr().err
        assert code in (0, 1, 2)
        if code == 1 or (code == 2 and not err.startswith("usage:")):
            assert len(err.strip().splitlines()) == 1, err
        err.encode("utf-8")

    check()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["webhooks", "rotate", "1", "--overlap-hours", "inf"], "0 to 720 hours"),
        (["webhooks", "rotate", "1", "--overlap-hours", "nan"], "0 to 720 hours"),
        (["webhooks", "rotate", "1", "--overlap-hours", "-5"], "0 to 720 hours"),
        (["effects", "redrive", "1", "emit_anything"], "not a side effect of the lifecycle"),
        (["serve", "--port", "99999"], "--port must be at most 65535"),
        (["worker", "--retention-days", "inf"], "must be a finite number"),
    ],
)
def test_impossible_values_are_refused_with_exit_2(
    home: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    assert cli.main(arguments) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_owner_is_refused_over_the_api_and_download_checks_its_path_first(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REPORTEXPORT_SERVER", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("REPORTEXPORT_TOKEN", "rxp_x")
    assert cli.main(["export", "orders_by_day", "--owner", "demo"]) == 2
    assert "--owner is for exports run here" in capsys.readouterr().err
    assert cli.main(["jobs", "download", "1", "-o", "/no/such/folder/x.csv"]) == 2
    assert "does not exist" in capsys.readouterr().err  # no connection was tried


def test_another_sqlite_store_gets_its_own_objects_and_never_sweeps_ours(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["export", "orders_by_day", "--param", "day=2024-01-05"]) == 0
    ours = sorted((home / "objects" / "exports").rglob("*.csv"))
    assert ours
    other = home.parent / "other.db"
    assert cli.main(["demo", "--database", f"sqlite:///{other}"]) == 0
    assert cli.main(["export", "orders_by_day", "--param", "day=2024-01-06",
                     "--database", f"sqlite:///{other}"]) == 0  # fmt: skip
    assert sorted((home.parent / "other-objects" / "exports").rglob("*.csv"))
    assert cli.main(["sweep", "--database", f"sqlite:///{other}"]) == 0
    assert sorted((home / "objects" / "exports").rglob("*.csv")) == ours
    capsys.readouterr()
    # Pointed at our folder on purpose, another job store is refused before it writes.
    ours_url = f"file://{home / 'objects'}"
    code = cli.main(["export", "orders_by_day", "--param", "day=2024-01-07",
                     "--database", f"sqlite:///{other}", "--objects", ours_url])  # fmt: skip
    assert code == 2
    assert "belongs to another job store" in capsys.readouterr().err


def test_serve_with_a_missing_catalog_writes_nothing_there(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = home.parent / "typo" / "catalog.toml"
    assert cli.main(["serve", "--catalog", str(missing)]) == 2
    assert "no catalog at" in capsys.readouterr().err
    assert not missing.parent.exists()


def test_users_token_gives_a_lost_token_back_and_the_old_one_stops(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from reportexport.composition import load_settings, running

    assert cli.main(["users", "token", "demo"]) == 0
    printed = capsys.readouterr().out
    found = re.search(r"new token \(shown once, stored hashed\): (\S+)", printed)
    assert found is not None
    with running(load_settings()) as runtime:
        assert runtime.people.authenticate(TOKENS["demo"]) is None
        person = runtime.people.authenticate(found.group(1))
        assert person is not None
        assert person.name == "demo"
    assert cli.main(["users", "revoke", "demo"]) == 0
    assert cli.main(["users", "token", "demo"]) == 1  # a revoked person gets no new token
    assert "no active user 'demo'" in capsys.readouterr().err


def test_what_the_command_line_does_to_people_is_in_the_audit(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["audit"]) == 0
    assert "no operator action is recorded yet" in capsys.readouterr().out
    assert cli.main(["users", "add", "carol"]) == 0
    assert cli.main(["users", "revoke-token", "carol"]) == 0
    out = capsys.readouterr().out
    assert "carol: token revoked; their dashboard sessions ended" in out
    assert cli.main(["users", "revoke-token", "carol"]) == 1  # no working token left
    assert "no active user 'carol' with a token" in capsys.readouterr().err
    assert cli.main(["users", "list"]) == 0
    assert re.search(r"carol\s+user\s+token revoked", capsys.readouterr().out)
    assert cli.main(["users", "token", "carol"]) == 0  # a new token lets them in again
    capsys.readouterr()
    assert cli.main(["audit"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [[w.rstrip(":") for w in line.split()[4:7]] for line in lines] == [
        ["new_token", "person", "carol"],
        ["revoke_token", "person", "carol"],
        ["add_person", "person", "carol"],
    ]
    assert all(line.split()[2] == "command" for line in lines)  # "command line" acted
    assert cli.main(["audit", "--action", "add_person", "--limit", "1"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    assert cli.main(["audit", "--action", "delete_everything"]) == 2
    assert "is not one of" in capsys.readouterr().err
