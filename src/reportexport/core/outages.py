"""One kind of failure every layer shares: something the service depends on did not answer.

The job store, the object store and the sources raise subclasses of `OutageError` when they are
down, busy or unreachable; entry points answer them as "try again shortly" (HTTP 503 with a
Retry-After, exit 1 on the command line) instead of as a bug, without importing the adapters.
"""

from __future__ import annotations


class OutageError(Exception):
    """A dependency did not answer; the same request may well succeed in a moment."""

    retry_after_seconds = 1
