"""Object stores: where CSV files live, first as a temp object, then published at their key.

`open_object_store(url)` picks the backend: `file:///path` (a local directory, the embedded
default) or `s3://bucket/prefix?endpoint_url=...` (any S3-compatible store). Publishing is
atomic and never overwrites: a job's object appears complete at its key or not at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO, Protocol

from reportexport.core.outages import OutageError


class ObjectStoreError(Exception):
    pass


class ObjectExistsError(ObjectStoreError):
    """Publishing would overwrite an object: a job never gets a second object."""


class ObjectStoreUnavailableError(ObjectStoreError, OutageError):
    """The object store refused or could not take a write (a full, read-only or missing
    volume; an S3 endpoint that is down or answers 5xx): an infrastructure failure."""


class IncompleteReadError(ObjectStoreUnavailableError):
    """A read of an object ended before its length (a store paused, a connection cut or
    answering 503 mid-body): what was read is not the object, and must not be taken for it."""


class PublishWithheldError(ObjectStoreError):
    """The check made just before an object would become visible said no (the writer lost
    its lease): nothing was published, and the temp object is dropped."""


class ObjectKeyError(ObjectStoreError, ValueError):
    """A key that names no place in this store (it leaves the store's directory)."""


@dataclass(frozen=True, kw_only=True)
class ObjectInfo:
    key: str
    size: int
    modified: datetime


class TempObject(Protocol):
    key: str

    def write(self, data: bytes) -> None: ...

    def publish(self, check: Callable[[], bool] | None = None) -> None:
        """Make the written bytes visible at the final key, all at once; never overwrite.
        `check` is called at the last moment before the object becomes visible (after every
        byte is stored); if it answers False, nothing is published and PublishWithheldError
        is raised."""
        ...

    def abort(self) -> None:
        """Drop everything written; idempotent."""
        ...


class ObjectStore(Protocol):
    url: str

    def create_temp(self, job_id: int, token: int, final_key: str) -> TempObject:
        """A new temp object for one run (lease token) of a job, to be published at final_key.
        A run may try again on the same lease: what an earlier attempt of it left behind is
        replaced, never published."""
        ...

    def stat(self, key: str) -> ObjectInfo | None: ...

    def read(self, key: str) -> BinaryIO:
        """The object's bytes; a read that ends short of its length raises IncompleteReadError."""
        ...

    def delete(self, key: str) -> None:
        """Delete a published object or abort a temp object by its key; idempotent."""
        ...

    def list_objects(self) -> Iterator[ObjectInfo]:
        """Every published object and every temp object, temp keys included."""
        ...

    def download_url(self, key: str, file_name: str, expires_in: int) -> str: ...

    def claim(self, owner: str) -> str:
        """Mark this store as the job store `owner`'s unless it carries a mark already;
        returns the mark it carries now (another job store's id means: not yours)."""
        ...


OWNER_MARK = "reportexport-store"  # at the store's root; never listed, never swept


def final_key(job_id: int, file_name: str) -> str:
    return f"exports/{job_id}/{file_name}"


def final_key_job(key: str) -> int | None:
    """The job whose file a final key names (None for any other key)."""
    parts = key.split("/")
    if len(parts) == 3 and parts[0] == "exports" and parts[1].isascii() and parts[1].isdigit():
        return int(parts[1])
    return None


_JOB_IN_KEY = re.compile(
    r"^(?:exports/(\d+)/|tmp/(\d+)\.\d+\.part$|multipart/[^/]+/exports/(\d+)/)"
)


def job_of(key: str) -> int | None:
    """The job a key belongs to, from the key alone."""
    match = _JOB_IN_KEY.match(key)
    if match is None:
        return None
    return int(next(group for group in match.groups() if group is not None))


def is_temp(key: str) -> bool:
    return key.startswith(("tmp/", "multipart/"))


def open_object_store(url: str, *, link_secret: bytes | None = None) -> ObjectStore:
    if url.startswith("file://"):
        from reportexport.objects.local import LocalObjectStore

        return LocalObjectStore(url, link_secret=link_secret)
    if url.startswith("s3://"):
        from reportexport.objects.s3 import S3ObjectStore

        return S3ObjectStore(url)
    raise ValueError(f"unsupported object store URL {url!r}: use file:///path or s3://bucket")
