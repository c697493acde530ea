"""schemathesis hooks for test_schemathesis.py (loaded through $SCHEMATHESIS_HOOKS).

The stateful phase is Hypothesis' rule-based state machine: each scenario's next steps are the
links of the answers before it, and Hypothesis requires that the same choices lead to the same
steps. Against a live service two things break that and end the phase early with "Inconsistent
data generation" (reported as a pass, with part of the API never reached):

- names that must be unique: a later scenario that replays an earlier one's choices sends the
  same `Idempotency-Key` (answered with the earlier job, or 409 for another body) and the same
  group name (409 "exists already"), so an answer that had links has none;
- the worker's timing: whether a job has ended when the next step asks for its file decides
  between a download's redirect (with its link) and 409.

So, in the stateful phase only, each `Idempotency-Key` and each new group's name is made unique
(the other phases keep the generated values, reuses and conflicts included), and a step that
creates a job waits until the job has ended. Every stateful request is also recorded
($REPORTEXPORT_STATEFUL_LOG: one JSON object per line with the operation and the status), so the
test can assert which operations the phase reached.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from typing import Any

import requests
import schemathesis
from schemathesis.generation.meta import TestPhase

GROUP_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
JOB_ENDS_WITHIN_SECONDS = 120
_calls = itertools.count(1)


def _stateful(case: Any) -> bool:
    meta = case.meta
    return meta is not None and meta.phase.name == TestPhase.STATEFUL


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    if not _stateful(case):
        return
    call = next(_calls)
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key":
            headers[name] = f"stateful-{call}"
    if case.operation.label == "POST /api/groups" and isinstance(case.body, dict):
        name = case.body.get("name")
        if isinstance(name, str) and GROUP_NAME.match(name) and name != "everyone":
            case.body["name"] = f"{name[:50]}-{call}"


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    if not _stateful(case):
        return
    with open(os.environ["REPORTEXPORT_STATEFUL_LOG"], "a") as log:
        log.write(json.dumps({"operation": case.operation.label, "status": response.status_code}))
        log.write("\n")
    if response.status_code in (200, 201) and case.method == "POST":
        body = _json(response)
        if isinstance(body, dict) and body.get("status") in ("queued", "running"):
            _wait_until_ended(response.request, body["id"])


def _json(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _wait_until_ended(request: requests.PreparedRequest, job_id: int) -> None:
    base = str(request.url).split("/api/", 1)[0]
    headers = {"Authorization": request.headers["Authorization"]}
    deadline = time.monotonic() + JOB_ENDS_WITHIN_SECONDS
    while time.monotonic() < deadline:
        shown = requests.get(f"{base}/api/exports/{job_id}", headers=headers, timeout=30)
        if shown.json()["job"]["status"] not in ("queued", "running"):
            return
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not end within {JOB_ENDS_WITHIN_SECONDS} s")
