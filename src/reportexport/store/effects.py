"""What effects runners do to side-effect rows; every write is fenced by the claim token."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reportexport.core.lifecycle import Effect
from reportexport.core.records import (
    AuditEntry,
    ClaimedEffect,
    EffectFilter,
    EffectPage,
    ListedEffect,
    SideEffect,
)
from reportexport.store.audit import write_entry
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

    def redrive_side_effect(
        self, job_id: int, effect: Effect, *, now: datetime, audit: AuditEntry | None = None
    ) -> bool:
        """A given-up row due again, with its given-up destinations (False when it was not
        given up); `audit` is recorded in the same transaction when it was."""
        params = {"job_id": job_id, "effect": effect, "now": self.codec.moment(now)}
        with self.driver.write() as session:
            if session.row("redrive_side_effect", params) is None:
                return False
            session.rows("redrive_effect_deliveries", params)
            if audit is not None:
                write_entry(session, audit)
        return True

    def given_up_side_effects(self, limit: int = 100) -> list[SideEffect]:
        with self.driver.read() as session:
            rows = session.rows("given_up_side_effects", {"limit": limit})
        return [self.codec.record(SideEffect, row) for row in rows]

    def side_effects(self, where: EffectFilter) -> EffectPage:
        """Given-up rows, or rows neither completed nor given up, `where.limit` at a time."""
        params = {
            "given_up": 1 if where.given_up else 0,
            "owner": where.owner,
            "job_id": where.job_id,
            "by_queries": 0 if where.saved_queries is None else 1,
            "saved_queries": self.codec.names(list(where.saved_queries or ())),
            "cursor": where.cursor,
            "oldest": 1 if where.oldest_first else 0,
            "limit": where.limit + 1,
        }
        with self.driver.read() as session:
            rows = session.rows("list_side_effects", params)
        listed = tuple(self._listed(row) for row in rows[: where.limit])
        more = len(rows) > where.limit
        return EffectPage(
            effects=listed, next_cursor=listed[-1].effect.id if more and listed else None
        )

    def side_effect_counts(self) -> tuple[int, int]:
        """(given up, neither completed nor given up)."""
        with self.driver.read() as session:
            row = session.row("side_effect_counts")
        return (int(row["given_up"] or 0), int(row["waiting"] or 0)) if row else (0, 0)

    def _listed(self, row: Any) -> ListedEffect:
        options = self.codec.json_from(row["job_options"]) or {}
        saved_query = str(row["job_saved_query"])
        return ListedEffect(
            effect=self.codec.record(SideEffect, row),
            owner=str(row["job_owner"]),
            saved_query=saved_query,
            title=str(options.get("title") or saved_query),
        )

    def _changed(self, query: str, params: dict[str, Any]) -> bool:
        with self.driver.write() as session:
            return session.row(query, params) is not None


def _key(claimed: ClaimedEffect) -> dict[str, Any]:
    e = claimed.effect
    return {"job_id": e.job_id, "effect": e.effect, "token": claimed.token}
