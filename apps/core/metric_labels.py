"""Prometheus label values that come from ingested data (agent names, operations, rule names), kept
to a bounded set.

Every distinct value is a series, and a scrape carries every series: three batches with 1,000 new
agent names took /metrics from 2,452 to 70,325 lines. So a label fed by ingested data keeps its
EVALSITE_METRICS_MAX_LABEL_VALUES most frequent values and the rest are counted under `other`.
Both steps run in SQL: one ranking query per label (GROUP BY, ORDER BY count, LIMIT N), then the
collector's own aggregate groups by a CASE that maps any value outside the kept ones to `other`.
The kept values' series are exact, `other` holds the sum of the rest (bucket by bucket for
histograms), so the total over all series is the true total.

A value spelled `other` is never kept: it is counted under the one `other` series, which is what
it would share a name with anyway.
"""

from functools import reduce
from operator import or_

from django.conf import settings
from django.db.models import Case, CharField, Count, F, Q, QuerySet, Value, When

OTHER = "other"


def max_label_values() -> int:
    return settings.EVALSITE_METRICS_MAX_LABEL_VALUES


def most_frequent(queryset: QuerySet, field: str, *, weight=None, limit: int | None = None) -> list[str]:
    """The `limit` (default EVALSITE_METRICS_MAX_LABEL_VALUES) values of `field` with the most rows,
    or the largest `weight` aggregate, most frequent first, ties by value so every scrape agrees."""
    limit = max_label_values() if limit is None else limit
    if limit <= 0:
        return []
    rows = (queryset.order_by().filter(**{f"{field}__isnull": False}).exclude(**{field: OTHER})
            .values(field).annotate(_weight=weight if weight is not None else Count("*"))
            .order_by("-_weight", field)[:limit])
    return [row[field] for row in rows]


def most_frequent_pairs(queryset: QuerySet, first: str, second: str, *, kept_first: list[str],
                        limit: int | None = None) -> list[tuple[str, str | None]]:
    """For a family labelled by two ingested fields: the `limit` most frequent (first, second)
    pairs whose first value is kept. Ranking pairs rather than each label on its own keeps the
    family at 2N+1 series, not (N+1)²: the kept pairs, each kept first value's other pairs under
    (first, other), and everything else under (other, other). A NULL second value is a value."""
    limit = max_label_values() if limit is None else limit
    if limit <= 0 or not kept_first:
        return []
    rows = (queryset.order_by().filter(**{f"{first}__in": kept_first}).exclude(**{second: OTHER})
            .values(first, second).annotate(_weight=Count("*"))
            .order_by("-_weight", first, F(second).asc(nulls_first=True))[:limit])
    return [(row[first], row[second]) for row in rows]


def folded(field: str, kept: list[str]) -> Case:
    """`field` where its value is kept, else `other`: group by this to fold the rest in SQL."""
    if not kept:
        return Case(default=Value(OTHER), output_field=CharField())
    return Case(When(**{f"{field}__in": kept}, then=F(field)), default=Value(OTHER), output_field=CharField())


def folded_second(first: str, second: str, pairs: list[tuple[str, str | None]]) -> Case:
    """`second` where (first, second) is a kept pair, else `other` (NULL stays NULL in a kept pair)."""
    if not pairs:
        return Case(default=Value(OTHER), output_field=CharField())
    matches = [Q(**{first: a}) & (Q(**{f"{second}__isnull": True}) if b is None else Q(**{second: b}))
               for a, b in pairs]
    return Case(When(reduce(or_, matches), then=F(second)), default=Value(OTHER), output_field=CharField())
