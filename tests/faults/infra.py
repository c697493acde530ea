"""The pieces the fault suite runs and breaks: moto's S3 server in a process of its own, a
loopback proxy in front of it that can answer 503, a webhook receiver that can be slow, down or
gone, and `reportexport` processes under a small supervisor.

Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import contextlib
import email
import email.policy
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.effects.smtp_server import LoopbackController
from tests.helpers import poll

AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
BIN = Path(sys.executable).parent
MOTO_LISTENING = re.compile(r"Running on http://127\.0\.0\.1:(\d+)")


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


# -- S3 --------------------------------------------------------------------------------------------


class MotoServer:
    """moto's S3 server as a process, so that SIGSTOP pauses it; it keeps its buckets in memory,
    so it is never restarted while the suite runs."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.port = 0  # until it runs: it takes a free port itself and names it in its log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log, "wb") as out:
            process = subprocess.Popen(
                [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", "0"],
                stdout=out,
                stderr=out,
                env={**os.environ, **AWS},
            )
        self.process = process

        def answering() -> int | None:
            if process.poll() is not None:
                raise RuntimeError(f"moto_server ended ({process.returncode}); see {self.log}")
            found = MOTO_LISTENING.search(self.log.read_text(errors="replace"))
            return int(found.group(1)) if found and _answers(int(found.group(1))) else None

        port = poll(answering, 60)
        if port is None:
            raise RuntimeError(f"moto_server did not start; see {self.log}")
        self.port = port

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGCONT)
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class RefusingProxy:
    """A TCP relay to an S3 server that, while `refusing`, cuts every connection and answers
    each new request with 503: an S3 endpoint that is there but refuses writes."""

    ANSWER = (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\n"
        b"Content-Length: 86\r\nConnection: close\r\n\r\n"
        b"<Error><Code>ServiceUnavailable</Code><Message>refused by the suite</Message></Error>"
    )

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.refusing = threading.Event()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="s3-proxy", daemon=True)
        self._thread.start()

    def refuse(self) -> None:
        self.refusing.set()
        self._cut_all()

    def accept_again(self) -> None:
        self.refusing.clear()

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        self._cut_all()

    def _cut_all(self) -> None:
        with self._lock:
            connections, self._open = list(self._open), set()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        if self.refusing.is_set():
            self._refuse(client)
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        with self._lock:
            self._open.update((client, upstream))
        threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()
        self._pump(client, upstream)

    def _refuse(self, client: socket.socket) -> None:
        with client:
            client.settimeout(2)
            seen = b""
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in seen and len(seen) < 65536:
                    chunk = client.recv(65536)
                    if not chunk:
                        return
                    seen += chunk
                client.sendall(self.ANSWER)

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            for conn in (source, target):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open.discard(source)
                self._open.discard(target)
            source.close()


# -- webhooks --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Delivery:
    path: str
    webhook_id: str
    event_type: str
    job_id: int
    answered: int


