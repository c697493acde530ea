"""Liveness, readiness, metrics and the lifecycle itself: no token needed."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

from reportexport.web.api.metrics import StoreCollector, metrics_text
from reportexport.web.api.models import Health, Readiness, problems
from reportexport.web.deps import Parts

router = APIRouter(tags=["health"], responses=problems(405, 503))


@router.get("/healthz", response_model=Health, operation_id="healthz")
def healthz() -> Health:
    return Health(healthy=True)


@router.get(
    "/readyz",
    response_model=Readiness,
    operation_id="readyz",
    responses={503: {"model": Readiness, "description": "Not ready: the job store is not current"}},
)
def readyz(parts: Parts, response: Response) -> Readiness:
    """Ready when the job store answers and is current (503 otherwise); what else of the
    process is failing and being retried is listed, without taking the API out of service."""
    ready = parts.ready()
    if not ready:
        response.status_code = 503
    return Readiness(healthy=ready, degraded=parts.troubles())


@router.get("/metrics", response_class=PlainTextResponse, operation_id="metrics")
def metrics(parts: Parts) -> PlainTextResponse:
    registry = CollectorRegistry()
    registry.register(
        StoreCollector(
            parts.metrics, parts.graph, parts.heartbeats, refusals=parts.exports.refusals.counts
        )
    )
    return PlainTextResponse(metrics_text(registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/api/graph", tags=["lifecycle"], operation_id="get_graph")
def graph(parts: Parts) -> dict[str, Any]:
    """The frozen job status graph this service was built from."""
    return dict(parts.graph.document)
