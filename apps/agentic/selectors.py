"""Reads of agentic evaluations: history pages, the summary (computed by the database), exports."""

from __future__ import annotations

from collections.abc import Iterator

from django.db import connection
from django.db.models import Avg, Count, Q

from apps.core.judges import RATINGS
from apps.traces.models import AgentTrace

from .models import AgentEvaluation

METRIC_FIELDS = ("task_adherence", "tool_call_accuracy", "intent_resolution")
# One evaluation as history, history/{session_id} and the exports show it: the contract's flat fields
# (scores with *_reasoning) plus status per metric, rating, judge and token usage.
FLAT_COLUMNS = (
    "id", "session_id", "source", "agent_name", "operation", "intent_detected", "resource_type", "user_query",
    "task_adherence", "task_adherence_reasoning", "task_adherence_status",
    "tool_call_accuracy", "tool_call_accuracy_reasoning", "tool_call_accuracy_status",
    "intent_resolution", "intent_resolution_reasoning", "intent_resolution_status",
    "overall_score", "rating", "judge", "prompt_tokens", "completion_tokens", "total_tokens", "created_at",
)


def flat_row(values: tuple) -> dict:
    row = dict(zip(FLAT_COLUMNS, values))
    evaluation_id = row.pop("id")
    created_at = row.pop("created_at")
    prompt, completion, total = row.pop("prompt_tokens"), row.pop("completion_tokens"), row.pop("total_tokens")
    row["token_usage"] = None if total is None else {
        "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}
    row["evaluation_id"] = evaluation_id
    row["timestamp"] = created_at
    return row


def evaluation_flat(evaluation: AgentEvaluation) -> dict:
    return flat_row(tuple(getattr(evaluation, name) for name in FLAT_COLUMNS))


def evaluation_history(*, limit: int, offset: int, agent_name: str | None = None, operation: str | None = None,
                       min_score: float | None = None) -> tuple[list[dict], bool]:
    """A page of evaluations, newest first, and whether more follow.

    The page's ids are found first (walking only the (created_at, id) index, which is what deep
    offsets cost), then just those rows are read.
    """
    qs = AgentEvaluation.objects.filtered(agent_name=agent_name, operation=operation, min_score=min_score).newest_first()
    ids = list(qs.values_list("id", flat=True)[offset:offset + limit + 1])
    has_more = len(ids) > limit
    ids = ids[:limit]
    if not ids:
        return [], has_more
    rows = AgentEvaluation.objects.filter(id__in=ids).newest_first().values_list(*FLAT_COLUMNS)
    return [flat_row(values) for values in rows], has_more


def evaluation_latest(*, session_id: str) -> AgentEvaluation | None:
    return AgentEvaluation.objects.filter(session_id=session_id).newest_first().first()


def evaluation_summary() -> dict:
    rating_counts = {f"n_{rating}": Count("id", filter=Q(rating=rating)) for rating in RATINGS}
    totals = AgentEvaluation.objects.order_by().aggregate(
        total=Count("id"),
        overall=Avg("overall_score"),
        **{name: Avg(name) for name in METRIC_FIELDS},
        **rating_counts,
    )

    def grouped(field: str) -> dict:
        rows = (AgentEvaluation.objects.order_by().values(field)
                .annotate(count=Count("id"), avg_score=Avg("overall_score")).order_by(field))
        return {
            (row[field] if row[field] is not None else "unknown"): {
                "count": row["count"], "avg_score": _round(row["avg_score"])}
            for row in rows
        }

    return {
        "total_evaluations": totals["total"],
        "average_scores": {**{name: _round(totals[name]) for name in METRIC_FIELDS}, "overall": _round(totals["overall"])},
        "score_distribution": {rating: totals[f"n_{rating}"] for rating in RATINGS},
        "by_agent": grouped("agent_name"),
        "by_operation": grouped("operation"),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def evaluation_count() -> int:
    return AgentEvaluation.objects.count()


def trace_count() -> int:
    return AgentTrace.objects.count()


def evaluations_for_export(chunk_size: int = 2000) -> Iterator[dict]:
    """Every evaluation, newest first, read through a server-side cursor on PostgreSQL so memory stays
    flat whatever the row count."""
    rows = AgentEvaluation.objects.newest_first().values_list(*FLAT_COLUMNS).iterator(chunk_size=chunk_size)
    for values in rows:
        yield flat_row(values)


def database_vendor() -> str:
    return connection.vendor
