"""A real HTTP webhook receiver on loopback that records what it got and answers as scripted."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    headers: dict[str, str]
    body: str
    at: float
    path: str = ""


@dataclass
class Receiver:
    url: str = ""
    # Each delivery takes the next scripted answer: (status, extra headers, seconds to stall).
    script: list[tuple[int, dict[str, str], float]] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    in_flight: dict[str, int] = field(default_factory=dict)
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self) -> tuple[int, dict[str, str], float]:
        with self.lock:
            return self.script.pop(0) if self.script else (200, {}, 0.0)

    def ids(self) -> list[str]:
        return [r.headers.get("webhook-id", "") for r in self.received]


@contextmanager
def running_receiver(receiver: Receiver) -> Iterator[Receiver]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = self.rfile.read(length).decode()
            message = self.headers.get("webhook-id", "")
            with receiver.lock:
                receiver.in_flight[message] = receiver.in_flight.get(message, 0) + 1
                receiver.most_in_flight = max(receiver.most_in_flight, receiver.in_flight[message])
                receiver.received.append(
                    Received(
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                        time.time(),
                        self.path,
                    )
                )
            status, headers, stall = receiver.answer()
            time.sleep(stall)
            with receiver.lock:
                receiver.in_flight[message] -= 1
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
