"""From a saved query to a job, and from a claimed job to a temp object full of CSV.

`new_export` validates parameters and snapshots everything a job needs, so a later catalog
edit never changes what it runs. `run_export` streams a claimed job's CSV into a temp object,
hashing and counting the bytes as they pass and enforcing the job's limits; the worker then
publishes the object and moves the job to `succeeded` in that order.
"""

from __future__ import annotations

import hashlib
import threading
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reportexport.core.catalog import Limits, SavedQuery
from reportexport.core.csvformat import CsvOptions
from reportexport.core.parameters import ParameterError, ParamSpec, decode, encode, validate
from reportexport.core.records import ClaimedJob, Job, JobId, NewJob
from reportexport.objects import ObjectStore, TempObject
from reportexport.sources import CancelToken, Source

BOM = b"\xef\xbb\xbf"
MAX_ROWS_PARAM = "reportexport_max_rows"


class LimitExceededError(Exception):
    """The export went past one of its limits; `code` names which (limit_rows, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def new_export(
    query: SavedQuery,
    raw_parameters: Mapping[str, Any],
    *,
    owner: str,
    requested_by: str | None = None,
    idempotency_key: str | None = None,
    rerun_of: JobId | None = None,
    schedule_id: int | None = None,
    from_text: bool = False,
    every_problem: bool = False,
    bound: Mapping[str, str] | None = None,
) -> NewJob:
    """A job for `query`; ParameterError names the parameter and the rule it breaks (with
    `every_problem`, InvalidParametersError names them all).

    `from_text` takes parameter values as text (forms, the command line, a stored job's
    parameters); otherwise as typed JSON values (see `reportexport.core.parameters`).
    `bound` holds the values of the parameters bound to the owner's attributes: the request
    may not send those (see `reportexport.core.access`).
    """
    values = validate(
        query.parameters,
        with_bound(query, raw_parameters, bound or {}),
        from_text=from_text,
        every_problem=every_problem,
    )
    return NewJob(
        owner=owner,
        saved_query=query.name,
        source=query.source,
        query_sql=query.sql,
        query_hash=query.content_hash,
        parameters={name: encode(value) for name, value in values.items()},
        options={
            "title": query.title,
            "parameter_specs": [spec.describe() for spec in query.parameters.values()],
            "csv": query.csv.to_json(),
            "limits": query.limits.to_json(),
        },
        idempotency_key=idempotency_key,
        rerun_of=rerun_of,
        schedule_id=schedule_id,
        requested_by=requested_by,
    )


def with_bound(
    query: SavedQuery, raw_parameters: Mapping[str, Any], bound: Mapping[str, str]
) -> dict[str, Any]:
    """The request's parameters with the bound ones filled in from the person's record;
    ParameterError when the request sends one of those itself."""
    for name, attribute in query.access.bound.items():
        if raw_parameters.get(name) not in (None, ""):
            raise ParameterError(
                name, "bound", f"is bound to your attribute {attribute}: its value comes from "
                "your record, and a request may not send it",
            )  # fmt: skip
    return {**raw_parameters, **bound}


def without_bound(query: SavedQuery, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """What a person chose, without the values their record gave (a rerun and a schedule's
    firing take those from the record as it is then)."""
    return {name: value for name, value in parameters.items() if name not in query.access.bound}


@dataclass(frozen=True, kw_only=True)
class JobSpec:
    """What a job runs, decoded from its own snapshot."""

    sql: str
    parameters: Mapping[str, Any]
    csv: CsvOptions
    limits: Limits
    file_name: str


def job_spec(job: ClaimedJob | Job) -> JobSpec:
    options = job.options
    specs = {d["name"]: _spec(d) for d in options.get("parameter_specs", ())}
    parameters = {
        name: decode(specs[name], value) if name in specs else value
        for name, value in job.parameters.items()
    }
    csv = CsvOptions(**options.get("csv", {}))
    limits = Limits(**options.get("limits", {}))
    suffix = ".csv.gz" if csv.gzip else ".csv"
    return JobSpec(
        sql=job.query_sql,
        parameters=parameters,
        csv=csv,
        limits=limits,
        file_name=f"{job.saved_query}-{job.id}{suffix}",
    )


def _spec(described: Mapping[str, Any]) -> ParamSpec:
    fields = {k: v for k, v in described.items() if k != "choices"}
    return ParamSpec(**fields, choices=tuple(described.get("choices", ())))


# Every byte but the quote and LF: what `RecordCounter` deletes before it looks at quotes.
_NOT_QUOTE_OR_LF = bytes(b for b in range(256) if b not in b'"\n')


class RecordCounter:
    """Counts CSV records as their bytes pass: line ends outside quoted fields.

    A chunk without a quote costs one `bytes.count`. In a chunk with
    quotes, whether a line end is inside quotes depends only on the parity of the quotes before
    it, so the chunk is reduced, in C, to its quotes and line ends, and adjacent quote pairs
    (a field without a line end, an escaped `""`) are dropped, which keeps every parity; the
    few quotes left split it, and the line ends inside quotes (every other part) are counted in
    one call.
    """

    def __init__(self) -> None:
        self.line_ends = 0
        self._quoted = False

    def feed(self, data: bytes) -> None:
        if not self._quoted and b'"' not in data:
            self.line_ends += data.count(b"\n")
            return
        marks = data.translate(None, _NOT_QUOTE_OR_LF).replace(b'""', b"")
        parts = marks.split(b'"')
        inside = b"".join(parts[0 if self._quoted else 1 :: 2]).count(b"\n")
        self.line_ends += marks.count(b"\n") - inside
        if len(parts) % 2 == 0:  # an odd number of quotes
            self._quoted = not self._quoted

    @property
    def rows(self) -> int:
        """Records after the header."""
        return max(0, self.line_ends - 1)


class ObjectSink:
    """Writes CSV bytes into a temp object: BOM, gzip, SHA-256 and counts on the way."""

    def __init__(self, temp: TempObject, csv: CsvOptions, limits: Limits) -> None:
        self.temp = temp
        self.limits = limits
        self.csv_bytes = 0
        self.object_bytes = 0
        self.records = RecordCounter()
        self._sha = hashlib.sha256()
        self._gzip = zlib.compressobj(6, zlib.DEFLATED, 31) if csv.gzip else None
        if csv.bom:
            self.write(BOM)

    def write(self, data: bytes) -> None:
        self.csv_bytes += len(data)
        self.records.feed(data)
        if self.limits.max_bytes is not None and self.csv_bytes > self.limits.max_bytes:
            raise LimitExceededError(
                "limit_bytes", f"the export grew past its limit of {self.limits.max_bytes:,} bytes"
            )
        self._emit(self._gzip.compress(data) if self._gzip else data)

    def _emit(self, data: bytes) -> None:
        if data:
            self._sha.update(data)
            self.object_bytes += len(data)
            self.temp.write(data)

    def finish(self) -> str:
        """Flush what is buffered; the object's SHA-256 (hex)."""
        if self._gzip is not None:
            self._emit(self._gzip.flush())
            self._gzip = None
        return self._sha.hexdigest()


