"""Name resolution with a time limit.

The system resolver (`getaddrinfo`) has no timeout of its own: where the DNS server does not
answer, one name can hold a thread for tens of seconds. A delivery, or a person waiting for a
test delivery, gets the answer within a limit or an `OSError` saying there was none, which
`check_destination` reports as a name that does not resolve. A lookup that outlives its limit
finishes in the background on one of a few shared threads.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence

from reportexport.webhooks.ssrf import Resolver

_LOOKUPS = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="resolve")


class ResolveTimeoutError(OSError):
    """The resolver gave no answer within its limit."""


def within(resolver: Resolver, seconds: float) -> Resolver:
    """`resolver`, answering within `seconds` or raising ResolveTimeoutError."""

    def resolve(host: str, port: int) -> Sequence[str]:
        lookup = _LOOKUPS.submit(resolver, host, port)
        try:
            return lookup.result(timeout=seconds)
        except concurrent.futures.TimeoutError:
            lookup.cancel()
            raise ResolveTimeoutError(f"no answer within {seconds:g} s") from None

    return resolve
