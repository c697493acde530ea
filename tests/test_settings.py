"""Settings: the command line over the environment over the file over the defaults, built once."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reportexport.core.settings import FIELDS, Settings, SettingsError
from tests.helpers import REPO_ROOT


def test_each_layer_wins_over_the_next(tmp_path: Path) -> None:
    config = tmp_path / "reportexport.toml"
    config.write_text(
        'public_url = "https://exports.example.com"\nmax_active_exports = 3\n'
        'webhooks_allow_private = true\ndatabase_url = "sqlite:///file.db"\nport = 9000\n'
    )
    environ = {"REPORTEXPORT_CONFIG": str(config), "REPORTEXPORT_DATABASE_URL": "sqlite:///env.db",
               "REPORTEXPORT_PORT": "9100"}  # fmt: skip
    settings = Settings.load(command_line={"port": 9200}, environ=environ)
    assert settings.public_url == "https://exports.example.com"  # the file
    assert settings.max_active_exports == 3
    assert settings.webhooks_allow_private is True
    assert settings.database_url == "sqlite:///env.db"  # the environment over the file
    assert settings.port == 9200  # the command line over both
    assert settings.max_exports_per_minute == FIELDS["max_exports_per_minute"].default


def test_paths_under_home_follow_it(tmp_path: Path) -> None:
    settings = Settings.load(environ={"REPORTEXPORT_HOME": str(tmp_path)})
    assert settings.database_url == f"sqlite:///{tmp_path / 'reportexport.db'}"
    assert settings.catalog == tmp_path / "catalog.toml"
    assert settings.objects_url == f"file://{(tmp_path / 'objects').resolve()}"
    assert settings.uses_embedded_database
    elsewhere = Settings.load(command_line={"database_url": "postgresql://db/x"}, environ={})
    assert not elsewhere.uses_embedded_database


def test_settings_are_frozen() -> None:
    settings = Settings.load(environ={})
    with pytest.raises(AttributeError):
        settings.port = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("colour = 1\n", "colour: unknown setting"),
        ('max_active_exports = "ten"\n', "max_active_exports must be a whole number"),
        ("max_active_exports = 0\n", "must be at least 1"),
        ("max_active_exports = 1.5\n", "must be a whole number"),
        ("webhooks_allow_private = 2\n", "must be true or false"),
        ("public_url = [\n", "bad.toml: "),
    ],
)
def test_file_mistakes_are_named(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    with pytest.raises(SettingsError, match=message):
        Settings.load(config_file=config, environ={})


def test_an_environment_value_that_is_not_one_is_refused_naming_the_variable() -> None:
    with pytest.raises(SettingsError, match=r"\$REPORTEXPORT_MAX_ACTIVE_EXPORTS must be a whole"):
        Settings.load(environ={"REPORTEXPORT_MAX_ACTIVE_EXPORTS": "lots"})


def test_a_bad_setting_stops_a_command_with_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("colour = 1\n")
    done = subprocess.run(
        [sys.executable, "-m", "reportexport", "queries", "list"],
        env={**os.environ, "REPORTEXPORT_CONFIG": str(config)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "configuration:" in done.stderr
    assert "colour: unknown setting" in done.stderr


def test_nothing_writes_the_environment() -> None:
    """Settings are read once into a frozen object; no module sets os.environ."""
    offenders = []
    for path in sorted((REPO_ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            target = None
            if isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                target = next((t for t in targets if isinstance(t, ast.Subscript)), None)
                target = target.value if target is not None else None
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("setdefault", "update", "pop", "__setitem__")
            ):
                target = node.func.value
            if target is not None and ast.unparse(target) == "os.environ":
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert offenders == []


def test_email_domains_and_chat_hosts_are_lists_of_names() -> None:
    settings = Settings.load(
        command_line={
            "email_domains": " Corp.Example, example.org.,",
            "chat_hosts": "hooks.slack.com",
        },
        environ={},
    )
    assert settings.email_domain_list == ("corp.example", "example.org")
    assert settings.chat_host_list == ("hooks.slack.com",)
    assert (Settings().email_domain_list, Settings().chat_host_list) == ((), ())
    with pytest.raises(SettingsError, match="email_domains: 'a b' is not a host name"):
        Settings.load(command_line={"email_domains": "example.com, a b"}, environ={})
    with pytest.raises(SettingsError, match="chat_hosts: 'https://x' is not a host name"):
        Settings.load(environ={"REPORTEXPORT_CHAT_HOSTS": "https://x"})


def test_the_parts_take_their_defaults_from_the_settings() -> None:
    """Each default lives once, on the settings: a part built without a value uses it."""
    import inspect

    from reportexport.runners.effects.backoff import RetryPolicy
    from reportexport.runners.effects.runner import RunnerSettings
    from reportexport.runners.worker import WorkerSettings
    from reportexport.services.exports import ExportService, Fairness
    from reportexport.services.schedules import ScheduleLimits
    from reportexport.store import open_database

    defaults = Settings()
    assert (Fairness().max_active, Fairness().max_per_window) == (
        defaults.max_active_exports,
        defaults.max_exports_per_minute,
    )
    assert ScheduleLimits().max_per_person == defaults.max_schedules
    assert RetryPolicy().max_attempts == defaults.effects_max_attempts
    worker = WorkerSettings()
    assert (
        worker.concurrency, worker.lease_seconds, worker.retention_seconds, worker.failure_limit
    ) == (
        defaults.concurrency, defaults.lease_seconds, defaults.retention_seconds,
        defaults.pause_after_failures,
    )  # fmt: skip
    runner = RunnerSettings()
    assert (runner.batch, runner.claim_seconds, runner.policy.max_attempts) == (
        defaults.effects_batch, defaults.effects_claim_seconds, defaults.effects_max_attempts
    )  # fmt: skip
    link = inspect.signature(ExportService).parameters["link_seconds"].default
    assert link == defaults.link_seconds
    store = inspect.signature(open_database).parameters
    assert (
        store["lock_timeout_seconds"].default,
        store["statement_timeout_seconds"].default,
        store["pool_size"].default,
    ) == (
        defaults.db_lock_timeout_seconds,
        defaults.db_statement_timeout_seconds,
        defaults.db_pool_size,
    )
