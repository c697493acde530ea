"""The small JSON document offered next to a job's CSV: how to read the bytes back exactly.

A reader needs more than the bytes: which columns are text (so that `007` stays `007`), which
are timestamps, what NULL looks like, which delimiter and dialect version wrote them. The
README's recipes ("Reading the file back") read this document and pass it to each reader.
"""

from __future__ import annotations

from typing import Any

from reportexport.core.csvformat import CsvOptions
from reportexport.core.records import Job


def schema_file_name(csv_file_name: str) -> str:
    """`orders-42.schema.json` for `orders-42.csv` or `orders-42.csv.gz`."""
    stem = csv_file_name.removesuffix(".gz").removesuffix(".csv")
    return f"{stem}.schema.json"


def file_schema(job: Job) -> dict[str, Any] | None:
    """The schema of a succeeded job's CSV, from what the job recorded when it was written;
    None for a job that has no file.

    Jobs finished before types were recorded (dialect 1) list their columns with type None.
    """
    if job.status != "succeeded" or job.object_key is None:
        return None
    csv = CsvOptions(**job.options.get("csv", {}))
    names = list(job.columns or ())
    types: list[str | None] = (
        list(job.column_types) if job.column_types is not None else [None] * len(names)
    )
    return {
        "file_name": job.file_name,
        "dialect_version": job.dialect_version,
        "encoding": "utf-8",
        "bom": csv.bom,
        "gzip": csv.gzip,
        "delimiter": csv.delimiter_char,
        "quote": '"',
        "line_ending": csv.newline,
        "header": True,
        "null": csv.null_marker,
        "time_zone": csv.time_zone,
        "spreadsheet_safe": csv.spreadsheet_safe,
        "rows": job.object_rows,
        "columns": [{"name": name, "type": kind} for name, kind in zip(names, types, strict=True)],
    }
