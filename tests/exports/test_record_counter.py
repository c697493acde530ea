"""Rows counted while the CSV streams: line ends outside quotes, whatever the chunking."""

from __future__ import annotations

import csv
import io
import itertools

from hypothesis import given
from hypothesis import strategies as st

from reportexport.pipeline.export import RecordCounter

cells = st.one_of(st.text(max_size=8), st.sampled_from(['a"b', "x\ny", "\r\n", '""', '"\n"']))
tables = st.lists(st.lists(cells, min_size=1, max_size=4), min_size=0, max_size=20)


def csv_bytes(rows: list[list[str]], terminator: str) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=terminator)
    writer.writerow(["header"])
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


@given(rows=tables, terminator=st.sampled_from(["\n", "\r\n"]), cuts=st.lists(st.integers(0, 400)))
def test_rows_are_counted_exactly_however_the_bytes_are_cut(
    rows: list[list[str]], terminator: str, cuts: list[int]
) -> None:
    data = csv_bytes(rows, terminator)
    counter = RecordCounter()
    edges = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    for start, end in itertools.pairwise(edges):
        counter.feed(data[start:end])
    assert counter.rows == len(rows)


def test_nothing_written_is_no_rows() -> None:
    assert RecordCounter().rows == 0
