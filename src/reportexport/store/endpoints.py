"""Where events go: an owner's webhook endpoints and the optional global one, and what was
delivered to each."""

from __future__ import annotations

from datetime import datetime

from reportexport.core.records import AuditEntry, WebhookEndpoint
from reportexport.store.audit import write_entry
from reportexport.store.driver import Driver
from reportexport.store.errors import StoreError, UniqueViolationError

GLOBAL_ENDPOINT_INDEX = "webhook_endpoints_one_global"


class EndpointNotFoundError(StoreError, LookupError):
    pass


class GlobalEndpointExistsError(StoreError):
    """An enabled global endpoint exists already; there is at most one."""


class WebhookEndpoints:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.codec = driver.codec

    def add_webhook_endpoint(
        self, *, owner: str | None, url: str, secret: str, audit: AuditEntry | None = None
    ) -> WebhookEndpoint:
        """A new endpoint; `audit` (naming it by its new id) is recorded with it."""
        params = {"owner": owner, "url": url, "secret": secret}
        try:
            with self.driver.write() as session:
                row = session.row("add_webhook_endpoint", params)
                if audit is not None and row is not None:
                    write_entry(session, audit, created_id=row["id"])
        except UniqueViolationError as exc:
            if exc.constraint == GLOBAL_ENDPOINT_INDEX:
                raise GlobalEndpointExistsError("a global webhook endpoint exists already") from exc
            raise
        return self._endpoint(row)

    def webhook_endpoints_page(
        self,
        *,
        owner: str | None = None,
        only_global: bool = False,
        before: int | None = None,
        limit: int = 50,
    ) -> tuple[list[WebhookEndpoint], int | None]:
        """Endpoints newest first, `limit` at a time, and the cursor of the next page."""
        params = {
            "owner": owner,
            "global": 1 if only_global else 0,
            "before": before,
            "limit": limit + 1,
        }
        with self.driver.read() as session:
            rows = session.rows("webhook_endpoints_page", params)
        found = [self._endpoint(r) for r in rows[:limit]]
        return found, (found[-1].id if len(rows) > limit and found else None)

    def list_webhook_endpoints(self, owner: str | None = None) -> list[WebhookEndpoint]:
        """An owner's endpoints, or every endpoint when `owner` is None."""
        with self.driver.read() as session:
            rows = session.rows("list_webhook_endpoints", {"owner": owner})
        return [self._endpoint(r) for r in rows]

    def get_webhook_endpoint(self, endpoint_id: int) -> WebhookEndpoint:
        with self.driver.read() as session:
            row = session.row("get_webhook_endpoint", {"id": endpoint_id})
        if row is None:
            raise EndpointNotFoundError(f"no webhook endpoint {endpoint_id}")
        return self._endpoint(row)

    def rotate_webhook_secret(
        self,
        endpoint_id: int,
        *,
        secret: str,
        until: datetime,
        audit: AuditEntry | None = None,
    ) -> WebhookEndpoint:
        """A new secret; the previous one keeps signing until `until`."""
        params = {"id": endpoint_id, "secret": secret, "until": self.codec.moment(until)}
        with self.driver.write() as session:
            row = session.row("rotate_webhook_secret", params)
            if row is not None and audit is not None:
                write_entry(session, audit)
        if row is None:
            raise EndpointNotFoundError(f"no enabled webhook endpoint {endpoint_id}")
        return self._endpoint(row)

    def disable_webhook_endpoint(
        self, endpoint_id: int, *, now: datetime, reason: str, audit: AuditEntry | None = None
    ) -> bool:
        """Stop sending to an endpoint; False when it was disabled already."""
        params = {"id": endpoint_id, "now": self.codec.moment(now), "reason": reason}
        with self.driver.write() as session:
            if session.row("disable_webhook_endpoint", params) is None:
                return False
            if audit is not None:
                write_entry(session, audit)
        return True

    def webhook_endpoints_for(self, owner: str) -> list[WebhookEndpoint]:
        """The enabled endpoints an owner's events go to: theirs and the global one."""
        with self.driver.read() as session:
            rows = session.rows("webhook_endpoints_for", {"owner": owner})
        return [self._endpoint(r) for r in rows]

    def _endpoint(self, row: object) -> WebhookEndpoint:
        if row is None:
            raise StoreError("the database returned no endpoint row")
        endpoint: WebhookEndpoint = self.codec.record(WebhookEndpoint, row)  # type: ignore[arg-type]
        return endpoint
