"""The first run on a machine: the demo data and catalog, the job store, the first people.

`reportexport demo` and `reportexport serve` (on the embedded default) both start here.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reportexport.composition import Runtime


def make_demo(runtime: Runtime, *, force: bool) -> None:
    """The demo database and catalog where they are missing (or always with `force`), and an
    upgraded job store; prints what it made and the first people's tokens."""
    from reportexport.composition import demo_paths
    from reportexport.entrypoints.demo import build_demo_database, write_demo_catalog

    settings = runtime.settings
    database_file, catalog_file = demo_paths(settings)
    if force or not database_file.exists():
        print(f"building {database_file} with {settings.demo_rows:,} orders ...", flush=True)
        started = time.monotonic()
        with _working(f"building the demo data ({settings.demo_rows:,} orders)"):
            build_demo_database(database_file, settings.demo_rows)
        print(f"  built in {time.monotonic() - started:.1f} s")
    if force or not catalog_file.exists():
        write_demo_catalog(catalog_file, database_file)
        print(f"wrote the demo catalog {catalog_file}")
    upgraded = runtime.unchecked_database().schema.upgrade()
    print(f"the job store is ready (schema version {upgraded.version})")
    print_first_people(runtime)
    demo_access(runtime)


def demo_access(runtime: Runtime) -> None:
    """The demo catalog's access at work: a `finance` group (nobody in it yet), and the
    demo user's `country`, which "Customers of my country" is bound to."""
    groups = runtime.database.groups
    # Another process starting on the same store may make it first (then create_group answers
    # None): only the one that made it says so.
    made = "finance" not in {group.name for group in groups.list_groups()} and (
        groups.create_group("finance", "sees the revenue", by="demo") is not None
    )
    if made:
        print("made the group finance (reportexport groups add finance NAME lets someone in)")
    owner = runtime.settings.owner
    user = runtime.database.users.user_by_name(owner)
    if user is not None and "country" not in groups.access_of(owner).attribute_values:
        groups.set_attribute(owner, "country", "FR", origin="operator", by="demo")
        print(f"{owner}'s country is FR (reportexport users set {owner} country DE changes it)")


@contextlib.contextmanager
def _working(what: str) -> Iterator[None]:
    """A spinner with the time so far on a terminal's stderr while something long runs."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    columns = (SpinnerColumn(), TextColumn(what), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        progress.add_task(what, total=None)
        yield


def print_first_people(runtime: Runtime) -> None:
    for person in runtime.first_people():
        line = f"created {person.role} {person.name!r}; token (shown once): {person.token}"
        print(line, flush=True)
