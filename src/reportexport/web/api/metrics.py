"""Prometheus metrics, read from the job store at scrape time (refused access alone is this
process's own count: a refusal writes nothing to the store).

Status label values come from the fixture alone; a count the database has for a word the fixture
lacks (impossible while the guards stand) would not be exported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from frozen_lifecycle.graph import Graph
from reportexport.core.records import Heartbeat, MetricsSnapshot, ScheduleTotals


class StoreCollector(Collector):
    def __init__(
        self,
        snapshot: Callable[[], MetricsSnapshot],
        graph: Graph,
        heartbeats: Callable[[], list[Heartbeat]] = list,
        refusals: Callable[[], Mapping[tuple[str, str], int]] = dict,
    ) -> None:
        self.snapshot = snapshot
        self.graph = graph
        self.heartbeats = heartbeats
        self.refusals = refusals

    def collect(self) -> Iterator[Metric]:
        snapshot = self.snapshot()
        jobs = GaugeMetricFamily("reportexport_jobs", "Export jobs by status", labels=["status"])
        for state in self.graph.states:
            jobs.add_metric([state], snapshot.jobs_by_status.get(state, 0))
        yield jobs
        transitions = CounterMetricFamily(
            "reportexport_transitions", "Status changes by edge and actor",
            labels=["from_status", "to_status", "actor"],
        )  # fmt: skip
        for edge in self.graph.transitions:
            key = (edge.from_status, edge.to_status, edge.actor)
            transitions.add_metric(list(key), snapshot.transitions.get(key, 0))
        yield transitions
        yield CounterMetricFamily(
            "reportexport_exports", "Succeeded exports", value=snapshot.exports
        )
        yield CounterMetricFamily(
            "reportexport_export_rows", "Rows in succeeded exports", value=snapshot.export_rows
        )
        yield CounterMetricFamily(
            "reportexport_export_bytes", "Bytes of succeeded exports", value=snapshot.export_bytes
        )
        yield CounterMetricFamily(
            "reportexport_export_seconds", "Running time of succeeded exports",
            value=snapshot.export_seconds,
        )  # fmt: skip
        attempts = CounterMetricFamily(
            "reportexport_side_effect_attempts", "Side-effect attempts", labels=["effect"]
        )
        given_up = GaugeMetricFamily(
            "reportexport_side_effects_given_up", "Side effects out of attempts", labels=["effect"]
        )
        for name in self.graph.effect_names:
            attempts.add_metric([name], snapshot.effect_attempts.get(name, 0))
            given_up.add_metric([name], snapshot.effects_given_up.get(name, 0))
        yield attempts
        yield given_up
        yield GaugeMetricFamily(
            "reportexport_oldest_queued_job_age_seconds",
            "Seconds the oldest queued job has waited for a worker (0 when none is queued)",
            value=snapshot.oldest_queued_seconds,
        )
        yield from self._sharing(snapshot)
        yield from self._schedules(snapshot)
        yield from self._processes()
        refused = CounterMetricFamily(
            "reportexport_access_refusals",
            "Access refused by this process since it started, by what was asked (path: show, "
            "create, rerun, schedule, resume, download, link, sign_in) and what refused it "
            "(rule: group, bind, provider, revoked, suspended)",
            labels=["path", "rule"],
        )
        for (path, rule), count in sorted(self.refusals().items()):
            refused.add_metric([path, rule], count)
        yield refused

    def _sharing(self, snapshot: MetricsSnapshot) -> Iterator[Metric]:
        """How sources and turns are shared: each source's cap and slots taken, and whether one
        owner's backlog dwarfs the others'."""
        cap = GaugeMetricFamily(
            "reportexport_source_max_concurrent",
            "A source's max_concurrent, held by the database for every worker",
            labels=["source"],
        )
        running = GaugeMetricFamily(
            "reportexport_source_running", "Slots of a source taken by running exports",
            labels=["source"],
        )  # fmt: skip
        for source in snapshot.source_caps:
            cap.add_metric([source.source], source.max_concurrent)
            running.add_metric([source.source], source.running)
        yield cap
        yield running
        yield GaugeMetricFamily(
            "reportexport_owners_waiting", "People with queued exports",
            value=snapshot.owners_waiting,
        )  # fmt: skip
        yield GaugeMetricFamily(
            "reportexport_longest_owner_queue", "Queued exports of the person with the most",
            value=snapshot.longest_owner_queue,
        )  # fmt: skip

    def _schedules(self, snapshot: MetricsSnapshot) -> Iterator[Metric]:
        """Schedules and their firings as counts (a schedule has no status, so no label)."""
        totals = snapshot.schedules or ScheduleTotals()
        gauges = (
            ("reportexport_schedules_firing", "Schedules that will fire", totals.firing),
            ("reportexport_schedules_paused", "Schedules paused", totals.paused),
            ("reportexport_schedules_ended", "Schedules with no time left", totals.ended),
        )
        for name, text, value in gauges:
            yield GaugeMetricFamily(name, text, value=value)
        counters = (
            ("reportexport_schedule_firings", "Firings of schedules", totals.firings),
            ("reportexport_schedule_firing_jobs", "Firings that made a job", totals.firing_jobs),
            ("reportexport_schedule_firing_refusals",
             "Firings that made no job (a limit, parameters that no longer validate)",
             totals.firing_refusals),
            ("reportexport_schedule_missed_times",
             "Times skipped after downtime (each schedule fired once for its latest)",
             totals.missed),
        )  # fmt: skip
        for name, text, value in counters:
            yield CounterMetricFamily(name, text, value=value)

    def _processes(self) -> Iterator[Metric]:
        """Each live process's heartbeat: its age, its exports, whether its claims are paused
        (a process that stopped cleanly is left out)."""
        labels = ["process", "kind", "host"]
        age = GaugeMetricFamily(
            "reportexport_heartbeat_age_seconds",
            "Seconds since a process's last heartbeat",
            labels=labels,
        )
        active = GaugeMetricFamily(
            "reportexport_process_exports", "Exports a process is running", labels=labels
        )
        paused = GaugeMetricFamily(
            "reportexport_claims_paused",
            "1 while a worker's claims are paused, by reason (storage_unavailable, "
            "source_unavailable)",
            labels=[*labels, "reason"],
        )
        for beat in self.heartbeats():
            if beat.stopped_at is not None:  # it ended cleanly: no age to alarm on
                continue
            values = [beat.process, beat.kind, beat.host]
            age.add_metric(values, beat.age_seconds or 0.0)
            active.add_metric(values, len(beat.active_jobs))
            if beat.pause_reason is not None:
                paused.add_metric([*values, beat.pause_reason], 1)
        yield age
        yield active
        yield paused


def metrics_text(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
