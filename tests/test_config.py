"""The optional configuration file sets defaults; mistakes stop the command with a clear message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reportexport.config import ConfigError, apply_config_file, positive_int


def test_the_file_sets_defaults_and_the_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "reportexport.toml"
    config.write_text(
        'public_url = "https://exports.example.com"\nmax_active_exports = 3\n'
        'webhooks_allow_private = true\ndatabase_url = "sqlite:///x.db"\n'
    )
    for variable in ("REPORTEXPORT_PUBLIC_URL", "REPORTEXPORT_MAX_ACTIVE_EXPORTS",
                     "REPORTEXPORT_WEBHOOKS_ALLOW_PRIVATE"):  # fmt: skip
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("REPORTEXPORT_DATABASE_URL", "sqlite:///from-env.db")
    apply_config_file(config)
    assert os.environ["REPORTEXPORT_PUBLIC_URL"] == "https://exports.example.com"
    assert positive_int("REPORTEXPORT_MAX_ACTIVE_EXPORTS", 10) == 3
    assert os.environ["REPORTEXPORT_WEBHOOKS_ALLOW_PRIVATE"] == "1"
    assert os.environ["REPORTEXPORT_DATABASE_URL"] == "sqlite:///from-env.db"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("colour = 1\n", "unknown key 'colour'"),
        ('max_active_exports = "ten"\n', "max_active_exports must be a int"),
        ("max_active_exports = 0\n", "must be at least 1"),
        ("public_url = [\n", "bad.toml: "),
    ],
)
def test_mistakes_are_named(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=message):
        apply_config_file(config)


def test_a_bad_setting_stops_the_command_with_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("colour = 1\n")
    done = subprocess.run(
        [sys.executable, "-m", "reportexport", "graph"],
        env={**os.environ, "REPORTEXPORT_CONFIG": str(config)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "configuration:" in done.stderr
    assert "unknown key 'colour'" in done.stderr


def test_an_environment_number_that_is_not_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPORTEXPORT_MAX_ACTIVE_EXPORTS", "lots")
    with pytest.raises(ConfigError, match="must be a whole number"):
        positive_int("REPORTEXPORT_MAX_ACTIVE_EXPORTS", 10)
