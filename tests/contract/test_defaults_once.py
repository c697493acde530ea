"""Defaults are declared once, in `Settings`: no function, class or dataclass elsewhere in the
program gives a default to a value a setting owns.

A parameter or field named like a setting (or ending in a setting's unit-free name, such as
`lock_timeout` for `db_lock_timeout_seconds`) that carries its own default would silently differ
from the setting the day one of them changes; the composition root passes the setting's value.
Under another name, a default equal to a setting's (a number, or a `timedelta` of it in the
setting's unit) is one too when the two names share a word (`failures_per_minute = 10` and
`sign_in_failures_per_minute`): a coincidence of values alone (an HTTP status 200) is not.
"""

from __future__ import annotations

import ast
from dataclasses import MISSING, fields
from datetime import timedelta
from pathlib import Path

from reportexport.core.settings import Settings

SOURCE = Path(__file__).resolve().parents[2] / "src" / "reportexport"

# A setting's value under the names the code gives it, where they differ from the setting's.
ALIASES = {
    "db_lock_timeout_seconds": ("lock_timeout", "lock_timeout_seconds", "busy_timeout"),
    "db_statement_timeout_seconds": ("statement_timeout", "statement_timeout_seconds"),
    "link_seconds": ("link_lifetime", "link_ttl", "expires_in", "link_expires_seconds"),
    "lease_seconds": ("lease", "lease_duration"),
    "grace_seconds": ("grace",),
    "db_pool_size": ("pool_size",),
    "effects_max_attempts": ("max_attempts",),
    "effects_claim_seconds": ("claim_seconds",),
    "effects_batch": ("batch",),
    "pause_after_failures": ("failures_before_pause",),
    "session_hours": ("session_lifetime",),
}


# Names that are a setting's elsewhere but mean something else here.
NOT_THE_SETTING = {
    ("core/catalog.py", "statement_timeout_seconds"): "a source's own limit, from the catalog",
    ("web/dashboard/operators.py", "owner"): "a page's filter on a person",
    ("web/dashboard/routes.py", "owner"): "a page's filter on a person",
    ("web/dashboard/routes.py", "token"): "the sign-in form's field",
}


def setting_names() -> dict[str, str]:
    """Every name that stands for a setting's value, to the setting's name."""
    names = {spec.name: spec.name for spec in fields(Settings) if spec.default is not MISSING}
    for setting, aliases in ALIASES.items():
        assert setting in names, f"ALIASES names {setting}, which is not a setting"
        names.update(dict.fromkeys(aliases, setting))
    return names


# Words of a name that say nothing of what it is.
NOT_TELLING = {"db", "max", "min", "per", "seconds", "minutes", "hours", "days", "s", "in"}
UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}


def setting_words() -> dict[str, set[str]]:
    """Each setting's telling words, from its name and its aliases."""
    words = {spec.name: set(spec.name.split("_")) for spec in fields(Settings)}
    for setting, aliases in ALIASES.items():
        for alias in aliases:
            words[setting] |= set(alias.split("_"))
    return {setting: found - NOT_TELLING for setting, found in words.items()}


def setting_values() -> dict[str, float]:
    """Each numeric setting's default; a duration's in seconds when its name says the unit."""
    values = {}
    for spec in fields(Settings):
        value = spec.default
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        unit = UNITS.get(spec.name.rpartition("_")[2])
        values[spec.name] = value * unit if unit else value
    return values


