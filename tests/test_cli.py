"""The command line on this machine: demo, local exports and their owner, and its refusals."""

from __future__ import annotations

import argparse
import csv
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport.entrypoints import cli
from tests.helpers import EXAMPLES

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
    with sqlite3.connect(home / "reportexport.db") as conn:  # a short-lived worker: no heartbeat
        assert conn.execute("SELECT count(*) FROM heartbeats").fetchone() == (0,)
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
    from reportexport.composition import load_settings, running
    from reportexport.entrypoints import client as remote

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
        lambda t: ["users", "email", "demo", t],
        lambda t: ["users", "email", t, "demo@example.com"],
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


def test_export_notify_mails_the_owner_once_an_operator_gave_them_an_address(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--notify` is refused while the owner has no address; with one, the address is a
    recipient of the export's announcement, fixed when it ended."""
    day = ["export", "orders_by_day", "--param", "day=2024-01-05", "--notify"]
    assert cli.main(day) == 2  # refused at creation, as a wrong argument
    err = capsys.readouterr().err
    assert "you have no e-mail address here" in err
    assert len(err.strip().splitlines()) == 1
    assert cli.main(["users", "email", "demo", "demo@example.com\nBcc: eve@example.com"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert cli.main(["users", "email", "demo", "demo@example.com"]) == 0
    assert "demo: e-mail goes to demo@example.com" in capsys.readouterr().out
    assert cli.main(day) == 0, capsys.readouterr().err
    with sqlite3.connect(home / "reportexport.db") as conn:
        rows = conn.execute("SELECT effect, address, endpoint_id FROM deliveries").fetchall()
    assert rows == [("emit_done_webhook", "demo@example.com", None)]
    assert cli.main(["users", "email", "demo", "--remove"]) == 0
    assert cli.main(["users", "email", "nobody", "x@example.com"]) == 1


def test_users_notify_always_mails_every_export_of_the_person(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An operator turns a person's preference on (refused while they have no address): their
    exports are announced by e-mail without `--notify`; off, they are not."""
    assert cli.main(["users", "notify-always", "demo", "on"]) == 2
    assert "demo has no e-mail address here" in capsys.readouterr().err
    assert cli.main(["users", "email", "demo", "demo@example.com"]) == 0
    assert cli.main(["users", "notify-always", "demo", "on"]) == 0
    out = capsys.readouterr().out
    assert "demo: an e-mail to demo@example.com when any of their exports ends" in out
    day = ["export", "orders_by_day", "--param", "day=2024-01-05"]
    assert cli.main(day) == 0, capsys.readouterr().err
    assert cli.main(["users", "notify-always", "demo", "off"]) == 0
    assert "demo: an e-mail only when they ask for one" in capsys.readouterr().out
    assert cli.main([*day[:-1], "day=2024-01-06"]) == 0, capsys.readouterr().err
    with sqlite3.connect(home / "reportexport.db") as conn:
        rows = conn.execute("SELECT job_id, address FROM deliveries").fetchall()
        first = conn.execute("SELECT min(id) FROM jobs").fetchone()[0]
    assert rows == [(first, "demo@example.com")]
    assert cli.main(["users", "notify-always", "nobody", "on"]) == 1


def test_a_given_up_destination_is_listed_and_redriven_alone_at_the_command_line(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import UTC, datetime

    from reportexport.composition import load_settings, running
    from reportexport.services.exports import Acting
    from reportexport.store import Outcome

    assert cli.main(["webhooks", "add", "https://hooks.example.com/x", "--owner", "demo"]) == 0
    with running(load_settings()) as runtime:
        db = runtime.database
        made = runtime.exports.create(
            Acting(name="demo"), "orders_by_day", {"day": "2024-01-05"}, from_text=True
        )
        job = made.job
        (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
        db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="failed")])
        now = datetime.now(UTC)
        (claimed,) = db.effects.claim_side_effects("r", limit=5, now=now, claim_until=now)
        (delivery,) = db.deliveries.job_deliveries(job.id)
        db.deliveries.record_delivery_attempt(
            claimed.token, delivery.id, now=now, status=403, problem="HTTP 403",
            delivered=False, next_attempt_at=now, give_up=True,
        )  # fmt: skip
        db.effects.retry_side_effect(claimed, now=now, error="x", next_attempt_at=now, give_up=True)
    capsys.readouterr()
    assert cli.main(["effects", "given-up"]) == 0
    listed = capsys.readouterr().out
    assert f"delivery {delivery.id} of job {job.id} emit_failed_webhook to endpoint 1: " in listed
    assert "last problem: HTTP 403" in listed
    assert cli.main(["effects", "redrive-delivery", str(delivery.id)]) == 0
    assert "due again" in capsys.readouterr().out
    assert cli.main(["effects", "redrive-delivery", str(delivery.id)]) != 0  # not given up now
    assert cli.main(["audit", "--action", "redrive_delivery"]) == 0
    assert f"redrive_delivery delivery {delivery.id}" in capsys.readouterr().out


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


def _leaf_commands(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command the parser runs, as the words that name it and the parser that reads it
    (a command whose actions are optional, `effects`, is one itself)."""
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if sub is None or not sub.required:
        yield words, parser
    if sub is not None:
        for name, child in sub.choices.items():
            yield from _leaf_commands(child, (*words, name))


def _value_for(action: argparse.Action) -> str:
    if action.choices:
        return str(next(iter(action.choices)))
    return "1" if action.type in (int, float) else "x"


def _arguments(
    parser: argparse.ArgumentParser, words: tuple[str, ...], odd: argparse.Action
) -> list[str]:
    """The command with what it requires, and `odd` given the undecodable byte 0xff."""
    given: list[str] = list(words)
    positionals: list[str] = []
    grouped = {a for g in parser._mutually_exclusive_groups if g.required for a in g._group_actions}
    chosen = [g._group_actions[0] for g in parser._mutually_exclusive_groups if g.required]
    for action in parser._actions:
        wanted = action is odd or action.required or (action in chosen and odd not in grouped)
        if not wanted or isinstance(action, argparse._HelpAction):
            continue
        value = "x\udcff" if action is odd else _value_for(action)
        if not action.option_strings:
            positionals.append(value)
        elif action.nargs == 0:
            given.append(action.option_strings[-1])
        else:
            given += [action.option_strings[-1], value]
    return given + positionals


def _takes_text(action: argparse.Action) -> bool:
    return (
        action.nargs != 0
        and not action.choices
        and action.type not in (int, float)
        and not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
    )


def test_every_command_refuses_an_undecodable_argument_by_name_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each argument of each command that takes text, given a byte that is not UTF-8 (as
    Python's argv carries it), is refused by name with exit 2 before anything runs."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPORTEXPORT_HOME", str(tmp_path / "var"))
    tried = 0
    for words, parser in _leaf_commands(cli.build_parser()):
        for action in filter(_takes_text, parser._actions):
            argv = _arguments(parser, words, action)
            code = cli.main(argv)
            err = capsys.readouterr().err
            name = action.option_strings[-1] if action.option_strings else action.dest
            assert code == 2, (argv, err)
            assert err.strip().splitlines() == [
                f"reportexport {' '.join(words[:2])}: {name} 'x\\udcff' is not valid UTF-8 "
                "(byte 0xff at position 1): give it as UTF-8 text"
            ], argv
            tried += 1
    assert tried > 60  # the parser's commands were found, not a handful
    assert not (tmp_path / "var").exists()  # refused before anything was made


def test_an_undecodable_byte_from_the_shell_is_named_not_a_traceback(tmp_path: Path) -> None:
    """The same through a real argv: bytes that are not UTF-8 (as a shell passes them)."""
    env = {**os.environ, "REPORTEXPORT_HOME": str(tmp_path / "var")}
    for argv in (
        [b"export", b"orders_\xff", b"--server", b"http://127.0.0.1:9", b"--token", b"rxp_x"],
        [b"schedules", b"create", b"orders", b"--cron", b"0 8 * * \xff", b"--time-zone", b"UTC"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "reportexport", *argv],
            capture_output=True, cwd=tmp_path, env=env, timeout=120,
        )  # fmt: skip
        err = done.stderr.decode("utf-8")
        assert done.returncode == 2, err
        assert "Traceback" not in err
        assert "is not valid UTF-8 (byte 0xff" in err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--param", "day=2024-01-05", "--relative", "day=yesterday"],
         "parameter 'day' is given by both --param and --relative; give it once, with "
         "one of them"),
        (["--relative", "day=yesterday", "--relative", "day=today"],
         "--relative 'day' is given more than once; give it once"),
        (["--relative", "day"], "--relative takes NAME=WORD (day=yesterday), not 'day'"),
    ],
)  # fmt: skip
def test_a_parameter_given_twice_to_schedules_create_is_refused_by_name(
    capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    """Nothing is dropped silently: which value was meant cannot be known (no server is asked)."""
    create = ["schedules", "create", "orders_by_day", "--cron", "0 8 * * *", "--time-zone", "UTC"]
    remote = ["--server", "http://127.0.0.1:9", "--token", "rxp_x"]
    assert cli.main([*create, *arguments, *remote]) == 2
    assert capsys.readouterr().err.strip() == f"reportexport schedules create: {message}"


def test_schedules_without_a_server_say_how_to_start_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("REPORTEXPORT_SERVER", raising=False)
    monkeypatch.setenv("REPORTEXPORT_TOKEN", "rxp_x")
    assert cli.main(["schedules", "list", "--server", "http://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert "no server answers at http://127.0.0.1:9" in err
    assert "./scripts/run" in err
    monkeypatch.delenv("REPORTEXPORT_TOKEN")
    assert cli.main(["schedules", "list"]) == 2
    assert "`reportexport users token NAME` makes a new one" in capsys.readouterr().err


@pytest.fixture
def served(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The demo's API in this process, which the command line reaches as demo's server."""
    from reportexport.composition import load_settings, running
    from reportexport.entrypoints import client as remote

    with running(load_settings()) as runtime:
        app = runtime.app()
        bearer = {"Authorization": f"Bearer {TOKENS['demo']}"}
        monkeypatch.setattr(remote, "connect", lambda settings: TestClient(app, headers=bearer))
        monkeypatch.setenv("REPORTEXPORT_SERVER", "http://testserver")
        monkeypatch.setenv("REPORTEXPORT_TOKEN", TOKENS["demo"])
        yield runtime


def test_schedules_create_takes_ends_at_as_rfc_3339(
    served: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    create = ["schedules", "create", "orders_by_day", "--cron", "0 8 * * *",
              "--time-zone", "Europe/Paris", "--relative", "day=yesterday"]  # fmt: skip
    assert cli.main([*create, "--ends-at", "2099-01-31T18:00:00+01:00"]) == 0, capsys.readouterr()
    assert "schedule 1 orders_by_day (demo)" in capsys.readouterr().out
    assert cli.main([*create, "--ends-at", "2099-01-31"]) == 2
    assert "ends_at: '2099-01-31' is not a timestamp (RFC 3339)" in capsys.readouterr().err


def test_schedules_recipients_adds_removes_and_lists(
    served: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    create = ["schedules", "create", "orders_by_day", "--cron", "0 8 * * *",
              "--time-zone", "UTC", "--relative", "day=yesterday"]  # fmt: skip
    assert cli.main(create) == 0, capsys.readouterr()
    assert cli.main(["schedules", "recipients", "1", "--add", "operator"]) == 2
    assert "HTTP 422 No e-mail address: operator has no e-mail address" in capsys.readouterr().err
    assert cli.main(["users", "email", "operator", "operator@example.com"]) == 0
    capsys.readouterr()
    assert cli.main(["schedules", "recipients", "1", "--add", "operator"]) == 0
    out = capsys.readouterr().out
    assert "schedule 1: operator added" in out
    assert "operator  added by demo at" in out
    assert cli.main(["schedules", "recipients", "1", "--add", "operator"]) == 0
    assert "schedule 1: operator a recipient already" in capsys.readouterr().out
    assert cli.main(["schedules", "recipients", "1", "--remove", "operator"]) == 0
    out = capsys.readouterr().out
    assert "schedule 1: operator removed" in out
    assert "schedule 1: no recipients besides its owner" in out


def test_schedules_channels_adds_removes_and_lists_a_channel_for_schedules_only(
    served: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPORTEXPORT_CHAT_HOSTS", "hooks.slack.com")
    url = "https://hooks.slack.com/services/T0/B0/secret-part"
    add = ["chat", "add", url, "--name", "#sales", "--owner", "demo", "--schedules-only"]
    assert cli.main(add) == 0, capsys.readouterr()
    assert capsys.readouterr().out == (
        "chat channel 1 (#sales) on hooks.slack.com for the schedules of demo it is added to\n"
    )
    assert cli.main(["chat", "list"]) == 0
    assert "'#sales' (schedules only)" in capsys.readouterr().out
    create = ["schedules", "create", "orders_by_day", "--cron", "0 8 * * *",
              "--time-zone", "UTC", "--relative", "day=yesterday"]  # fmt: skip
    assert cli.main(create) == 0, capsys.readouterr()
    capsys.readouterr()
    assert cli.main(["schedules", "channels", "1", "--add", "1"]) == 0
    out = capsys.readouterr().out
    assert "schedule 1: chat channel 1 added" in out
    assert "1 #sales on hooks.slack.com  added by demo at" in out
    assert "secret-part" not in out
    assert cli.main(["schedules", "channels", "1", "--add", "1"]) == 0
    assert "schedule 1: chat channel 1 one of its channels already" in capsys.readouterr().out
    assert cli.main(["schedules", "channels", "1", "--add", "7"]) == 1
    assert "HTTP 404 Not found: no chat channel 7" in capsys.readouterr().err
    assert cli.main(["schedules", "channels", "1", "--remove", "1"]) == 0
    out = capsys.readouterr().out
    assert "schedule 1: chat channel 1 removed" in out
    assert "schedule 1: no chat channels besides its owner's and the global ones" in out


def test_schedules_addresses_adds_sets_removes_and_lists(
    served: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportexport.entrypoints import client as remote

    create = ["schedules", "create", "orders_by_day", "--cron", "0 8 * * *",
              "--time-zone", "UTC", "--relative", "day=yesterday"]  # fmt: skip
    assert cli.main(create) == 0, capsys.readouterr()
    assert cli.main(["schedules", "addresses", "1", "--add", "partner@example.org"]) == 1
    assert "HTTP 403 Forbidden: only operators add outside addresses" in capsys.readouterr().err
    _, token = served.database.users.add_user("olga", "operator")
    app = served.app()
    bearer = {"Authorization": f"Bearer {token}"}
    monkeypatch.setattr(remote, "connect", lambda settings: TestClient(app, headers=bearer))
    assert cli.main(["schedules", "addresses", "1", "--add", "Partner@Example.org"]) == 0
    out = capsys.readouterr().out
    assert "schedule 1: partner@example.org added" in out
    assert "  partner@example.org  a download link; added by olga at" in out
    again = ["schedules", "addresses", "1", "--add", "partner@example.org",
             "--attach-max-bytes", "2000000", "--gzip"]  # fmt: skip
    assert cli.main(again) == 0
    out = capsys.readouterr().out
    assert "partner@example.org one of its addresses already, set again" in out
    assert "the file attached up to 2,000,000 bytes after gzip" in out
    gzip_alone = ["schedules", "addresses", "1", "--add", "p@example.org", "--gzip"]
    assert cli.main(gzip_alone) == 2
    assert "--gzip compresses what is attached: give --attach-max-bytes too" in (
        capsys.readouterr().err
    )
    assert cli.main(["schedules", "addresses", "1", "--attach-max-bytes", "9"]) == 2
    assert "give --add" in capsys.readouterr().err
    assert cli.main(["schedules", "addresses", "1", "--add", "a b@example.org"]) == 2
    assert "HTTP 422 Invalid request: path.address: " in capsys.readouterr().err
    assert cli.main(["schedules", "addresses", "1", "--remove", "PARTNER@example.org"]) == 0
    out = capsys.readouterr().out
    assert "schedule 1: partner@example.org removed" in out
    assert "schedule 1: no outside addresses" in out


@pytest.mark.parametrize(
    "arguments",
    [
        ["users", "list"],
        ["users", "add", "alice"],
        ["export", "orders_by_day", "--param", "day=2024-01-05"],
        ["queries", "list"],
        ["workers"],
        ["sweep", "--dry-run"],
        ["db", "check"],
        ["db", "purges"],
    ],
)
def test_outside_a_home_a_command_says_there_is_none_and_makes_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
) -> None:
    for name in ("HOME", "DATABASE_URL", "CATALOG", "OBJECTS_URL", "SERVER", "CONFIG"):
        monkeypatch.delenv(f"REPORTEXPORT_{name}", raising=False)
    monkeypatch.chdir(tmp_path)
    assert cli.main(arguments) == 2
    err = capsys.readouterr().err
    grouped = arguments[0] in ("users", "queries", "db")
    command = " ".join(arguments[:2]) if grouped else arguments[0]
    assert err.strip().splitlines() == [
        f"reportexport {command}: "
        "no reportexport home here: var has no job store (var/reportexport.db) and no catalog "
        "(var/catalog.toml). Make one with `reportexport demo` (or `./scripts/run`), or point at "
        "yours with $REPORTEXPORT_HOME (or --database and --catalog)"
    ]
    assert list(tmp_path.iterdir()) == []


def test_a_named_sqlite_store_that_does_not_exist_is_not_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPORTEXPORT_HOME", str(tmp_path / "var"))
    url = f"sqlite:///{tmp_path / 'typo.db'}"
    assert cli.main(["users", "list", "--database", url]) == 1
    assert f"no job store at {tmp_path / 'typo.db'}: make it with `reportexport db upgrade " \
        f"--database {url}`" in capsys.readouterr().err  # fmt: skip
    assert list(tmp_path.iterdir()) == []
    assert cli.main(["db", "upgrade", "--database", url]) == 0  # which makes it
    assert cli.main(["users", "list", "--database", url]) == 0


def test_schedules_preview_says_how_close_the_firings_come(
    served: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    preview = ["schedules", "preview", "--time-zone", "Europe/Paris", "--cron"]
    assert cli.main([*preview, "30 1,2 * * *"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "At 01:30 and 02:30 every day (Europe/Paris). Firings at least 30 minutes apart; the "
        "shortest gap "
        "allowed is 1 minute."
    )
    assert len(re.findall(r"^  next: ", out, re.MULTILINE)) == 5
    assert cli.main([*preview, "*/10 * * * * *"]) == 2
    assert "fires 10 seconds after its firing of" in capsys.readouterr().err


def _schedules_in(home: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(home / "reportexport.db") as conn:
        return conn.execute("SELECT cron, pause_reason FROM schedules ORDER BY id").fetchall()


@pytest.mark.parametrize("how", [["db", "upgrade"], ["users", "list"]])
def test_an_upgrade_pauses_the_schedules_that_fire_too_often_with_the_reason(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    how: list[str],
) -> None:
    """`db upgrade`, and the embedded store's own upgrade at any command's start."""
    from reportexport.composition import load_settings, running

    with running(load_settings({"min_schedule_period_seconds": 1})) as runtime:
        person = runtime.people.get("demo")
        assert person is not None
        for cron in ("*/5 * * * * *", "0 8 * * *"):
            runtime.schedules.create(person, "orders_by_day", {"day": {"relative": "yesterday"}},
                                     cron=cron, time_zone="UTC")  # fmt: skip
    assert [reason for _, reason in _schedules_in(home)] == [None, None]
    assert cli.main(how) == 0
    why = ("'*/5 * * * * *' fires 5 seconds after its firing of {day} 00:00:00 (UTC): the shortest "
           "gap allowed between two firings is 1 minute; delete this schedule and make one that "
           "fires less often")  # fmt: skip
    ((first, reason), (second, untouched)) = _schedules_in(home)
    assert (first, second, untouched) == ("*/5 * * * * *", "0 8 * * *", None)
    assert re.fullmatch(why.format(day=r"\d{4}-\d{2}-\d{2}").replace("(", r"\(").replace(")", r"\)")
                        .replace("*", r"\*"), reason)  # fmt: skip
    if how[0] == "db":
        assert f"schedule 1 (demo) paused: {reason}" in capsys.readouterr().out


def test_groups_and_attributes_at_the_command_line_decide_what_the_demo_user_runs(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo: `demo` may not run the finance query until an operator adds them to
    `finance`; "Customers of my country" takes their `country` (FR) from their record."""
    target = home.parent / "revenue.csv"
    assert cli.main(["export", "revenue_by_month", "-o", str(target)]) == 2
    assert "no saved query 'revenue_by_month'" in capsys.readouterr().err
    assert cli.main(["groups", "add", "finance", "demo"]) == 0
    assert cli.main(["export", "revenue_by_month", "-o", str(target)]) == 0
    assert target.read_text().startswith("month,orders,revenue")
    assert cli.main(["groups", "remove", "finance", "demo"]) == 0
    assert "demo left finance" in capsys.readouterr().out

    mine = home.parent / "mine.csv"
    assert cli.main(["export", "my_country_customers", "--param", "country=DE"]) == 2
    assert "is bound to your attribute country" in capsys.readouterr().err
    assert cli.main(["export", "my_country_customers", "-o", str(mine)]) == 0
    rows = list(csv.DictReader(mine.read_text().splitlines()))
    assert rows
    assert {row["country"] for row in rows} == {"FR"}
    assert cli.main(["users", "set", "demo", "country", "DE"]) == 0
    assert cli.main(["users", "access", "demo"]) == 0
    assert "country = DE (operator)" in capsys.readouterr().out
    assert cli.main(["audit", "--limit", "5"]) == 0
    said = capsys.readouterr().out
    assert "set_attribute person demo: country = DE" in said
    assert "remove_member group finance: removed demo" in said


def test_suspending_at_the_command_line_stops_the_token_until_resumed(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["users", "add", "robot", "--service"]) == 0
    assert "service account (user) robot" in capsys.readouterr().out
    assert cli.main(["users", "suspend", "demo", "--reason", "on leave"]) == 0
    said = capsys.readouterr().out
    assert "demo: suspended" in said
    assert cli.main(["users", "list"]) == 0
    listed = capsys.readouterr().out
    assert re.search(r"demo\s+user\s+suspended \d{4}-\d\d-\d\d by command line", listed)
    assert re.search(r"robot\s+user \(service\)\s+active", listed)
    assert cli.main(["users", "suspend", "demo"]) == 1
    assert "no active, unsuspended person 'demo'" in capsys.readouterr().err
    assert cli.main(["users", "resume", "demo"]) == 0
    assert "demo: resumed" in capsys.readouterr().out


def test_queries_check_names_an_access_rule_that_cannot_work(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A query for a group the job store does not have fails the check, with its place in the
    catalog; once the group exists, the check passes."""
    assert cli.main(["queries", "check"]) == 0
    capsys.readouterr()
    catalog = home / "catalog.toml"
    catalog.write_text(
        catalog.read_text()
        + '\n[queries.sales_orders]\ntitle = "Orders for sales"\nsource = "demo"\n'
        + 'sql = "SELECT * FROM orders"\naccess = ["sales"]\n'
    )
    assert cli.main(["queries", "check"]) == 1
    said = capsys.readouterr().err
    assert (
        "sales_orders: queries.sales_orders.access: there is no group sales in the job store"
    ) in said
    assert cli.main(["groups", "create", "sales"]) == 0
    assert cli.main(["queries", "check"]) == 0


def test_chat_channels_are_added_listed_and_removed_at_the_command_line(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "https://hooks.slack.com/services/T0/B0/secret-part"
    assert cli.main(["chat", "add", url, "--name", "#exports", "--global"]) == 2
    assert "the setting chat_hosts is empty" in capsys.readouterr().err
    monkeypatch.setenv("REPORTEXPORT_CHAT_HOSTS", "hooks.slack.com")
    assert cli.main(["chat", "add", url, "--name", "#exports", "--global"]) == 0
    assert "chat channel 1 (#exports) on hooks.slack.com for everyone" in capsys.readouterr().out
    assert cli.main(["chat", "add", url, "--name", "@demo", "--owner", "demo"]) == 0
    other = "https://chat.example.org/hooks/x"
    assert cli.main(["chat", "add", other, "--name", "#x", "--global"]) == 2
    err = capsys.readouterr().err
    assert "chat.example.org is not a chat host allowed here (chat_hosts: hooks.slack.com)" in err
    assert cli.main(["chat", "remove", "1"]) == 0
    assert cli.main(["chat", "remove", "1"]) == 1
    capsys.readouterr()
    assert cli.main(["chat", "list"]) == 0
    out = capsys.readouterr().out
    assert re.search(
        r"1 \(global\)\s+removed \S+ \(removed by command line\) hooks\.slack\.com", out
    )
    assert re.search(r"2 demo\s+enabled\s+hooks\.slack\.com '@demo'", out)
    assert "secret-part" not in out
    assert cli.main(["audit", "--action", "add_chat_channel"]) == 0
    assert "add_chat_channel chat_channel 2" in capsys.readouterr().out
