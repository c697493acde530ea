"""Where things are: the job store, the catalog, the object store, the link secret.

Every setting has an environment variable and a default under one data directory
($REPORTEXPORT_HOME, default ./var), so the embedded default needs no set-up at all.
"""

from __future__ import annotations

import os
import secrets
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
