"""vayu_agent_* metrics, computed from the database when Prometheus scrapes.

Values come from the rows rather than from in-process counters, so they are the same whichever of
several web processes (or hosts) answers the scrape, and they survive restarts. The cost is a few
GROUP BY queries per scrape, on indexed columns.

agent_name and operation come from ingested data, so each keeps its most frequent values and counts
the rest under `other` (apps.core.metrics.labels): the exposition stays small whatever is ingested.
Every series also carries `project`, the slug of the trace's project: projects are made by
superusers, never by ingestion, so that label is bounded by the projects that exist.
"""

import logging

from django.db import DatabaseError
from django.db.models import Count, Q, Sum, Value
from django.db.models.functions import Coalesce
from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from apps.core.metrics.labels import OTHER, folded, kept_pairs, most_frequent

from .models import AgentTrace

logger = logging.getLogger(__name__)

_SESSION_LABELS = ["agent_name", "status", "project"]
_DURATION_LABELS = ["agent_name", "operation", "project"]
_ACTIVE_LABELS = ["agent_name", "project"]
DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class TraceMetricsCollector:
    def collect(self):
        try:
            yield from self._collect()
        except DatabaseError:
            # A scrape during a database outage shows these series as absent, not as zeros.
            logger.warning("trace metrics skipped: database unavailable", exc_info=True)

    def describe(self):
        # Declared without touching the database, so registration at start-up runs no query.
        return [
            CounterMetricFamily(
                "vayu_agent_sessions", "Agent sessions by agent name and status", labels=_SESSION_LABELS
            ),
            HistogramMetricFamily(
                "vayu_agent_execution_duration_seconds", "Agent execution duration", labels=_DURATION_LABELS
            ),
            GaugeMetricFamily("vayu_agent_active_sessions", "Agent sessions currently active", labels=_ACTIVE_LABELS),
        ]

    def _collect(self):
        traces = AgentTrace.objects.order_by()
        agents = most_frequent(traces, "agent_name")
        sessions = CounterMetricFamily(
            "vayu_agent_sessions", "Agent sessions by agent name and status", labels=_SESSION_LABELS
        )
        active = GaugeMetricFamily(
            "vayu_agent_active_sessions", "Agent sessions currently active", labels=_ACTIVE_LABELS
        )
        active_by_agent: dict[tuple[str, str], int] = {}
        rows = (
            traces.annotate(agent_label=folded("agent_name", agents))
            .values("agent_label", "status", "project__slug")
            .annotate(n=Count("id"))
            .order_by("project__slug", "agent_label", "status")
        )
        for row in rows:
            sessions.add_metric([row["agent_label"], row["status"], row["project__slug"]], row["n"])
            if row["status"] == AgentTrace.Status.ACTIVE:
                active_by_agent[(row["agent_label"], row["project__slug"])] = row["n"]
        for (agent_name, project), count in active_by_agent.items():
            active.add_metric([agent_name, project], count)

        # No operation and an empty one are both the label "", so one series.
        finished = traces.filter(duration_seconds__isnull=False).annotate(
            operation_value=Coalesce("operation", Value(""))
        )
        operations = most_frequent(finished, "operation_value")
        bucket_counts = {
            f"le_{i}": Count("id", filter=Q(duration_seconds__lte=b)) for i, b in enumerate(DURATION_BUCKETS)
        }
        rows = list(
            finished.annotate(
                agent_label=folded("agent_name", agents), operation_label=folded("operation_value", operations)
            )
            .values("agent_label", "operation_label", "project__slug")
            .annotate(total=Count("id"), seconds=Sum("duration_seconds"), **bucket_counts)
        )
        # Pairs beyond the kept ones merge bucket by bucket into their agent's (agent, other) series.
        pairs = kept_pairs(rows, "agent_label", "operation_label", weight="total")
        merged: dict[tuple[str, str, str], list] = {}
        for row in rows:
            key = (row["agent_label"], row["operation_label"], row["project__slug"])
            if key[:2] not in pairs:
                key = (key[0], OTHER, key[2])
            into = merged.setdefault(key, [0, 0.0] + [0] * len(DURATION_BUCKETS))
            into[0] += row["total"]
            into[1] += row["seconds"] or 0.0
            for i in range(len(DURATION_BUCKETS)):
                into[2 + i] += row[f"le_{i}"]
        duration = HistogramMetricFamily(
            "vayu_agent_execution_duration_seconds", "Agent execution duration", labels=_DURATION_LABELS
        )
        for (agent_name, operation, project), (total, seconds, *cumulative) in sorted(merged.items()):
            buckets = [(str(b), n) for b, n in zip(DURATION_BUCKETS, cumulative, strict=False)]
            buckets.append(("+Inf", total))
            duration.add_metric([agent_name, operation, project], buckets, seconds)
        yield sessions
        yield duration
        yield active


_collector: TraceMetricsCollector | None = None


def register_collector() -> None:
    global _collector
    if _collector is None:
        _collector = TraceMetricsCollector()
        REGISTRY.register(_collector)
