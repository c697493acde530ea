"""Liveness, readiness, metrics and the lifecycle itself: no token needed."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

from reportexport.api.deps import Parts
from reportexport.api.metrics import StoreCollector, metrics_text
from reportexport.api.models import Health

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, operation_id="healthz")
def healthz() -> Health:
    return Health(healthy=True)


@router.get(
    "/readyz",
    response_model=Health,
    operation_id="readyz",
    responses={503: {"model": Health, "description": "Not ready: the job store is not current"}},
)
def readyz(parts: Parts, response: Response) -> Health:
    ready = parts.ready()
    if not ready:
        response.status_code = 503
    return Health(healthy=ready)


@router.get("/metrics", response_class=PlainTextResponse, operation_id="metrics")
def metrics(parts: Parts) -> PlainTextResponse:
    registry = CollectorRegistry()
    registry.register(StoreCollector(parts.metrics, parts.graph))
    return PlainTextResponse(metrics_text(registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/api/graph", tags=["lifecycle"], operation_id="get_graph")
def graph(parts: Parts) -> dict[str, Any]:
    """The frozen job status graph this service was built from."""
    return dict(parts.graph.document)
