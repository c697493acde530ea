"""A local directory as the object store: temp files renamed into place, never overwritten."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from reportexport.core.links import sign_download
from reportexport.objects import (
    OWNER_MARK,
    ObjectExistsError,
    ObjectInfo,
    ObjectKeyError,
    ObjectStoreUnavailableError,
    PublishWithheldError,
)


def local_root(url: str) -> Path:
    if not url.startswith("file://"):
        raise ValueError(f"local object stores look like file:///path, not {url!r}")
    return Path(url[len("file://") :])


@contextlib.contextmanager
def _writing(root: Path) -> Iterator[None]:
    """An OSError while writing is the store's trouble (full, read-only, missing), not the job's."""
    try:
        yield
    except ObjectExistsError:
        raise
    except OSError as exc:  # FileExistsError too: a file or dangling link where a folder goes
        reason = exc.strerror or type(exc).__name__
        raise ObjectStoreUnavailableError(
            f"the object store at {root} refused a write ({reason}): check that the folder "
            "exists, is writable and has space"
        ) from exc


# How many written bytes a temp object lets pile up before it asks the kernel to start writing
# them out: the fsync at publish then waits for the last stretch only.
WRITEBACK_STRIDE = 8 << 20


class LocalTempObject:
    def __init__(self, root: Path, key: str, final_key: str) -> None:
        self.root = root
        self.key = key
        self.final_key = final_key
        self.path = root / key
        self._file: BinaryIO | None = None
        self._written = 0
        self._flushed = 0  # where the writeback asked for last began
        with _writing(root):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._file = open(self.path, "xb")  # noqa: SIM115 - held until publish
            except FileExistsError:
                # The key names the job and its lease token, which only this run holds: what
                # is there is an earlier attempt of this run whose removal failed (an outage
                # that refused the unlink too), never another run's object.
                self.path.unlink()
                self._file = open(self.path, "xb")  # noqa: SIM115 - held until publish

    def write(self, data: bytes) -> None:
        if self._file is None:
            raise ValueError(f"temp object {self.key} is closed")
        with _writing(self.root):
            self._file.write(data)
            self._written += len(data)
            if self._written - self._flushed >= WRITEBACK_STRIDE:
                self._file.flush()
                _start_writeback(self._file.fileno(), self._flushed)
                self._flushed = self._written

    def publish(self, check: Callable[[], bool] | None = None) -> None:
        if self._file is None:
            raise ValueError(f"temp object {self.key} is closed")
        final_key = self.final_key
        target = self.root / final_key
        with _writing(self.root):
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None
            target.parent.mkdir(parents=True, exist_ok=True)
            if check is not None and not check():
                self.abort()
                raise PublishWithheldError(f"{final_key} was not published: the check said no")
            try:
                os.link(self.path, target)  # atomic, and fails rather than replace an object
            except FileExistsError:
                raise ObjectExistsError(f"an object already exists at {final_key}") from None
            os.unlink(self.path)
            _fsync_dir(target.parent)

    def abort(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):  # a full disk fails the close's flush as well
                self._file.close()
            self._file = None
        self.path.unlink(missing_ok=True)


class LocalObjectStore:
    def __init__(self, url: str, *, link_secret: bytes | None = None) -> None:
        self.url = url
        self.root = local_root(url)
        # A store that cannot be made now is an outage the worker paces, not a reason to stop.
        with contextlib.suppress(OSError):
            self.root.mkdir(parents=True, exist_ok=True)
        self.link_secret = link_secret

    def create_temp(self, job_id: int, token: int, final_key: str) -> LocalTempObject:
        return LocalTempObject(self.root, f"tmp/{job_id}.{token}.part", final_key)

    def stat(self, key: str) -> ObjectInfo | None:
        path = self._path(key)
        try:
            st = path.stat()
        except (FileNotFoundError, NotADirectoryError):
            if not self.root.is_dir():  # the store is away, not the object: say so
                raise ObjectStoreUnavailableError(
                    f"the object store at {self.root} is not a folder now: is its volume mounted?"
                ) from None
            return None
        except OSError as exc:
            raise ObjectStoreUnavailableError(
                f"the object store at {self.root} could not be read ({exc.strerror})"
            ) from exc
        return ObjectInfo(
            key=key, size=st.st_size, modified=datetime.fromtimestamp(st.st_mtime, UTC)
        )

    def read(self, key: str) -> BinaryIO:
        return open(self._path(key), "rb")

    def delete(self, key: str) -> None:
        path = self._path(key)
        path.unlink(missing_ok=True)
        if key.startswith("exports/"):
            with contextlib.suppress(OSError):  # not empty, or already gone
                path.parent.rmdir()

    def list_objects(self) -> Iterator[ObjectInfo]:
        for folder in ("exports", "tmp"):
            base = self.root / folder
            if not base.exists():
                continue
            for path in sorted(base.rglob("*")):
                if path.is_file():
                    key = path.relative_to(self.root).as_posix()
                    info = self.stat(key)
                    if info is not None:
                        yield info

    def download_url(self, key: str, file_name: str, expires_in: int) -> str:
        """A link the service itself serves: /api/downloads/<signed token>."""
        if not self.link_secret:
            raise ValueError("the local object store needs a link secret to sign downloads")
        return "/api/downloads/" + sign_download(self.link_secret, key, file_name, expires_in)

    def claim(self, owner: str) -> str:
        """The mark is written whole to a file of its own, then linked into place: a process
        starting beside this one reads the mark complete or not at all, never empty."""
        mark = self.root / f".{OWNER_MARK}"
        with _writing(self.root):
            if self._mark(mark) is None:
                draft = self.root / f".{OWNER_MARK}.{os.getpid()}.{threading.get_ident()}"
                draft.write_text(owner + "\n", encoding="utf-8")
                try:
                    os.link(draft, mark)
                except FileExistsError:
                    if self._mark(mark) is None:  # an empty mark left by a torn write
                        os.replace(draft, mark)
                finally:
                    draft.unlink(missing_ok=True)
            return self._mark(mark) or owner

    @staticmethod
    def _mark(mark: Path) -> str | None:
        try:
            return mark.read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise ObjectKeyError(f"the key {key!r} leaves the object store")
        return path


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_file_range() -> Any:
    """Linux's sync_file_range(2), or None where there is none (it is only a head start)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        function = call.sync_file_range
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_SYNC_FILE_RANGE = _sync_file_range()
_SYNC_FILE_RANGE_WRITE = 2


def _start_writeback(fd: int, offset: int) -> None:
    """Start writing out the file's dirty pages from `offset` on, without waiting for them (a
    hint: the fsync before publishing is what makes the object durable)."""
    if _SYNC_FILE_RANGE is not None:
        _SYNC_FILE_RANGE(fd, offset, 0, _SYNC_FILE_RANGE_WRITE)
