"""Any S3-compatible store: a multipart upload is the temp object, completing it publishes.

An upload in progress is invisible to readers, so a half-written file never shows; parts go
up as they fill (8 MiB by default), so memory stays bounded whatever the size.
`CompleteMultipartUpload` carries `If-None-Match: *`, so a second object for a job is refused
where the store supports conditional writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, cast
from urllib.parse import parse_qs, urlparse

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from reportexport.objects import (
    OWNER_MARK,
    IncompleteReadError,
    ObjectExistsError,
    ObjectInfo,
    ObjectStoreError,
    ObjectStoreUnavailableError,
    PublishWithheldError,
)
from reportexport.objects.checked import CheckedRead

if TYPE_CHECKING:
    from mypy_boto3_s3.type_defs import CompletedPartTypeDef

PART_SIZE = 8 * 1024 * 1024


@contextlib.contextmanager
def _writing(store: S3ObjectStore, doing: str = "a write") -> Iterator[None]:
    """A store that cannot be reached or answers 5xx is an outage, not the job's fault."""
    try:
        yield
    except BotoCoreError as exc:  # connection refused, timed out, closed
        raise ObjectStoreUnavailableError(
            f"the object store {store.endpoint} could not be reached ({type(exc).__name__})"
        ) from exc
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if status >= 500 or status == 429:
            code = exc.response.get("Error", {}).get("Code", status)
            raise ObjectStoreUnavailableError(
                f"the object store {store.endpoint} refused {doing} ({code})"
            ) from exc
        raise


def _answered(store: S3ObjectStore, response: Any, field: str) -> str:
    """A field of an answer; one cut short (a connection closed inside its headers parses as
    an answer without it) is an outage, not a bug."""
    value = response.get(field)
    if not value:
        raise ObjectStoreUnavailableError(
            f"the object store {store.endpoint} answered without {field}: cut short?"
        )
    return str(value)


def _read_error(store: S3ObjectStore, key: str, exc: Exception) -> Exception:
    return IncompleteReadError(
        f"reading {key} from the object store {store.endpoint} failed ({type(exc).__name__}): "
        "what was read is not the whole object"
    )


@contextlib.contextmanager
def _reading(store: S3ObjectStore, key: str) -> Iterator[None]:
    """A read that cannot reach the store or is refused with 5xx is an outage."""
    try:
        yield
    except BotoCoreError as exc:
        raise _read_error(store, key, exc) from exc
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if status >= 500 or status == 429:
            raise _read_error(store, key, exc) from exc
        raise


