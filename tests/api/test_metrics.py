"""What /metrics says for the alert rules of the docs (how-to/operators/monitor.md): the queue's
age among them."""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from frozen_lifecycle.graph import load_graph
from reportexport.core.records import Heartbeat, MetricsSnapshot
from reportexport.web.api.metrics import StoreCollector, metrics_text
from tests.helpers import FIXTURE_PATH


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


def test_a_process_that_stopped_cleanly_has_no_heartbeat_age_to_alarm_on() -> None:
    started = datetime(2026, 12, 1, tzinfo=UTC)
    beats = [
        Heartbeat(process="h-1-serve", host="h", pid=1, kind="serve", started_at=started,
                  age_seconds=86000.0, stopped_at=started),
        Heartbeat(process="h-2-worker", host="h", pid=2, kind="worker", started_at=started,
                  age_seconds=90.0),
    ]  # fmt: skip
    registry = CollectorRegistry()
    registry.register(StoreCollector(lambda: snapshot(0), load_graph(FIXTURE_PATH), lambda: beats))
    text = metrics_text(registry).decode()
    assert (
        'reportexport_heartbeat_age_seconds{host="h",kind="worker",process="h-2-worker"} 90.0'
        in (text)
    )
    assert "h-1-serve" not in text


def test_refused_access_is_a_counter_by_path_and_rule() -> None:
    registry = CollectorRegistry()
    counts = {("show", "group"): 3, ("sign_in", "suspended"): 1}
    registry.register(
        StoreCollector(lambda: snapshot(0), load_graph(FIXTURE_PATH), refusals=lambda: counts)
    )
    text = metrics_text(registry).decode()
    assert "# TYPE reportexport_access_refusals_total counter" in text
    assert 'reportexport_access_refusals_total{path="show",rule="group"} 3.0' in text
    assert 'reportexport_access_refusals_total{path="sign_in",rule="suspended"} 1.0' in text
