"""Logs are JSON lines, and a line about a job carries its job_id."""

from __future__ import annotations

import json
import logging

from reportexport.core.logs import JsonFormatter


def test_a_log_line_is_one_json_object_with_the_job_id() -> None:
    record = logging.LogRecord("reportexport.runners.worker", logging.WARNING, __file__, 1,
                               "job %s: lease expired", (42,), None)  # fmt: skip
    record.job_id = 42
    entry = json.loads(JsonFormatter().format(record))
    assert entry["message"] == "job 42: lease expired"
    assert (entry["level"], entry["logger"], entry["job_id"]) == (
        "warning",
        "reportexport.runners.worker",
        42,
    )
    assert entry["at"].endswith("+00:00")


def test_a_line_without_a_job_has_no_job_id() -> None:
    record = logging.LogRecord("reportexport", logging.INFO, __file__, 1, "started", (), None)
    assert "job_id" not in json.loads(JsonFormatter().format(record))
