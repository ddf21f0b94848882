"""Prometheus label values that come from ingested data (agent names, operations, rule names), kept
to a bounded set.

Every distinct value is a series, and a scrape carries every series: three batches with 1,000 new
agent names took /metrics from 2,452 to 70,325 lines. So a label fed by ingested data keeps its
EVALSITE_METRICS_MAX_LABEL_VALUES most frequent values and the rest are counted under `other`.
Both steps run in SQL: one ranking query per label (GROUP BY, ORDER BY count, LIMIT N), then the
collector's own aggregate groups by a CASE that maps any value outside the kept ones to `other`, so
the database returns at most (N+1) rows per label combination whatever is stored.
The kept values' series are exact, `other` holds the sum of the rest (bucket by bucket for
histograms), so the total over all series is the true total.

A value spelled `other` is never kept: it is counted under the one `other` series, which is what
it would share a name with anyway.
"""

from django.conf import settings
from django.db.models import Case, CharField, Count, F, QuerySet, Value, When

OTHER = "other"
# Pairs of two ingested labels kept per kept value: 20 agents × 5 operations (100 pairs) keep every
# series at the default limit of 50.
PAIRS_PER_KEPT_VALUE = 4


def max_label_values() -> int:
    return settings.EVALSITE_METRICS_MAX_LABEL_VALUES


def most_frequent(queryset: QuerySet, field: str, *, weight=None, limit: int | None = None) -> list[str]:
    """The `limit` (default EVALSITE_METRICS_MAX_LABEL_VALUES) values of `field` with the most rows,
    or the largest `weight` aggregate, most frequent first, ties by value so every scrape agrees."""
    limit = max_label_values() if limit is None else limit
    if limit <= 0:
        return []
    rows = (
        queryset.order_by()
        .filter(**{f"{field}__isnull": False})
        .exclude(**{field: OTHER})
        .values(field)
        .annotate(_weight=weight if weight is not None else Count("*"))
        .order_by("-_weight", field)[:limit]
    )
    return [row[field] for row in rows]


def kept_pairs(rows: list[dict], first: str, second: str, *, weight: str, limit: int | None = None) -> set[tuple]:
    """For a family labelled by two ingested fields, from its rows already grouped by both folded
    labels: the (first, second) pairs, neither of them `other`, with the largest `weight`, at most
    `limit` (default PAIRS_PER_KEPT_VALUE × EVALSITE_METRICS_MAX_LABEL_VALUES). Folding each label
    on its own still allows (N+1)² series (50 agents each seen with the 50 kept operations); the
    caller counts a pair outside these under (first, other), or (other, other), so the family has
    at most the kept pairs, one (first, other) per kept first value, and (other, other)."""
    limit = PAIRS_PER_KEPT_VALUE * max_label_values() if limit is None else limit
    candidates = [row for row in rows if row[first] != OTHER and row[second] != OTHER]
    candidates.sort(key=lambda row: (-row[weight], row[first], row[second]))
    return {(row[first], row[second]) for row in candidates[: max(limit, 0)]}


def folded(field: str, kept: list[str]) -> Case:
    """`field` where its value is kept, else `other`: group by this to fold the rest in SQL."""
    if not kept:
        return Case(default=Value(OTHER), output_field=CharField())
    return Case(When(**{f"{field}__in": kept}, then=F(field)), default=Value(OTHER), output_field=CharField())
