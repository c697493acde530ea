"""The job lifecycle's names, typed: generated from contracts/job-status-graph.json by
`reportexport generate`. Do not edit; the gate fails when this file drifts from the fixture.

`Status`, `Actor` and `Effect` are the only words a status, an actor or a side effect can be:
mypy refuses any other literal wherever these types flow. `From<State>By<Actor>` holds the
states that actor may move a job to from that state; `is_status`, `is_actor` and `is_effect`
narrow a checked input to its type.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal, TypeGuard

FINGERPRINT: Final = "5c4b2bc68297f75bba2834035bcc7921c6531eef8bfe9908ffed4693540e00c0"

Status = Literal[
    "queued",
    "running",
    "succeeded",
    "failed",
    "canceled",
]
TerminalStatus = Literal[
    "succeeded",
    "failed",
    "canceled",
]
Actor = Literal[
    "worker",
    "user",
]
Effect = Literal[
    "write_csv_object",
    "emit_done_webhook",
    "emit_failed_webhook",
    "delete_temp_object",
]

# The targets of each actor's edges from each state.
FromQueuedByWorker = Literal["running"]
FromQueuedByUser = Literal["canceled"]
FromRunningByWorker = Literal[
    "succeeded",
    "failed",
]
FromRunningByUser = Literal["canceled"]

STATES: Final[tuple[Status, ...]] = (
    "queued",
    "running",
    "succeeded",
    "failed",
    "canceled",
)
INITIAL: Final[Status] = "queued"
TERMINAL: Final[tuple[TerminalStatus, ...]] = (
    "succeeded",
    "failed",
    "canceled",
)
ACTORS: Final[tuple[Actor, ...]] = (
    "worker",
    "user",
)
EFFECTS: Final[tuple[Effect, ...]] = (
    "write_csv_object",
    "emit_done_webhook",
    "emit_failed_webhook",
    "delete_temp_object",
)
TRANSITIONS: Final[tuple[tuple[Status, Status, Actor], ...]] = (
    ("queued", "running", "worker"),
    ("queued", "canceled", "user"),
    ("running", "succeeded", "worker"),
    ("running", "failed", "worker"),
    ("running", "canceled", "user"),
)
SIDE_EFFECTS: Final[Mapping[TerminalStatus, tuple[Effect, ...]]] = MappingProxyType(
    {
        "succeeded": ("write_csv_object", "emit_done_webhook"),
        "failed": ("emit_failed_webhook",),
        "canceled": ("delete_temp_object",),
    }
)


def is_status(value: object) -> TypeGuard[Status]:
    """Whether `value` is a state of the fixture: a checked input narrows to `Status`."""
    return value in STATES


def is_actor(value: object) -> TypeGuard[Actor]:
    """Whether `value` is an actor of the fixture."""
    return value in ACTORS


def is_effect(value: object) -> TypeGuard[Effect]:
    """Whether `value` is a side effect of the fixture."""
    return value in EFFECTS
