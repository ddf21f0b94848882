"""The traces app's write services: the ingestion doors (apps.traces.ingestion) and the
housekeeping of stored traces (closing abandoned ones, deleting).

The doors live in apps.traces.ingestion (rest, batch, otlp) and store rows through its one
writer; their public services are named here too, so the rest of the project (the API, the
tracing shim, other apps) writes traces through this module as through any app's services.
"""

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.core.retention import expired_ids

from .ingestion.batch import BatchOutcome, BatchTrace, traces_ingest_batch
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
from .models import AgentTrace, ToolCall
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
    stale_ids = list(AgentTrace.objects.active().filter(start_time__lt=cutoff).values_list("session_id", flat=True))
    for session_id in stale_ids:
        with transaction.atomic():
            trace = AgentTrace.objects.select_for_update().filter(session_id=session_id).first()
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
    """Delete every trace of the project (`default` if None) and its tool calls. Returns the
    number of traces deleted."""
    traces = project_traces(project_id)
    ToolCall.objects.filter(trace__in=traces.values("pk")).delete()
    deleted, _ = traces.delete()
    return deleted


def traces_expire(project, before, limit: int) -> int:
    """Retention (apps.core.retention): deletes up to `limit` of the project's traces created before
    `before`, oldest first, with their tool calls; evaluations that pointed at them keep their
    record and lose the link (SET_NULL). Rows another pass has locked are skipped, not waited for."""
    with transaction.atomic():
        ids = expired_ids(AgentTrace.objects.filter(project=project), before=before, limit=limit)
        if not ids:
            return 0
        ToolCall.objects.filter(trace_id__in=ids).delete()
        # Only the ids: the deletion collector reads each trace it deletes, and a trace row is wide.
        _, deleted = AgentTrace.objects.filter(pk__in=ids).only("pk").delete()
        return deleted.get(AgentTrace._meta.label, 0)
