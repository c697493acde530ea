"""A loopback TCP relay that can misbehave the way networks do, for tests against real servers
(PostgreSQL, an S3 server): cut a connection after the server took a request but before its
answer is back, hold a request, cut a response mid-body, refuse new connections for a while.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(eq=False)
class Pair:
    client: socket.socket
    upstream: socket.socket
    marked: bool = False  # what a hook may note about this connection
    mute: bool = False  # the server's bytes are dropped, not passed on
    passed: int = 0  # server bytes passed on since the last request
    notes: dict[str, object] = field(default_factory=dict)

    def cut(self) -> None:
        for conn in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                conn.close()


class Relay:
    """Relays 127.0.0.1:<port> to 127.0.0.1:<upstream_port>. Subclasses hook `from_client`
    and `from_server` (return the bytes to pass on; they may cut the pair)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.refuse_until = 0.0
        self.lock = threading.Lock()
        self._closed = False
        self._pairs: set[Pair] = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def refuse_for(self, seconds: float) -> None:
        """New connections are closed at once for `seconds` (a server that went away)."""
        self.refuse_until = time.monotonic() + seconds

    def cut_all(self) -> None:
        """Cut every open connection (new ones are still accepted)."""
        with self.lock:
            pairs = list(self._pairs)
        for pair in pairs:
            pair.cut()

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        with self.lock:
            pairs, self._pairs = list(self._pairs), set()
        for pair in pairs:
            pair.cut()

    def from_client(self, pair: Pair, chunk: bytes) -> bytes:
        return chunk

    def from_server(self, pair: Pair, chunk: bytes) -> bytes:
        return chunk

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if time.monotonic() < self.refuse_until:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            pair = Pair(client, upstream)
            with self.lock:
                self._pairs.add(pair)
            threading.Thread(target=self._pump, args=(pair, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(pair, False), daemon=True).start()

    def _pump(self, pair: Pair, upward: bool) -> None:
        source, target = (pair.client, pair.upstream) if upward else (pair.upstream, pair.client)
        hook: Callable[[Pair, bytes], bytes] = self.from_client if upward else self.from_server
        try:
            while chunk := source.recv(65536):
                out = hook(pair, chunk)
                if out and not (pair.mute and not upward):
                    target.sendall(out)
        except OSError:
            pass
        finally:
            pair.cut()
            with self.lock:
                self._pairs.discard(pair)


class CommitCutter(Relay):
    """In front of PostgreSQL: once armed, the first statement that contains `marker` (one
    that commits as the server runs it) is passed to the server, its answer dropped and the
    connection cut (the commit happened; the client cannot know), every other connection is
    cut too, and new connections are refused for `refuse_seconds` after."""

    def __init__(self, upstream_port: int, marker: bytes, refuse_seconds: float) -> None:
        super().__init__(upstream_port)
        self.marker = marker
        self.refuse_seconds = refuse_seconds
        self.armed = threading.Event()
        self.cut = threading.Event()

    def from_client(self, pair: Pair, chunk: bytes) -> bytes:
        if not self.armed.is_set() or self.marker not in chunk:
            return chunk
        self.armed.clear()
        pair.mute = True
        self.refuse_for(self.refuse_seconds)
        pair.upstream.sendall(chunk)
        threading.Timer(0.5, self._cut, args=(pair,)).start()
        return b""

    def _cut(self, pair: Pair) -> None:
        pair.cut()
        with self.lock:  # every other connection too, as a server going away does
            pairs = list(self._pairs)
        for other in pairs:
            other.cut()
        self.cut.set()


class FreezingRelay(Relay):
    """In front of PostgreSQL: once armed, the first connection that sends `marker` has that
    chunk passed to the server and then sends nothing more until `thaw` (its process frozen
    right after the statement went out, its TCP connection still up); answers still reach it."""

    def __init__(self, upstream_port: int, marker: bytes) -> None:
        super().__init__(upstream_port)
        self.marker = marker
        self.armed = threading.Event()
        self.frozen = threading.Event()
        self.thawed = threading.Event()

    def from_client(self, pair: Pair, chunk: bytes) -> bytes:
        if pair.marked:
            self.thawed.wait(120)
            return chunk
        if self.armed.is_set() and self.marker in chunk:
            self.armed.clear()
            pair.marked = True
            self.frozen.set()
        return chunk

    def thaw(self) -> None:
        self.thawed.set()


class S3Relay(Relay):
    """In front of an S3 server: records each request line; once `hold_parts` is set, an
    UploadPart request waits (`part_held` set) until `release` is set; once `truncate_after`
    is set, a response is cut after that many bytes; once `lose_complete_answer` is set, the
    next CompleteMultipartUpload reaches the server but its answer is dropped, the connection
    cut and new ones refused for `refuse_seconds`."""

    def __init__(self, upstream_port: int) -> None:
        super().__init__(upstream_port)
        self.requests: list[str] = []
        self.hold_parts = threading.Event()
        self.hold_all = threading.Event()  # every request waits for `release`: a hung server
        self.part_held = threading.Event()
        self.release = threading.Event()
        self.truncate_after: int | None = None
        self.lose_complete_answer = threading.Event()
        self.refuse_seconds = 2.0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def completes(self) -> list[str]:
        """The CompleteMultipartUpload requests seen (POST ...?uploadId=...)."""
        return [r for r in self.requests if r.startswith("POST ") and "uploadId=" in r]

    def from_client(self, pair: Pair, chunk: bytes) -> bytes:
        first = chunk.split(b"\r\n", 1)[0].decode("latin-1")
        if first.split(" ", 1)[0] in ("GET", "PUT", "POST", "DELETE", "HEAD"):
            with self.lock:
                self.requests.append(first)
            pair.passed = 0
            if self.hold_all.is_set():
                self.release.wait(60)
            if first.startswith("PUT ") and "partNumber=" in first and self.hold_parts.is_set():
                self.part_held.set()
                self.release.wait(60)
            completing = first.startswith("POST ") and "uploadId=" in first
            if completing and self.lose_complete_answer.is_set():
                # The upload completes; its answer never comes back, nor does the store for a
                # moment (a proxy restarting).
                self.lose_complete_answer.clear()
                pair.mute = True
                self.refuse_for(self.refuse_seconds)
                threading.Timer(0.5, pair.cut).start()
        return chunk

    def from_server(self, pair: Pair, chunk: bytes) -> bytes:
        limit = self.truncate_after
        if limit is None:
            return chunk
        room = limit - pair.passed
        if room <= 0:
            pair.cut()
            return b""
        pair.passed += len(chunk)
        if len(chunk) > room:
            pair.client.sendall(chunk[:room])
            pair.cut()
            return b""
        return chunk
