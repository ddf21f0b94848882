"""The traces app's write services: the ingestion doors (apps.traces.ingestion) and the
housekeeping of stored traces (closing abandoned ones, deleting).

The doors live in apps.traces.ingestion (rest, batch, otlp) and store rows through its one
writer; their public services are named here too, so the rest of the project (the API, the
tracing shim, other apps) writes traces through this module as through any app's services.
"""

from datetime import UTC, timedelta

from django.db import transaction
from django.db.models import Sum
from django.db.models.functions import TruncHour
from django.utils import timezone

from apps.core.models import project_pk
from apps.core.retention import expired_ids, references_unlink, rows_delete_quietly

from . import fastpath
from .ingestion.batch import BatchOutcome, BatchTrace, traces_ingest_batch
from .ingestion.otlp.services import otlp_waiting_expire
from .ingestion.rest import (
    ToolCallInput,
    finish_fields,
    not_found,
    trace_complete,
    trace_intent_record,
    trace_start,
    trace_tool_call_record,
    trace_tool_calls_record,
)
from .ledger import ingestion_record
from .models import AgentTrace, OtlpSpan, ToolCall
from .selectors import project_traces

__all__ = [
    "BatchOutcome",
    "BatchTrace",
    "ToolCallInput",
    "trace_complete",
    "trace_delete",
    "trace_fail_stale",
    "trace_intent_record",
    "trace_start",
    "trace_tool_call_record",
    "trace_tool_calls_record",
    "traces_clear",
    "traces_ingest_batch",
]


def trace_fail_stale(*, older_than: timedelta) -> int:
    """Close traces whose agent never called complete (it crashed or lost the connection), so the
    active-sessions gauge does not grow forever. Returns how many were closed."""
    cutoff = timezone.now() - older_than
    closed = 0
    # By primary key: a session id is unique per project only, and the same id in another project
    # is another trace, maybe started a second ago.
    stale_ids = list(AgentTrace.objects.active().filter(start_time__lt=cutoff).values_list("pk", flat=True))
    for pk in stale_ids:
        with transaction.atomic():
            trace = AgentTrace.objects.select_for_update().filter(pk=pk).first()
            if trace is None or trace.is_finished:
                continue
            trace.status = AgentTrace.Status.FAILED
            trace.success = False
            trace.error = f"Abandoned: no completion within {int(older_than.total_seconds())} s of the start"
            finish_fields(trace, timezone.now())
            trace.save()
            closed += 1
    return closed


@transaction.atomic
def trace_delete(*, session_id: str, project_id: int | None = None) -> None:
    deleted, _ = project_traces(project_id).filter(session_id=session_id).delete()
    if not deleted:
        raise not_found(session_id)


@transaction.atomic
def traces_clear(*, project_id: int | None = None) -> int:
    """Delete every trace of the project (`default` if None), its tool calls and its OTLP span ids
    (so the same spans sent again make the trace anew). Returns the number of traces deleted."""
    project_id = project_pk(project_id)
    traces = project_traces(project_id)
    _rows_forget(traces.values("pk"), _otel_ids(traces), project_id)
    deleted, _ = traces.delete()
    return deleted


def traces_expire(project, before, limit: int) -> int:
    """Retention (apps.core.retention): deletes up to `limit` of the project's traces created before
    `before`, oldest first, with their tool calls and the span ids OTLP kept for them; evaluations
    that pointed at them keep their record and lose the link (SET_NULL). Rows another pass has
    locked are skipped, not waited for. What they held is counted in the project's ingestion ledger
    as dropped ("expired") in the same transaction (`_expiry_record`)."""
    with transaction.atomic():
        if fastpath.enabled():
            # A crash may lose this batch's deletion, which the next pass redoes; not waiting for the
            # WAL flush at COMMIT is a fifth of a batch's time (bench/retention.py).
            fastpath.execute("SET LOCAL synchronous_commit TO OFF")
        ids = expired_ids(AgentTrace.objects.filter(project=project), before=before, limit=limit)
        if not ids:
            return 0
        # Read once: the ledger counts these OTLP traces' waiting spans, then their span ids go.
        otel_ids = list(_otel_ids(AgentTrace.objects.filter(pk__in=ids)).values_list("otel_trace_id", flat=True))
        _expiry_record(project, ids, otel_ids)
        _rows_forget(ids, otel_ids, project.pk)
        # One statement per relation instead of Django's deletion collector, which reads the rows
        # and unlinks and deletes them 100 at a time (a quarter of a batch's time).
        references_unlink(AgentTrace, ids)
        return rows_delete_quietly(AgentTrace.objects.filter(pk__in=ids))


def _expiry_record(project, trace_ids, otel_ids: list[str]) -> None:
    """Count what these traces held in the project's ingestion ledger as dropped ("expired"): one
    aggregate over the doomed rows (their ledger_units, per door and hour of creation), then one
    entry per group that moves those units from `stored` to `dropped`, in the deleting transaction.
    Dated at the hour the trace was created, the arrival of most of what it holds (a REST trace's
    later records and an OTLP trace's waiting spans may have arrived in other hours: that hour's
    `stored` stays a little high and the creation hour's a little low, the totals are exact). Spans
    of these OTLP traces still waiting to be merged are in no trace's units: each is counted at its
    arrival (otlp_waiting_expire)."""
    groups = (
        AgentTrace.objects.filter(pk__in=trace_ids)
        .annotate(hour=TruncHour("created_at", tzinfo=UTC))
        .values("source", "hour")
        .annotate(units=Sum("ledger_units"))
        .order_by("hour", "source")
    )
    for group in groups:
        n = group["units"] or 0
        ingestion_record(project=project, source=group["source"], stored=-n, dropped={"expired": n}, at=group["hour"])
    # Only OTLP traces have an OpenTelemetry trace id.
    otlp_waiting_expire(project_id=project.pk, otel_trace_ids=otel_ids)


def _otel_ids(traces):
    """The OpenTelemetry trace ids of `traces` (a queryset; only OTLP traces have one)."""
    return traces.filter(otel_trace_id__isnull=False).values("otel_trace_id")


def _rows_forget(trace_ids, otel_ids, project_id: int) -> None:
    """Deletes what hangs off these traces (all of the project `project_id`) by id only: their tool
    calls and their OTLP span ids (the dedup records keyed by project and OpenTelemetry trace id, no
    foreign key to the trace). Left behind until the prune of the retry window, they would make the
    deleted trace's spans, sent again, duplicates of what no longer exists. Only the project's: the
    same trace id in another project is that project's trace, and its span ids stay. One statement
    each, no per-row signals (none listen)."""
    rows_delete_quietly(ToolCall.objects.filter(trace_id__in=trace_ids))
    rows_delete_quietly(OtlpSpan.objects.filter(project_id=project_id, otel_trace_id__in=otel_ids))
