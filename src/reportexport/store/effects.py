"""Side-effect claims and webhook endpoints: the same operations on both backends.

A backend supplies `_fetch(query_name, params)` (one transaction, rows back) and
`_timestamp(datetime)` (how it stores a moment); the queries have the same names in both
dialects' queries.sql.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from reportexport.records import (
    ClaimedEffect,
    SideEffect,
    WebhookDelivery,
    WebhookEndpoint,
)
from reportexport.store.errors import StoreError
from reportexport.store.rows import from_row


class EndpointNotFoundError(StoreError, LookupError):
    pass


class GlobalEndpointExistsError(StoreError):
    """An enabled global endpoint exists already; there is at most one."""


GLOBAL_ENDPOINT_INDEX = "webhook_endpoints_one_global"


class EffectsQueries:
    text_encoded: bool

    def _fetch(self, name: str, params: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
        raise NotImplementedError

    def _timestamp(self, moment: datetime) -> Any:
        raise NotImplementedError

    # -- side effects --------------------------------------------------------------------------

    def claim_side_effects(
        self, runner: str, *, limit: int, now: datetime, claim_until: datetime
    ) -> list[ClaimedEffect]:
        rows = self._fetch(
            "claim_side_effects",
            {"runner": runner, "limit": limit, "now": self._timestamp(now),
             "claim_until": self._timestamp(claim_until)},
        )  # fmt: skip
        effects = [from_row(SideEffect, row, text_encoded=self.text_encoded) for row in rows]
        return [ClaimedEffect(effect=e, runner=runner) for e in sorted(effects, key=lambda e: e.id)]

    def complete_side_effect(
        self, claimed: ClaimedEffect, *, now: datetime, note: str | None
    ) -> bool:
        params = {**self._key(claimed), "now": self._timestamp(now), "note": note}
        return bool(self._fetch("complete_side_effect", params))

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
            **self._key(claimed),
            "now": self._timestamp(now),
            "last_error": error,
            "next_attempt_at": self._timestamp(next_attempt_at),
            "give_up": give_up,
        }
        return bool(self._fetch("retry_side_effect", params))

    def redrive_side_effect(self, job_id: int, effect: str, *, now: datetime) -> bool:
        params = {"job_id": job_id, "effect": effect, "now": self._timestamp(now)}
        return bool(self._fetch("redrive_side_effect", params))

    def given_up_side_effects(self, limit: int = 100) -> list[SideEffect]:
        rows = self._fetch("given_up_side_effects", {"limit": limit})
        return [from_row(SideEffect, row, text_encoded=self.text_encoded) for row in rows]

    def _key(self, claimed: ClaimedEffect) -> dict[str, Any]:
        e = claimed.effect
        return {"job_id": e.job_id, "effect": e.effect, "token": claimed.token}

    # -- webhook endpoints ---------------------------------------------------------------------

    def add_webhook_endpoint(self, *, owner: str | None, url: str, secret: str) -> WebhookEndpoint:
        params = {"owner": owner, "url": url, "secret": secret}
        try:
            (row,) = self._fetch("add_webhook_endpoint", params)
        except Exception as exc:  # both drivers name the violated unique index
            if GLOBAL_ENDPOINT_INDEX in str(exc):
                raise GlobalEndpointExistsError("a global webhook endpoint exists already") from exc
            raise
        return self._endpoint(row)

    def list_webhook_endpoints(self, owner: str | None = None) -> list[WebhookEndpoint]:
        return [self._endpoint(r) for r in self._fetch("list_webhook_endpoints", {"owner": owner})]

    def get_webhook_endpoint(self, endpoint_id: int) -> WebhookEndpoint:
        rows = self._fetch("get_webhook_endpoint", {"id": endpoint_id})
        if not rows:
            raise EndpointNotFoundError(f"no webhook endpoint {endpoint_id}")
        return self._endpoint(rows[0])

    def rotate_webhook_secret(
        self, endpoint_id: int, *, secret: str, until: datetime
    ) -> WebhookEndpoint:
        params = {"id": endpoint_id, "secret": secret, "until": self._timestamp(until)}
        rows = self._fetch("rotate_webhook_secret", params)
        if not rows:
            raise EndpointNotFoundError(f"no enabled webhook endpoint {endpoint_id}")
        return self._endpoint(rows[0])

    def disable_webhook_endpoint(self, endpoint_id: int, *, now: datetime, reason: str) -> bool:
        params = {"id": endpoint_id, "now": self._timestamp(now), "reason": reason}
        return bool(self._fetch("disable_webhook_endpoint", params))

    def webhook_endpoints_for(self, owner: str) -> list[WebhookEndpoint]:
        return [self._endpoint(r) for r in self._fetch("webhook_endpoints_for", {"owner": owner})]

    def record_delivery(
        self,
        job_id: int,
        effect: str,
        endpoint_id: int,
        *,
        now: datetime,
        status: int | None,
        error: str | None,
        delivered: bool,
    ) -> None:
        self._fetch(
            "record_delivery",
            {"job_id": job_id, "effect": effect, "endpoint_id": endpoint_id,
             "now": self._timestamp(now), "last_status": status, "last_error": error,
             "delivered": delivered},
        )  # fmt: skip

    def webhook_deliveries(self, job_id: int) -> list[WebhookDelivery]:
        rows = self._fetch("webhook_deliveries", {"job_id": job_id})
        return [from_row(WebhookDelivery, r, text_encoded=self.text_encoded) for r in rows]

    def _endpoint(self, row: Mapping[str, Any]) -> WebhookEndpoint:
        endpoint: WebhookEndpoint = from_row(WebhookEndpoint, row, text_encoded=self.text_encoded)
        return endpoint
