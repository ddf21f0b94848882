"""vayu_agentic_* metrics, computed from the database when Prometheus scrapes.

Like apps/traces/metrics.py: values come from the rows, so every web process answers the same and
nothing is lost on restart. One GROUP BY per scrape with a filtered COUNT per histogram bucket.
"""

import logging

from django.db import DatabaseError
from django.db.models import Count, Q, Sum
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

from apps.core.judges.base import METRICS

from .models import AgentEvaluation

logger = logging.getLogger(__name__)

SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0)
SCORED = (*METRICS, "overall_score")


def _histogram_name(field: str) -> str:
    return f"vayu_agentic_{field.removesuffix('_score')}_score"


class AgenticMetricsCollector:
    def collect(self):
        try:
            yield from self._collect()
        except DatabaseError:
            logger.warning("agentic metrics skipped: database unavailable", exc_info=True)

    def describe(self):
        return [
            CounterMetricFamily("vayu_agentic_evaluations", "Agentic evaluations by agent and score category",
                                labels=["agent_name", "score_category"]),
            *[HistogramMetricFamily(_histogram_name(f), f"Distribution of {f} scores", labels=["agent_name"])
              for f in SCORED],
        ]

    def _collect(self):
        evaluations = CounterMetricFamily("vayu_agentic_evaluations", "Agentic evaluations by agent and score category",
                                          labels=["agent_name", "score_category"])
        for row in AgentEvaluation.objects.order_by().values("agent_name", "rating").annotate(n=Count("id")):
            evaluations.add_metric([row["agent_name"], row["rating"] or "unscored"], row["n"])
        yield evaluations

        aggregates = {}
        for field in SCORED:
            aggregates[f"{field}__n"] = Count("id", filter=Q(**{f"{field}__isnull": False}))
            aggregates[f"{field}__sum"] = Sum(field)
            for i, bound in enumerate(SCORE_BUCKETS):
                aggregates[f"{field}__le{i}"] = Count("id", filter=Q(**{f"{field}__lte": bound}))
        rows = list(AgentEvaluation.objects.order_by().values("agent_name").annotate(**aggregates))
        for field in SCORED:
            histogram = HistogramMetricFamily(_histogram_name(field), f"Distribution of {field} scores",
                                              labels=["agent_name"])
            for row in rows:
                buckets = [(str(b), row[f"{field}__le{i}"]) for i, b in enumerate(SCORE_BUCKETS)]
                buckets.append(("+Inf", row[f"{field}__n"]))
                histogram.add_metric([row["agent_name"]], buckets, row[f"{field}__sum"] or 0.0)
            yield histogram


_collector: AgenticMetricsCollector | None = None


def register_collector() -> None:
    global _collector
    if _collector is None:
        from prometheus_client import REGISTRY

        _collector = AgenticMetricsCollector()
        REGISTRY.register(_collector)
