"""A reader that holds a body to its announced length: a short body is an error, never a file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reportexport.objects import IncompleteReadError


class CheckedRead:
    """Reads `body` (anything with `read(n)` and `close()`) and raises IncompleteReadError if
    it ends before `length` bytes, or fails on the way (`failing` names the error), or holds
    more than `length` bytes."""

    def __init__(
        self, body: Any, length: int, key: str, failing: Callable[[Exception], Exception]
    ) -> None:
        self.body = body
        self.length = length
        self.key = key
        self.failing = failing
        self.seen = 0

    def read(self, size: int = -1) -> bytes:
        try:
            chunk: bytes = self.body.read() if size is None or size < 0 else self.body.read(size)
        except IncompleteReadError:
            raise
        except Exception as exc:  # the transport's own errors, whatever the client calls them
            raise self.failing(exc) from exc
        self.seen += len(chunk)
        if self.seen > self.length:
            raise IncompleteReadError(
                f"{self.key}: more bytes than its Content-Length {self.length}"
            )
        if (not chunk or size is None or size < 0) and self.seen < self.length:
            raise IncompleteReadError(
                f"{self.key}: the body ended after {self.seen} of {self.length} bytes"
            )
        return chunk

    def close(self) -> None:
        self.body.close()

    def __enter__(self) -> CheckedRead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