def literal_value(node: ast.expr) -> tuple[float, bool] | None:
    """A default's number, and whether it is a duration (`timedelta(hours=12)`, in seconds)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "timedelta"
        and not node.args
        and len(node.keywords) == 1
    ):
        amount = literal_value(node.keywords[0].value)
        if amount is None or node.keywords[0].arg is None:
            return None
        seconds = timedelta(**{node.keywords[0].arg: amount[0]}).total_seconds()
        return seconds, True
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value, False


def same_value_as(name: str, default: ast.expr) -> str | None:
    """The setting whose default `default` repeats under `name`, the names sharing a word."""
    found = literal_value(default)
    if found is None:
        return None
    value, duration = found
    words = set(name.split("_")) - NOT_TELLING
    for setting, setting_value in setting_values().items():
        in_seconds = setting.rpartition("_")[2] in UNITS
        if duration and not in_seconds:
            continue
        if value == setting_value and words & setting_words()[setting]:
            return setting
    return None


def defaults_declared_outside(source: Path) -> list[str]:
    """`path:line name=default (setting)` for each default given to a setting's value."""
    names = setting_names()
    found = []
    for path in sorted(source.rglob("*.py")):
        if path.name == "settings.py" and path.parent.name == "core":
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            pairs: list[tuple[str, ast.expr, int]] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = node.args
                positional = arguments.posonlyargs + arguments.args
                for arg, default in zip(
                    positional[len(positional) - len(arguments.defaults) :],
                    arguments.defaults,
                    strict=True,
                ):
                    pairs.append((arg.arg, default, node.lineno))
                for arg, kw_default in zip(
                    arguments.kwonlyargs, arguments.kw_defaults, strict=True
                ):
                    if kw_default is not None:
                        pairs.append((arg.arg, kw_default, node.lineno))
            elif isinstance(node, ast.ClassDef):
                for statement in node.body:
                    if (
                        isinstance(statement, ast.AnnAssign)
                        and isinstance(statement.target, ast.Name)
                        and statement.value is not None
                    ):
                        pairs.append((statement.target.id, statement.value, statement.lineno))
            relative = path.relative_to(source.parent)
            for name, default, line in pairs:
                if (str(relative.relative_to("reportexport")), name) in NOT_THE_SETTING:
                    continue
                setting = names.get(name) or same_value_as(name, default)
                if setting and not _is_none(default) and not _reads(default, setting):
                    found.append(f"{relative}:{line} {name}={ast.unparse(default)} ({setting})")
    return found


def _reads(node: ast.expr, setting: str) -> bool:
    """`default("setting")`, alone or inside the default (`timedelta(hours=default(...))`): the
    value read from `Settings`, declared there."""
    return any(
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "default"
        and [ast.literal_eval(arg) for arg in call.args] == [setting]
        for call in ast.walk(node)
    )


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def test_no_setting_has_a_second_default() -> None:
    assert defaults_declared_outside(SOURCE) == []


def test_a_second_default_is_found(tmp_path: Path) -> None:
    """The check can fail: a driver with its own lock timeout, a dataclass with its own link
    lifetime."""
    package = tmp_path / "reportexport"
    package.mkdir()
    (package / "driver.py").write_text(
        "class Driver:\n"
        "    def __init__(self, path: str, *, lock_timeout: float = 30.0) -> None: ...\n"
        "    def reads(self, lock_timeout: float = default('db_lock_timeout_seconds')): ...\n"
        "    def misreads(self, pool_size: int = default('db_lock_timeout_seconds')): ...\n"
        "    def limits(self, failures_per_minute: int = 10, status: int = 10): ...\n"
        "    def lasts(self, lifetime: timedelta = timedelta(hours=12)): ...\n"
        "    def derives(self, lifetime: timedelta = timedelta(hours=default('session_hours'))):\n"
        "        ...\n"
    )
    (package / "links.py").write_text(
        "from dataclasses import dataclass\n"
        "@dataclass\n"
        "class Links:\n"
        "    link_seconds: int = 86400\n"
        "    label: str = 'x'\n"
    )
    assert defaults_declared_outside(package) == [
        "reportexport/driver.py:2 lock_timeout=30.0 (db_lock_timeout_seconds)",
        "reportexport/driver.py:4 pool_size=default('db_lock_timeout_seconds') (db_pool_size)",
        "reportexport/driver.py:5 failures_per_minute=10 (sign_in_failures_per_minute)",
        "reportexport/driver.py:6 lifetime=timedelta(hours=12) (session_hours)",
        "reportexport/links.py:4 link_seconds=86400 (link_seconds)",
    ]
