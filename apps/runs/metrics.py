"""evalsite_cost_usd_total: what the priced LLM calls cost, by project and kind: `bot` and `judge`
(the calls of evaluation runs, from the runs' running totals) and `trace` (the model calls of OTLP
traces, from the traces' spend per day, apps.traces.models.TraceSpendDay). Computed when Prometheus
scrapes, as the other evalsite_* metrics are: the same whichever process answers, and surviving
restarts. The labels are bounded: projects are made by admins, kind is one of COST_KINDS. Unpriced
calls add nothing (they are not $0: the API counts them). A run deleted by retention takes its cost
with it, which Prometheus reads as a reset; a trace deleted by retention does not (its day's spend
is a record that retention leaves), so kind=trace only grows."""

import logging

from django.db import DatabaseError
from django.db.models import Sum
from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily

from apps.traces.selectors import trace_spend_by_project

from .models import EvaluationRun

logger = logging.getLogger(__name__)

COST_KINDS = ("bot", "judge", "trace")


def _family() -> CounterMetricFamily:
    return CounterMetricFamily(
        "evalsite_cost_usd",
        "USD the priced LLM calls cost, by project and kind (runs: bot under test, judge; trace: OTLP traces)",
        labels=["project", "kind"],
    )


class CostMetricsCollector:
    def collect(self):
        try:
            yield from self._collect()
        except DatabaseError:
            logger.warning("cost metrics skipped: database unavailable", exc_info=True)

    def describe(self):
        return [_family()]

    def _collect(self):
        family = _family()
        rows = (
            EvaluationRun.objects.order_by()
            .values("project__slug")
            .annotate(bot=Sum("bot_cost"), judge=Sum("judge_cost"))
            .order_by("project__slug")
        )
        for row in rows:
            for kind in ("bot", "judge"):
                if row[kind] is not None:
                    family.add_metric([row["project__slug"], kind], float(row[kind]))
        for project, amount in trace_spend_by_project():
            family.add_metric([project, "trace"], float(amount))
        yield family


_collector: CostMetricsCollector | None = None


def register_collector() -> None:
    global _collector
    if _collector is None:
        _collector = CostMetricsCollector()
        REGISTRY.register(_collector)
