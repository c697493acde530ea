"""What effects runners do to side-effect rows; every write is fenced by the claim token."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reportexport.lifecycle import Effect
from reportexport.records import ClaimedEffect, SideEffect
from reportexport.store.driver import Driver


class EffectStore:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.codec = driver.codec

    def claim_side_effects(
        self, runner: str, *, limit: int, now: datetime, claim_until: datetime
    ) -> list[ClaimedEffect]:
        """Up to `limit` due rows, now claimed by `runner` under new claim tokens."""
        moment = self.codec.moment
        params = {
            "runner": runner,
            "limit": limit,
            "now": moment(now),
            "claim_until": moment(claim_until),
        }
        with self.driver.write() as session:
            rows = session.rows("claim_side_effects", params)
        effects = [self.codec.record(SideEffect, row) for row in rows]
        return [ClaimedEffect(effect=e, runner=runner) for e in sorted(effects, key=lambda e: e.id)]

    def complete_side_effect(
        self, claimed: ClaimedEffect, *, now: datetime, note: str | None
    ) -> bool:
        params = {**_key(claimed), "now": self.codec.moment(now), "note": note}
        return self._changed("complete_side_effect", params)

    def retry_side_effect(
        self,
        claimed: ClaimedEffect,
        *,
        now: datetime,
        error: str,
        next_attempt_at: datetime,
        give_up: bool,
    ) -> bool:
        params = {
            **_key(claimed),
            "now": self.codec.moment(now),
            "last_error": error,
            "next_attempt_at": self.codec.moment(next_attempt_at),
            "give_up": give_up,
        }
        return self._changed("retry_side_effect", params)

    def redrive_side_effect(self, job_id: int, effect: Effect, *, now: datetime) -> bool:
        params = {"job_id": job_id, "effect": effect, "now": self.codec.moment(now)}
        return self._changed("redrive_side_effect", params)

    def given_up_side_effects(self, limit: int = 100) -> list[SideEffect]:
        with self.driver.read() as session:
            rows = session.rows("given_up_side_effects", {"limit": limit})
        return [self.codec.record(SideEffect, row) for row in rows]

    def _changed(self, query: str, params: dict[str, Any]) -> bool:
        with self.driver.write() as session:
            return session.row(query, params) is not None


def _key(claimed: ClaimedEffect) -> dict[str, Any]:
    e = claimed.effect
    return {"job_id": e.job_id, "effect": e.effect, "token": claimed.token}
