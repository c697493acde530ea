"""The job lifecycle: the case study's pure lookup against the generated typed names."""

from __future__ import annotations

from shop.lifecycle import STATES, TERMINAL, TRANSITIONS, Actor, Status

__all__ = ["STATES", "apply_transition", "can_transition"]

_ACTOR_OF = {(from_status, to_status): actor for from_status, to_status, actor in TRANSITIONS}


def can_transition(from_status: str, to_status: str) -> bool:
    return (from_status, to_status) in _ACTOR_OF


def apply_transition(
    job: dict[str, str], to_status: Status, actor: Actor = "worker"
) -> dict[str, str]:
    current = job["status"]
    if current in TERMINAL:
        raise ValueError(f"terminal:{current}")
    declared = _ACTOR_OF.get((current, to_status))
    if declared is None:
        raise ValueError(f"illegal:{current}->{to_status}")
    if declared != actor:
        raise ValueError(f"actor:{actor}")
    return {**job, "status": to_status}
