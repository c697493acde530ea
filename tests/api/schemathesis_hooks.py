"""schemathesis hooks for test_schemathesis.py (loaded through $SCHEMATHESIS_HOOKS).

The stateful phase is Hypothesis' rule-based state machine: each scenario's next steps are the
links of the answers before it, and Hypothesis requires that the same choices lead to the same
steps. Against a live service three things break that and end the phase early with
"Inconsistent data generation" (reported as a pass, with part of the API never reached):

- names that must be unique: a later scenario that replays an earlier one's choices sends the
  same `Idempotency-Key` (answered with the earlier job, or 409 for another body) and the same
  group name (409 "exists already"), so an answer that had links has none;
- the worker's timing: whether a job has ended when the next step asks for its file decides
  between a download's redirect (with its link) and 409;
- the side effects' timing: whether a job's announcement has been given up when the next step
  re-drives it decides between 200 and 409.

So, in the stateful phase only, each `Idempotency-Key` and each new group's name is made unique
(the other phases keep the generated values, reuses and conflicts included), and a step that
creates a job waits until the job has ended. When $REPORTEXPORT_STATEFUL_DESTINATION is set (the
operator's run), every webhook endpoint and chat channel a valid body registers points there, at
a receiver that refuses every delivery, the service tries each destination once, and a re-drive
waits until the announcement it re-drives has settled (each side effect of its job completed or
given up), so it always meets one given up, never one still being tried.

The hooks read the service's URL and the bearer token from $REPORTEXPORT_STATEFUL_SERVICE and
$REPORTEXPORT_STATEFUL_TOKEN. Every stateful request is recorded ($REPORTEXPORT_STATEFUL_LOG: one
JSON object per line with the operation and the status), so the test can assert which operations
the phase reached.
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
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation import GenerationMode
from schemathesis.generation.meta import TestPhase

GROUP_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
SETTLES_WITHIN_SECONDS = 120
DESTINATIONS = {"POST /api/webhooks": "webhook", "POST /api/chat-channels": "chat"}
JOB_RUNS = ("queued", "running")
_calls = itertools.count(1)
# Which job each destination of an announcement belongs to, from the answers that showed one:
# the re-drive of a destination comes from one of them.
_job_of_delivery: dict[int, int] = {}


def _stateful(case: Any) -> bool:
    meta = case.meta
    return meta is not None and meta.phase.name == TestPhase.STATEFUL


def _valid_body(case: Any) -> bool:
    body = case.meta.components.get(ParameterLocation.BODY)
    return body is not None and body.mode == GenerationMode.POSITIVE and isinstance(case.body, dict)


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    if not _stateful(case):
        return
    call = next(_calls)
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key":
            headers[name] = f"stateful-{call}"
    label = case.operation.label
    if label == "POST /api/groups" and isinstance(case.body, dict):
        name = case.body.get("name")
        if isinstance(name, str) and GROUP_NAME.match(name) and name != "everyone":
            case.body["name"] = f"{name[:50]}-{call}"
    destination = os.environ.get("REPORTEXPORT_STATEFUL_DESTINATION")
    if not destination:
        return
    if label in DESTINATIONS and _valid_body(case):
        case.body["url"] = f"{destination}/{DESTINATIONS[label]}-{call}"
    # A re-drive meets its announcement settled, never still being tried.
    parameters = case.path_parameters or {}
    if label == "POST /api/side-effects/{job_id}/{effect}/redrive":
        _wait(parameters.get("job_id"), effects=True)
    elif label == "POST /api/deliveries/{delivery_id}/redrive":
        delivery = parameters.get("delivery_id")
        _wait(_job_of_delivery.get(delivery) if isinstance(delivery, int) else None, effects=True)


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    if not _stateful(case):
        return
    with open(os.environ["REPORTEXPORT_STATEFUL_LOG"], "a") as log:
        log.write(json.dumps({"operation": case.operation.label, "status": response.status_code}))
        log.write("\n")
    if not 200 <= response.status_code < 300 or not response.content:
        return
    body = _json(response)
    _remember_deliveries(body)
    if case.method == "POST" and isinstance(body, dict) and body.get("status") in JOB_RUNS:
        _wait(body["id"], effects=False)


def _remember_deliveries(body: Any) -> None:
    if isinstance(body, dict):
        if {"id", "job_id", "effect"} <= body.keys():
            _job_of_delivery[body["id"]] = body["job_id"]
        for value in body.values():
            _remember_deliveries(value)
    elif isinstance(body, list):
        for value in body:
            _remember_deliveries(value)


def _json(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _settled(shown: dict[str, Any], effects: bool) -> bool:
    if shown["job"]["status"] in JOB_RUNS:
        return False
    if not effects:
        return True
    return all(e["completed_at"] or e["given_up_at"] for e in shown["side_effects"]) and all(
        d["next_attempt_at"] is None for d in shown["deliveries"]
    )


def _wait(job_id: Any, *, effects: bool) -> None:
    """Until job `job_id` has ended and, with `effects`, its side effects have settled; at once
    when there is no such job."""
    if not isinstance(job_id, int):
        return
    base = os.environ["REPORTEXPORT_STATEFUL_SERVICE"]
    headers = {"Authorization": f"Bearer {os.environ['REPORTEXPORT_STATEFUL_TOKEN']}"}
    deadline = time.monotonic() + SETTLES_WITHIN_SECONDS
    while time.monotonic() < deadline:
        shown = requests.get(f"{base}/api/exports/{job_id}", headers=headers, timeout=30)
        if shown.status_code != 200 or _settled(shown.json(), effects):
            return
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not settle within {SETTLES_WITHIN_SECONDS} s")
