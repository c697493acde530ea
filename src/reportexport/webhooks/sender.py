"""Send one webhook: connect to the address the SSRF guard checked, never follow redirects."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from reportexport.webhooks.ssrf import Destination


@dataclass(frozen=True, kw_only=True)
class Response:
    """What came back: success is a 2xx; 410 means the endpoint is gone for good."""

    status: int | None
    retry_after: float | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def gone(self) -> bool:
        return self.status == 410


def send(
    client: httpx.Client, destination: Destination, headers: dict[str, str], body: str
) -> Response:
    host = f"[{destination.address}]" if ":" in destination.address else destination.address
    url = f"{destination.scheme}://{host}:{destination.port}{destination.target}"
    default_port = 443 if destination.scheme == "https" else 80
    host_header = destination.host + (
        "" if destination.port == default_port else f":{destination.port}"
    )
    extensions = {"sni_hostname": destination.host} if destination.scheme == "https" else {}
    try:
        response = client.post(
            url,
            content=body.encode(),
            headers={**headers, "host": host_header, "user-agent": "reportexport-webhooks"},
            extensions=extensions,
        )
    except httpx.HTTPError as exc:
        return Response(status=None, error=f"{type(exc).__name__}: {exc}"[:500])
    error = None if 200 <= response.status_code < 300 else f"HTTP {response.status_code}"
    return Response(
        status=response.status_code,
        retry_after=parse_retry_after(response.headers.get("retry-after")),
        error=error,
    )


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - (now or datetime.now(UTC))).total_seconds())