@dataclass(frozen=True, kw_only=True)
class Staged:
    """A complete temp object, ready to publish."""

    temp: TempObject
    rows: int | None
    bytes: int
    sha256: str
    columns: tuple[str, ...]
    column_types: tuple[str, ...]
    file_name: str


def run_export(
    spec: JobSpec, source: Source, temp: TempObject, sink: ObjectSink, cancel: CancelToken
) -> Staged:
    """Stream the job's CSV into `temp`; raises SourceError, LimitExceededError or
    ExportCanceledError, leaving the temp object for the caller to abort."""
    sql, parameters = spec.sql, dict(spec.parameters)
    if spec.limits.max_rows is not None:  # one row past the limit tells that it was passed
        sql = f"SELECT * FROM ({sql}) AS limited LIMIT :{MAX_ROWS_PARAM}"
        parameters[MAX_ROWS_PARAM] = spec.limits.max_rows + 1
    timer = None
    if spec.limits.max_seconds is not None:
        timer = threading.Timer(spec.limits.max_seconds, cancel.cancel, args=("limit_time",))
        timer.daemon = True
        timer.start()
    try:
        exported = source.export(sql, parameters, spec.csv, sink, cancel)
    finally:
        if timer is not None:
            timer.cancel()
    if spec.limits.max_rows is not None and (exported.rows or 0) > spec.limits.max_rows:
        raise LimitExceededError(
            "limit_rows", f"the query returned more than its limit of {spec.limits.max_rows:,} rows"
        )
    sha256 = sink.finish()
    return Staged(
        temp=temp,
        rows=exported.rows,
        bytes=sink.object_bytes,
        sha256=sha256,
        columns=tuple(c.name for c in exported.columns),
        column_types=tuple(c.type_name for c in exported.columns),
        file_name=spec.file_name,
    )


def verify_published(job: Job, objects: ObjectStore) -> list[str]:
    """What is wrong with a succeeded job's object (missing, size, SHA-256); empty if right.

    The `write_csv_object` side effect runs this: the object was published before the job
    became `succeeded`, so a mismatch is an alarm, never a reason to run the job again.
    """
    if job.object_key is None:
        return ["the job records no object"]
    info = objects.stat(job.object_key)
    if info is None:
        return [f"no object at {job.object_key}"]
    problems = []
    if job.object_bytes is not None and info.size != job.object_bytes:
        problems.append(
            f"{job.object_key} has {info.size} bytes, the job records {job.object_bytes}"
        )
    digest = hashlib.sha256()
    with objects.read(job.object_key) as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    actual = digest.hexdigest()
    if actual != job.object_sha256:
        problems.append(
            f"{job.object_key} has SHA-256 {actual}, the job records {job.object_sha256}"
        )
    return problems
