"""What /metrics says for the README's alert rules: the queue's age among them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from frozen_lifecycle.graph import load_graph
from reportexport.api.metrics import StoreCollector, metrics_text
from reportexport.records import MetricsSnapshot
from tests.conftest import FIXTURE_PATH


def snapshot(oldest_queued_seconds: float) -> MetricsSnapshot:
    return MetricsSnapshot(
        jobs_by_status={"queued": 2},
        transitions={},
        exports=0,
        export_rows=0,
        export_bytes=0,
        export_seconds=0.0,
        effect_attempts={},
        effects_given_up={},
        oldest_queued_seconds=oldest_queued_seconds,
    )


def test_metrics_give_the_age_of_the_oldest_queued_job() -> None:
    registry = CollectorRegistry()
    registry.register(StoreCollector(lambda: snapshot(42.5), load_graph(FIXTURE_PATH)))
    text = metrics_text(registry).decode()
    assert "reportexport_oldest_queued_job_age_seconds 42.5" in text