@dataclass
class Receiver:
    """A loopback webhook receiver: `ok` (200), `slow` (answers after the sender's timeout),
    `gone` (410), or `down` (nothing listens)."""

    port: int = 0  # any free port at the first `up`, the same one after
    mode: str = "ok"
    stall_seconds: float = 12.0
    deliveries: list[Delivery] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                mode = receiver.mode
                answered = {"ok": 200, "slow": 200, "gone": 410}.get(mode, 200)
                try:
                    event = json.loads(body)
                    job_id, kind = int(event["data"]["job_id"]), str(event["type"])
                except (ValueError, KeyError, TypeError):
                    job_id, kind = -1, "unreadable"
                with receiver.lock:
                    receiver.deliveries.append(
                        Delivery(
                            self.path, self.headers.get("webhook-id", ""), kind, job_id, answered
                        )
                    )
                if mode == "slow":
                    time.sleep(receiver.stall_seconds)
                with contextlib.suppress(OSError):
                    self.send_response(answered)
                    self.send_header("content-length", "0")
                    self.end_headers()

            def log_message(self, *args: object) -> None:
                return None

        deadline = time.monotonic() + 30
        while True:
            try:
                server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
                self.port = int(server.server_address[1])
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, name="receiver", daemon=True).start()

    def down(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


# -- e-mail ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mail:
    recipient: str
    message_id: str
    subject: str


class MailServer:
    """A loopback SMTP server (aiosmtpd) that keeps what it receives: `up`, or `down` (nothing
    listens); `hold` keeps the next message's answer back, once its whole content has arrived,
    until `release`, as a server that has a message while its sender does not know yet (the
    window in which a sender that dies sends the message again)."""

    def __init__(self) -> None:
        self.port = 0  # any free port at the first `up`, the same one after
        self.received: list[Mail] = []
        self.lock = threading.Lock()
        self.holding = threading.Event()
        # Each message held: its sender's port, and what lets its answer go.
        self.held: list[tuple[int, threading.Event]] = []
        self._controller: Any = None
        # While down, the port stays bound without listening (a connection is refused), so
        # that no other socket takes it before `up` (it is in the ephemeral range).
        self._placeholder: socket.socket | None = None

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.lock:
            for recipient in envelope.rcpt_tos:
                self.received.append(
                    Mail(recipient, str(message["Message-ID"]), str(message["Subject"]))
                )
        released = None
        with self.lock:
            if self.holding.is_set():
                self.holding.clear()
                released = threading.Event()
                self.held.append((int(session.peer[1]), released))
        if released is not None:
            deadline = time.monotonic() + 30
            while not released.is_set() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        return "250 Message accepted for delivery"

    def up(self) -> None:
        if self._placeholder is not None:
            self._placeholder.close()
            self._placeholder = None
        deadline = time.monotonic() + 30
        while True:
            controller = LoopbackController(self, hostname="127.0.0.1", port=self.port)
            try:
                controller.start()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.port = int(controller.port)
        self._controller = controller

    def down(self) -> None:
        controller, self._controller = self._controller, None
        if controller is not None:
            controller.stop()
            placeholder = socket.socket()
            placeholder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            with contextlib.suppress(OSError):
                placeholder.bind(("127.0.0.1", self.port))
            self._placeholder = placeholder

    def stop(self) -> None:
        """Down for good: nothing listens, and the port is let go."""
        self.down()
        if self._placeholder is not None:
            self._placeholder.close()
            self._placeholder = None

    def hold(self) -> None:
        """Hold the next message's answer."""
        self.holding.set()

    def held_sender(self) -> int | None:
        """The port the message held sends from, once one is."""
        with self.lock:
            return self.held[-1][0] if self.held else None

    def release(self) -> None:
        """Answer every message held, and hold no other."""
        with self.lock:
            self.holding.clear()
            held, self.held = self.held, []
        for _, released in held:
            released.set()


def process_with_port(port: int, pids: Sequence[int]) -> int | None:
    """Which of `pids` holds the loopback TCP socket whose local port is `port` (from
    /proc/net/tcp and each process's descriptors)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(fields[9])
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    link = os.readlink(fd)
                    if link.startswith("socket:[") and link[8:-1] in inodes:
                        return pid
    return None


# -- processes -------------------------------------------------------------------------------------


@dataclass
class Process:
    """One `reportexport` process; `supervised` ones are started again when they exit on their
    own, as systemd's Restart=on-failure would."""

    name: str
    kind: str
    args: list[str]
    env: Mapping[str, str]
    directory: Path
    supervised: bool = True
    popen: subprocess.Popen[bytes] | None = None
    # Set while the suite itself stops or kills the process: an exit then is no surprise.
    held: bool = False
    stopped: bool = False
    unexpected_exits: list[int] = field(default_factory=list)
    starts: int = 0
    started_at: float = 0.0

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    @property
    def stdout(self) -> Path:
        return self.directory / f"{self.name}.out"

    def start(self) -> None:
        self.starts += 1
        self.started_at = time.monotonic()
        with (
            open(self.stdout, "ab") as out,
            open(self.directory / f"{self.name}.log", "ab") as log,
        ):
            self.popen = subprocess.Popen(
                [str(BIN / "reportexport"), *self.args],
                stdout=out,
                stderr=log,
                env=dict(self.env),
                cwd=self.directory,
            )
        self.held = False

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal(self, signum: int) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                assert self.popen is not None
                self.popen.send_signal(signum)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGCONT then SIGTERM, and SIGKILL if it does not end in time; its exit code."""
        self.held = True
        if self.popen is None:
            return None
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            return -9


class Supervisor:
    """Restarts supervised processes that exit without being asked, and counts those exits."""

    def __init__(self, processes: list[Process]) -> None:
        self.processes = processes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="supervisor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(0.3):
            for process in self.processes:
                if process.held or not process.supervised or process.popen is None:
                    continue
                code = process.popen.poll()
                if code is not None:
                    process.unexpected_exits.append(code)
                    time.sleep(1.0)  # RestartSec
                    if not self._stop.is_set() and not process.held:
                        process.start()


def http_json(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