class S3TempObject:
    """Parts are uploaded as they fill; the upload id is part of the temp key."""

    def __init__(self, store: S3ObjectStore, final_key: str) -> None:
        self.store = store
        self.final_key = final_key
        with _writing(store):
            response = store.client.create_multipart_upload(
                Bucket=store.bucket, Key=store.full(final_key), ContentType="text/csv"
            )
        self.upload_id: str = _answered(store, response, "UploadId")
        self.key = f"multipart/{self.upload_id}/{final_key}"
        self._buffer = bytearray()
        self._parts: list[CompletedPartTypeDef] = []
        self._done = False

    def write(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= self.store.part_size:
            self._upload(bytes(self._buffer[: self.store.part_size]))
            del self._buffer[: self.store.part_size]

    def _upload(self, body: bytes) -> None:
        number = len(self._parts) + 1
        with _writing(self.store):
            response = self.store.client.upload_part(
                Bucket=self.store.bucket,
                Key=self.store.full(self.final_key),
                UploadId=self.upload_id,
                PartNumber=number,
                Body=body,
            )
        self._parts.append({"PartNumber": number, "ETag": _answered(self.store, response, "ETag")})

    def publish(self, check: Callable[[], bool] | None = None) -> None:
        final_key = self.final_key
        if self._buffer or not self._parts:
            self._upload(bytes(self._buffer))
            self._buffer.clear()
        # Every part is up: the check comes right before CompleteMultipartUpload, the one
        # request that makes the object visible.
        if check is not None and not check():
            self.abort()
            raise PublishWithheldError(f"{final_key} was not published: the check said no")
        try:
            with _writing(self.store):
                self.store.client.complete_multipart_upload(
                    Bucket=self.store.bucket,
                    Key=self.store.full(final_key),
                    UploadId=self.upload_id,
                    MultipartUpload={"Parts": self._parts},
                    IfNoneMatch="*",
                )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
                self.abort()
                raise ObjectExistsError(f"an object already exists at {final_key}") from exc
            raise
        self._done = True

    def abort(self) -> None:
        if not self._done:
            self.store.abort_upload(self.final_key, self.upload_id)
            self._done = True


class S3ObjectStore:
    def __init__(self, url: str, *, part_size: int = PART_SIZE) -> None:
        parsed = urlparse(url)
        options = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
        self.url = url
        self.bucket = parsed.netloc
        self.prefix = parsed.path.strip("/")
        self.part_size = part_size
        self.endpoint = options.get("endpoint_url", f"s3://{self.bucket}")
        # Bounded waits, so an endpoint that stops answering is an outage within a minute or
        # two, not a worker stuck for many (both are URL options: ?read_timeout=120).
        self.client = boto3.client(
            "s3",
            endpoint_url=options.get("endpoint_url"),
            region_name=options.get("region", "us-east-1"),
            config=Config(
                retries={"max_attempts": int(options.get("max_attempts", 3)), "mode": "standard"},
                connect_timeout=float(options.get("connect_timeout", 10)),
                read_timeout=float(options.get("read_timeout", 60)),
                s3=cast(Any, {"addressing_style": options.get("addressing_style", "path")}),
            ),
        )

    def full(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def relative(self, full_key: str) -> str:
        return full_key[len(self.prefix) + 1 :] if self.prefix else full_key

    def create_temp(self, job_id: int, token: int, final_key: str) -> S3TempObject:
        del job_id, token  # the final key names the job; the upload id makes each run unique
        return S3TempObject(self, final_key)

    def stat(self, key: str) -> ObjectInfo | None:
        try:
            with _writing(self, "a look-up"):
                head = self.client.head_object(Bucket=self.bucket, Key=self.full(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise ObjectStoreError(str(exc)) from exc
        return ObjectInfo(key=key, size=int(head["ContentLength"]), modified=head["LastModified"])

    def read(self, key: str) -> BinaryIO:
        """The object's body, checked against its Content-Length as it is read: a body cut
        short (a paused server, a proxy answering 503) raises IncompleteReadError."""
        with _reading(self, key):
            response = self.client.get_object(Bucket=self.bucket, Key=self.full(key))
        length = int(response["ContentLength"])

        def failing(exc: Exception) -> Exception:
            return _read_error(self, key, exc)

        return cast(BinaryIO, CheckedRead(response["Body"], length, key, failing))

    def delete(self, key: str) -> None:
        if key.startswith("multipart/"):
            _, upload_id, final = key.split("/", 2)
            self.abort_upload(final, upload_id)
            return
        self.client.delete_object(Bucket=self.bucket, Key=self.full(key))

    def abort_upload(self, final: str, upload_id: str) -> None:
        try:
            self.client.abort_multipart_upload(
                Bucket=self.bucket, Key=self.full(final), UploadId=upload_id
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "NoSuchUpload":
                raise

    def claim(self, owner: str) -> str:
        key = self.full(OWNER_MARK)
        with _writing(self):
            try:
                self.client.put_object(
                    Bucket=self.bucket, Key=key, Body=owner.encode(), IfNoneMatch="*"
                )
                return owner
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("PreconditionFailed", "412"):
                    raise
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
            return str(body.read().decode("utf-8").strip())

    def list_objects(self) -> Iterator[ObjectInfo]:
        prefix = self.full("")
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", ()):
                if item["Key"] == self.full(OWNER_MARK):
                    continue
                yield ObjectInfo(
                    key=self.relative(item["Key"]),
                    size=int(item["Size"]),
                    modified=item["LastModified"],
                )
        uploads = self.client.list_multipart_uploads(Bucket=self.bucket, Prefix=prefix)
        for upload in uploads.get("Uploads", ()):
            yield ObjectInfo(
                key=f"multipart/{upload['UploadId']}/{self.relative(upload['Key'])}",
                size=0,
                modified=upload["Initiated"],
            )

    def download_url(self, key: str, file_name: str, expires_in: int) -> str:
        url: str = self.client.generate_presigned_url(
            "get_object",
            Params={
                "Bucket": self.bucket,
                "Key": self.full(key),
                "ResponseContentDisposition": f'attachment; filename="{file_name}"',
                "ResponseContentType": "text/csv",
            },
            ExpiresIn=expires_in,
        )
        return url
