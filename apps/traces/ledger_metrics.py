"""evalsite_ingestion_total, computed from the ingestion ledger when Prometheus scrapes.

From the rows, like apps.traces.metrics: every web process (or host) answers a scrape with the
same values, and they survive restarts; compaction keeps the sums, so the counters never go back.
The `reason` label takes its values from apps.traces.ledger.REASONS, plus `other` for anything
else a door wrote: the series stay bounded whatever is ingested. Every series also carries
`project`, the slug of the entries' project, as the vayu_* metrics do: projects are made by
superusers, never by ingestion, so that label is bounded by the projects that exist.
"""

import logging

from django.db import DatabaseError
from django.db.models import BigIntegerField, Q, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily

from .ledger import OTHER_REASON, REASONS
from .models import IngestionEntry

logger = logging.getLogger(__name__)

NAME = "evalsite_ingestion"
HELP = (
    "Items that came in through each door (rest: lifecycle records, batch: traces, otlp: spans) by outcome "
    "(received, stored, duplicate, rejected, dropped; online_evaluation: sampled, evaluated, skipped, errored) "
    "and, for rejected and dropped, reason"
)
LABELS = ["source", "outcome", "reason", "project"]
_PLAIN = ("received", "stored", "duplicate")
_ONLINE = ("sampled", "evaluated", "skipped", "errored")
_REFUSED = ("rejected", "dropped")


def _family() -> CounterMetricFamily:
    return CounterMetricFamily(NAME, HELP, labels=LABELS)


def _reason_sums() -> dict:
    # r{i}/d{i}: the JSON count of one known reason, summed in SQL (KT, Cast: SQLite and PostgreSQL alike).
    return {
        f"{outcome[0]}{i}": Sum(Cast(KT(f"reasons__{outcome}__{reason}"), BigIntegerField()))
        for outcome in _REFUSED
        for i, reason in enumerate(REASONS)
    }


class IngestionMetricsCollector:
    def collect(self):
        try:
            yield self._collect()
        except DatabaseError:
            logger.warning("ingestion metrics skipped: database unavailable", exc_info=True)

    def describe(self):
        return [_family()]

    def _collect(self) -> CounterMetricFamily:
        family = _family()
        entries = IngestionEntry.objects.order_by()
        totals = {
            (row["project__slug"], row["source"]): row
            for row in entries.values("project__slug", "source").annotate(
                **{c: Sum(c) for c in (*_PLAIN, *_REFUSED, *_ONLINE)}
            )
        }
        # Only the entries with something refused carry reasons: a few among many.
        reasons = {
            (row["project__slug"], row["source"]): row
            for row in entries.filter(Q(rejected__gt=0) | Q(dropped__gt=0))
            .values("project__slug", "source")
            .annotate(**_reason_sums())
        }
        order = {source: i for i, source in enumerate(IngestionEntry.Source.values)}
        for project, source in sorted(totals, key=lambda key: (key[0], order.get(key[1], len(order)))):
            row = totals[(project, source)]
            if source == IngestionEntry.Source.ONLINE_EVALUATION:
                for outcome in _ONLINE:
                    family.add_metric([source, outcome, "", project], row[outcome] or 0)
                continue
            for outcome in _PLAIN:
                family.add_metric([source, outcome, "", project], row[outcome] or 0)
            by_reason = reasons.get((project, source), {})
            for outcome in _REFUSED:
                total, named = row[outcome] or 0, 0
                for i, reason in enumerate(REASONS):
                    n = by_reason.get(f"{outcome[0]}{i}") or 0
                    if n:
                        family.add_metric([source, outcome, reason, project], n)
                        named += n
                if total > named:
                    family.add_metric([source, outcome, OTHER_REASON, project], total - named)
        return family


_collector: IngestionMetricsCollector | None = None


def register_collector() -> None:
    global _collector
    if _collector is None:
        _collector = IngestionMetricsCollector()
        REGISTRY.register(_collector)
