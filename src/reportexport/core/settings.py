"""Settings: one frozen object per process, built once from four layers.

The command line wins over the environment (`REPORTEXPORT_*`), which wins over the optional
TOML file (`--config` or `$REPORTEXPORT_CONFIG`), which wins over the defaults declared on the
fields below: each default lives in exactly one place. Nothing here writes `os.environ`.
Values are checked when the object is built; a wrong key or value is a `SettingsError` that
names its layer (`$REPORTEXPORT_PORT`, `reportexport.toml: port`).

Paths that depend on the data directory (`database_url`, `catalog`, `objects_url`) default to
places under `home` and are resolved when the object is built.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIG_ENV = "REPORTEXPORT_CONFIG"
ENV_PREFIX = "REPORTEXPORT_"


class SettingsError(ValueError):
    """A setting that is missing, unknown or of the wrong kind; the message names where."""


def _about(
    help: str, *, minimum: float | None = None, maximum: float | None = None
) -> dict[str, Any]:
    return {"help": help, "minimum": minimum, "maximum": maximum}


@dataclass(frozen=True, kw_only=True)
class Settings:
    # -- where things are ----------------------------------------------------------------------
    home: Path = field(
        default=Path("var"), metadata=_about("data directory of the embedded default")
    )
    database_url: str = field(
        default="", metadata=_about("job store: sqlite:///path or postgresql://...")
    )
    catalog: Path = field(default=Path(), metadata=_about("the saved-query catalog (TOML)"))
    objects_url: str = field(
        default="", metadata=_about("object store: file:///dir or s3://bucket/prefix?...")
    )
    link_secret: str = field(
        default="",
        metadata=_about(
            "signs local download links and e-mails' unsubscribe links (default: a file in home)"
        ),
    )
    graph: Path = field(
        default=Path(),
        metadata=_about("the job status graph (default: the fixture this program was built with)"),
    )
    public_url: str = field(
        default="http://127.0.0.1:8000", metadata=_about("where people reach the service")
    )
    # -- people and fairness --------------------------------------------------------------------
    owner: str = field(
        default="demo", metadata=_about("the user who owns exports run by `reportexport export`")
    )
    max_active_exports: int = field(
        default=10, metadata=_about("per person, queued or running", minimum=1)
    )
    max_exports_per_minute: int = field(default=60, metadata=_about("per person", minimum=1))
    link_seconds: int = field(
        default=3600, metadata=_about("lifetime of a download link", minimum=1)
    )
    webhooks_allow_private: bool = field(
        default=False, metadata=_about("let webhooks reach loopback/private ranges")
    )
    max_schedules: int = field(
        default=20, metadata=_about("scheduled exports per person", minimum=1)
    )
    min_schedule_period_seconds: int = field(
        default=60,
        metadata=_about(
            "the shortest gap a schedule may leave between two firings (over its next year)",
            minimum=1,
        ),
    )
    # -- workers and side effects ---------------------------------------------------------------
    concurrency: int = field(default=2, metadata=_about("exports a worker runs at once", minimum=1))
    lease_seconds: float = field(
        default=30.0, metadata=_about("a running export's lease", minimum=1)
    )
    grace_seconds: float = field(
        default=30.0, metadata=_about("time running exports get at shutdown", minimum=0)
    )
    retention_days: float = field(
        default=7.0, metadata=_about("how long published files are kept", minimum=0)
    )
    pause_after_failures: int = field(
        default=3,
        metadata=_about(
            "infrastructure failures in a row before jobs of a store or source wait", minimum=1
        ),
    )
    db_lock_timeout_seconds: float = field(
        default=5.0, metadata=_about("longest wait for a lock in the job store", minimum=0.1)
    )
    db_statement_timeout_seconds: float = field(
        default=60.0, metadata=_about("longest statement in the job store", minimum=1)
    )
    run_schedules: bool = field(
        default=True,
        metadata=_about("fire due schedules in this worker or serve process (any number may)"),
    )
    db_pool_size: int = field(
        default=8,
        metadata=_about("PostgreSQL connections a process keeps to the job store", minimum=1),
    )
    effects_batch: int = field(
        default=10, metadata=_about("side effects claimed at once", minimum=1)
    )
    effects_claim_seconds: float = field(
        default=60.0, metadata=_about("a side-effect claim's lease", minimum=1)
    )
    effects_max_attempts: int = field(
        default=8, metadata=_about("attempts before a side effect is given up", minimum=1)
    )
    # -- announcements by e-mail ----------------------------------------------------------------
    smtp_host: str = field(
        default="",
        metadata=_about("the SMTP server announcements by e-mail go through (empty: no e-mail)"),
    )
    smtp_port: int = field(
        default=587,
        metadata=_about("its port (587 with starttls, 465 with tls)", minimum=1, maximum=65535),
    )
    smtp_security: str = field(
        default="starttls",
        metadata=_about(
            "how the connection is secured: starttls (upgraded), tls (from the start) or none "
            "(a relay on loopback only)"
        ),
    )
    smtp_user: str = field(
        default="", metadata=_about("the SMTP user name (empty: no authentication)")
    )
    smtp_password: str = field(default="", metadata=_about("the SMTP user's password"))
    smtp_from: str = field(
        default="",
        metadata=_about(
            "the From address of announcements (reports@example.com); needed for e-mail"
        ),
    )
    smtp_timeout_seconds: float = field(
        default=20.0,
        metadata=_about("longest wait for the SMTP server at each step of a sending", minimum=1),
    )
    email_domains: str = field(
        default="",
        metadata=_about(
            "the only domains announcements by e-mail may go to, comma-separated (example.com: "
            "exactly that domain, not its subdomains); empty: any domain"
        ),
    )
    email_daily_cap: int = field(
        default=50,
        metadata=_about(
            "the most e-mails one address (in any case) receives in 24 hours; past it, the "
            "e-mail to that address is given up with the reason (an operator may re-drive it)",
            minimum=1,
        ),
    )
    # -- announcements in chat ------------------------------------------------------------------
    chat_hosts: str = field(
        default="",
        metadata=_about(
            "the host names chat channels' incoming-webhook URLs may name, comma-separated "
            "(hooks.slack.com); empty: no chat channel"
        ),
    )
    # -- the HTTP service -----------------------------------------------------------------------
    host: str = field(default="127.0.0.1", metadata=_about("address `serve` listens on"))
    port: int = field(
        default=8000,
        metadata=_about(
            "port `serve` listens on (0: any free port, which it prints)",
            minimum=0,
            maximum=65535,
        ),
    )
    demo_rows: int = field(
        default=2_000_000, metadata=_about("orders in a new demo data set", minimum=1)
    )
    # -- the dashboard ---------------------------------------------------------------------------
    session_hours: float = field(
        default=12.0, metadata=_about("how long a dashboard sign-in lasts", minimum=0.01)
    )
    sign_in_failures_per_minute: int = field(
        default=10,
        metadata=_about("failed sign-ins one address may make a minute, then it waits", minimum=1),
    )
    # -- company sign-in (OpenID Connect) ------------------------------------------------------
    oidc_issuer: str = field(
        default="",
        metadata=_about(
            "the identity provider's issuer URL (where /.well-known/openid-configuration is); "
            "empty: sign-in by token only"
        ),
    )
    oidc_client_id: str = field(default="", metadata=_about("this service's client id there"))
    oidc_client_secret: str = field(
        default="", metadata=_about("this service's client secret there")
    )
    oidc_name_claim: str = field(
        default="preferred_username",
        metadata=_about("the claim a new person's name comes from (then email, then sub)"),
    )
    oidc_groups_claim: str = field(
        default="groups", metadata=_about("the claim that lists a person's groups")
    )
    oidc_group_map: str = field(
        default="",
        metadata=_about(
            "provider group=our group, comma-separated (empty: the provider's groups named "
            "like ours)"
        ),
    )
    oidc_attribute_claims: str = field(
        default="",
        metadata=_about("attribute=claim, comma-separated: attributes the provider gives"),
    )
    oidc_recheck_minutes: float = field(
        default=15.0,
        metadata=_about(
            "how long a company sign-in holds before the provider is asked again", minimum=0.01
        ),
    )
    max_event_streams: int = field(
        default=200,
        metadata=_about("live-page streams one serve process keeps open at once", minimum=1),
    )
    trust_forwarded_headers: bool = field(
        default=False,
        metadata=_about(
            "behind a proxy: take X-Forwarded-Proto (https: Secure cookies) and the last "
            "X-Forwarded-For address as the request's"
        ),
    )
    # -- the command line as a client of a server -------------------------------------------------
    server: str = field(default="", metadata=_about("the service the command line talks to"))
    token: str = field(default="", metadata=_about("the command line's API token"))

    @property
    def email_domain_list(self) -> tuple[str, ...]:
        """`email_domains` read: lower-case domain names (none: any domain)."""
        return host_names(self.email_domains)

    @property
    def chat_host_list(self) -> tuple[str, ...]:
        """`chat_hosts` read: lower-case host names (none: no chat channel)."""
        return host_names(self.chat_hosts)

    @property
    def retention_seconds(self) -> float:
        return self.retention_days * 86400

    @property
    def embedded_database_url(self) -> str:
        """The SQLite file under `home`: the store that builds itself on first use."""
        return f"sqlite:///{self.home / 'reportexport.db'}"

    @property
    def uses_embedded_database(self) -> bool:
        return self.database_url == self.embedded_database_url

    @classmethod
    def load(
        cls,
        *,
        command_line: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
        config_file: str | Path | None = None,
    ) -> Settings:
        """Build the settings from the four layers; SettingsError names what is wrong."""
        environ = environ or {}
        values: dict[str, Any] = {}
        location = config_file or environ.get(CONFIG_ENV)
        if location:
            values.update(_from_file(Path(location)))
        values.update(_from_environment(environ))
        values.update(
            _checked({k: v for k, v in (command_line or {}).items() if v is not None}, "--{dashed}")
        )
        settings = cls(**values)
        return settings._resolved()

    def _resolved(self) -> Settings:
        for name in ("email_domains", "chat_hosts"):
            try:
                host_names(getattr(self, name))
            except ValueError as exc:
                raise SettingsError(f"{name}: {exc}") from None
        home = self.home
        database_url = self.database_url or self.embedded_database_url
        return dataclasses.replace(
            self,
            database_url=database_url,
            catalog=self.catalog if self.catalog != Path() else home / "catalog.toml",
            objects_url=self.objects_url or _default_objects(home, database_url),
        )


_HOST_NAME = re.compile(
    r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*"
)


def host_names(text: str) -> tuple[str, ...]:
    """A comma-separated list of host or domain names, lower-cased; ValueError names the first
    entry that is not one (letters, digits and hyphens in dot-separated labels; IDN as xn--)."""
    names = [part.strip().lower().rstrip(".") for part in text.split(",")]
    found = tuple(dict.fromkeys(name for name in names if name))
    for name in found:
        if len(name) > 253 or not _HOST_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a host name (example.com)")
    return found


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _default_objects(home: Path, database_url: str) -> str:
    """home/objects; beside the file for another SQLite job store, so that two job stores
    never share an object folder by default."""
    if (
        database_url.startswith("sqlite:///")
        and database_url != f"sqlite:///{home / 'reportexport.db'}"
    ):
        database = Path(database_url.removeprefix("sqlite:///"))
        return f"file://{(database.parent / (database.stem + '-objects')).resolve()}"
    return f"file://{(home / 'objects').resolve()}"


FIELDS: dict[str, dataclasses.Field[Any]] = {f.name: f for f in dataclasses.fields(Settings)}


def default(name: str) -> Any:
    """A setting's default, for a part that takes it as a parameter: declared once, above."""
    return FIELDS[name].default


