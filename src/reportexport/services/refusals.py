"""Refused access, logged and counted: where the export service refuses a saved query (a hidden
query answered as missing, an access rule or a bound attribute on a run or a download) and
where company sign-in refuses a person.

The counts are this process's since it started (what a refusal changes is nothing in the job
store, so there is nothing there to count); `/metrics` exposes them as
`reportexport_access_refusals_total{path, rule}`. A schedule's firing refused for access is also
kept with the firing (code `access`) and counted from the job store with the other firings.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Literal

# What was refused: seeing a saved query by name, making, rerunning or firing a job of it,
# resuming a schedule of it, downloading its file (through the service or a signed link),
# signing in.
RefusedPath = Literal[
    "show", "create", "rerun", "schedule", "resume", "download", "link", "sign_in"
]
# What refused it: a group rule, a parameter bound to an attribute the person lacks (or whose
# value changed), the identity provider, an operator's revocation or suspension.
RefusedBy = Literal["group", "bind", "provider", "revoked", "suspended"]

log = logging.getLogger("reportexport.access")


class AccessRefusals:
    """Counts of refused access by (path, rule), safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()

    def refused(self, path: RefusedPath, rule: RefusedBy, message: str) -> None:
        """Log one refusal (`message` says who, what and why) and count it."""
        log.info("access refused (%s, %s): %s", path, rule, message)
        with self._lock:
            self._counts[(path, rule)] += 1

    def counts(self) -> dict[tuple[str, str], int]:
        """{(path, rule): refusals} so far."""
        with self._lock:
            return dict(self._counts)
