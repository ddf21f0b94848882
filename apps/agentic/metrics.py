"""vayu_agentic_* metrics, computed from the database when Prometheus scrapes (as for traces):
the same whichever process answers, and surviving restarts. Agent and rule names keep their most
frequent values and count the rest under `other` (apps.core.metrics.labels)."""

import logging

from django.db import DatabaseError
from django.db.models import Count, F, FilteredRelation, Q, Sum
from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

from apps.core.metrics.labels import folded, most_frequent

from .judges import AGENTIC_METRICS
from .models import AgentEvaluation, EvaluationRollup, OnlineEvaluationCount

logger = logging.getLogger(__name__)

SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0)
SCORED = (*AGENTIC_METRICS, "overall")
UNRATED = "unrated"


def _histogram_name(metric: str) -> str:
    return f"vayu_agentic_{metric}_score"


def _online_family() -> CounterMetricFamily:
    # Exposed as evalsite_online_evaluations_total; outcome is one of rules.services.ONLINE_OUTCOMES.
    return CounterMetricFamily(
        "evalsite_online_evaluations",
        "Evaluations asked for by online evaluation rules, by rule and outcome (evaluated, reused, error, skipped)",
        labels=["rule", "outcome", "project"],
    )


class AgenticMetricsCollector:
    def collect(self):
        try:
            yield from self._collect()
        except DatabaseError:
            logger.warning("agentic metrics skipped: database unavailable", exc_info=True)

    def describe(self):
        return [
            CounterMetricFamily(
                "vayu_agentic_evaluations",
                "Agentic evaluations by agent and score category",
                labels=["agent_name", "score_category", "project"],
            ),
            *[
                HistogramMetricFamily(
                    _histogram_name(m), f"Agentic {m} scores (0..1)", labels=["agent_name", "project"]
                )
                for m in SCORED
            ],
            _online_family(),
        ]

    def _collect(self):
        rollup = EvaluationRollup.objects.order_by()
        # Ranked by evaluations, read from the running totals rather than counted over every row.
        agents = most_frequent(rollup, "agent_name", weight=Sum("count"))
        evaluations = CounterMetricFamily(
            "vayu_agentic_evaluations",
            "Agentic evaluations by agent and score category",
            labels=["agent_name", "score_category", "project"],
        )
        for row in (
            rollup.annotate(agent_label=folded("agent_name", agents))
            .values("agent_label", "rating", "project__slug")
            .annotate(n=Sum("count"))
            .order_by("project__slug", "agent_label", "rating")
        ):
            evaluations.add_metric([row["agent_label"], row["rating"] or UNRATED, row["project__slug"]], row["n"])
        yield evaluations

        for metric in SCORED:
            histogram = HistogramMetricFamily(
                _histogram_name(metric), f"Agentic {metric} scores (0..1)", labels=["agent_name", "project"]
            )
            evaluations = AgentEvaluation.objects.order_by()
            if metric == "overall":
                evaluations = evaluations.annotate(score=F("overall_score"))
            else:
                # The metric's Score row, joined to its evaluation for the agent label.
                evaluations = evaluations.annotate(
                    metric_row=FilteredRelation("metric_scores", condition=Q(metric_scores__key=metric)),
                ).annotate(score=F("metric_row__value"))
            aggregates = {f"le_{i}": Count("id", filter=Q(score__lte=b)) for i, b in enumerate(SCORE_BUCKETS)}
            rows = (
                evaluations.filter(score__isnull=False)
                .annotate(agent_label=folded("agent_name", agents))
                .values("agent_label", "project__slug")
                .annotate(total=Count("id"), score_sum=Sum("score"), **aggregates)
                .order_by("project__slug", "agent_label")
            )
            for row in rows:
                buckets = [(str(b), row[f"le_{i}"]) for i, b in enumerate(SCORE_BUCKETS)]
                buckets.append(("+Inf", row["total"]))
                histogram.add_metric([row["agent_label"], row["project__slug"]], buckets, row["score_sum"] or 0.0)
            yield histogram

        online = _online_family()
        counts = OnlineEvaluationCount.objects.order_by()
        rules = most_frequent(counts, "rule_name", weight=Sum("count"))
        for row in (
            counts.annotate(rule_label=folded("rule_name", rules))
            .values("rule_label", "outcome", "project__slug")
            .annotate(n=Sum("count"))
            .order_by("project__slug", "rule_label", "outcome")
        ):
            online.add_metric([row["rule_label"], row["outcome"], row["project__slug"]], row["n"])
        yield online


_collector: AgenticMetricsCollector | None = None


def register_collector() -> None:
    global _collector
    if _collector is None:
        _collector = AgenticMetricsCollector()
        REGISTRY.register(_collector)
