"""Where things are: the job store, the catalog, the object store, the link secret.

Every setting has an environment variable and a default under one data directory
($REPORTEXPORT_HOME, default ./var), so the embedded default needs no set-up at all.
"""

from __future__ import annotations

import os
import secrets
import tomllib
from pathlib import Path


def home() -> Path:
    return Path(os.environ.get("REPORTEXPORT_HOME", "var"))


def default_database_url() -> str:
    return os.environ.get("REPORTEXPORT_DATABASE_URL", f"sqlite:///{home() / 'reportexport.db'}")


def default_catalog_path() -> Path:
    return Path(os.environ.get("REPORTEXPORT_CATALOG", str(home() / "catalog.toml")))


def default_objects_url() -> str:
    return os.environ.get("REPORTEXPORT_OBJECTS_URL", f"file://{(home() / 'objects').resolve()}")


def link_secret() -> bytes:
    """$REPORTEXPORT_LINK_SECRET, else a random secret kept (mode 0600) in the data directory."""
    value = os.environ.get("REPORTEXPORT_LINK_SECRET")
    if value:
        return value.encode()
    path = home() / "link-secret"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(32))
    return path.read_text().strip().encode()


def webhooks_allow_private() -> bool:
    """$REPORTEXPORT_WEBHOOKS_ALLOW_PRIVATE=1 lets webhooks reach loopback and private ranges
    (development and tests only)."""
    return os.environ.get("REPORTEXPORT_WEBHOOKS_ALLOW_PRIVATE", "") in ("1", "true", "yes")


def public_url() -> str:
    """Where users reach the service; download links in webhooks start with it."""
    return os.environ.get("REPORTEXPORT_PUBLIC_URL", "http://127.0.0.1:8000")


class ConfigError(ValueError):
    pass


# Keys of the optional configuration file ($REPORTEXPORT_CONFIG) and the variables they set.
# The environment wins over the file; the file wins over the defaults.
FILE_KEYS: dict[str, tuple[str, type]] = {
    "home": ("REPORTEXPORT_HOME", str),
    "database_url": ("REPORTEXPORT_DATABASE_URL", str),
    "catalog": ("REPORTEXPORT_CATALOG", str),
    "objects_url": ("REPORTEXPORT_OBJECTS_URL", str),
    "link_secret": ("REPORTEXPORT_LINK_SECRET", str),
    "public_url": ("REPORTEXPORT_PUBLIC_URL", str),
    "webhooks_allow_private": ("REPORTEXPORT_WEBHOOKS_ALLOW_PRIVATE", bool),
    "max_active_exports": ("REPORTEXPORT_MAX_ACTIVE_EXPORTS", int),
    "max_exports_per_minute": ("REPORTEXPORT_MAX_EXPORTS_PER_MINUTE", int),
}


def apply_config_file(path: str | os.PathLike[str] | None = None) -> None:
    """Read $REPORTEXPORT_CONFIG (TOML) into the environment's defaults, or say what is wrong."""
    location = path or os.environ.get("REPORTEXPORT_CONFIG")
    if not location:
        return
    try:
        document = tomllib.loads(Path(location).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{location}: {exc}") from None
    for key, value in document.items():
        if key not in FILE_KEYS:
            known = ", ".join(sorted(FILE_KEYS))
            raise ConfigError(f"{location}: unknown key {key!r} (known: {known})")
        variable, kind = FILE_KEYS[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigError(f"{location}: {key} must be a {kind.__name__}, not {value!r}")
        if kind is int and isinstance(value, int) and value < 1:
            raise ConfigError(f"{location}: {key} must be at least 1, not {value}")
        text = ("1" if value else "0") if kind is bool else str(value)
        os.environ.setdefault(variable, text)


def positive_int(variable: str, default: int) -> int:
    """An integer setting from the environment, refused clearly when it is not one."""
    raw = os.environ.get(variable)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"${variable} must be a whole number, not {raw!r}") from None
    if value < 1:
        raise ConfigError(f"${variable} must be at least 1, not {value}")
    return value