def environment_name(name: str) -> str:
    return ENV_PREFIX + name.upper()


def _from_file(path: Path) -> dict[str, Any]:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: {exc}") from None
    return _checked(document, f"{path}: {{name}}")


def _from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    raw = {
        name: environ[environment_name(name)]
        for name in FIELDS
        if environ.get(environment_name(name), "") != ""
    }
    return _checked(raw, "$" + ENV_PREFIX + "{upper}")


def _checked(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, value in raw.items():
        label = where.format(name=name, dashed=name.replace("_", "-"), upper=str(name).upper())
        if name not in FIELDS:
            known = ", ".join(sorted(FIELDS))
            raise SettingsError(f"{label}: unknown setting (known: {known})")
        values[name] = _converted(FIELDS[name], value, label)
    return values


def _converted(spec: dataclasses.Field[Any], value: Any, label: str) -> Any:
    kind: Any = type(spec.default)
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise SettingsError(f"{label} must be true or false, not {value!r}")
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise SettingsError(f"{label} must be a number, not {value!r}")
        try:
            number = kind(value)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise SettingsError(f"{label} must be {what}, not {value!r}") from None
        if kind is int and isinstance(value, float) and not value.is_integer():
            raise SettingsError(f"{label} must be a whole number, not {value!r}")
        if not math.isfinite(number):
            raise SettingsError(f"{label} must be a finite number, not {value!r}")
        minimum, maximum = spec.metadata["minimum"], spec.metadata["maximum"]
        if minimum is not None and number < minimum:
            raise SettingsError(f"{label} must be at least {minimum:g}, not {value!r}")
        if maximum is not None and number > maximum:
            raise SettingsError(f"{label} must be at most {maximum:g}, not {value!r}")
        return number
    if kind is Path or isinstance(spec.default, Path):
        if not isinstance(value, str | Path):
            raise SettingsError(f"{label} must be a path, not {value!r}")
        return Path(value)
    if not isinstance(value, str):
        raise SettingsError(f"{label} must be text, not {value!r}")
    return value
