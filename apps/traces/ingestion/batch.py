"""The batch door: whole, finished traces in one request (POST /traces/batch).

Each item is accepted (created, or unchanged for an identical retry) or rejected on its own; the
new traces and their tool calls are stored by `writer` in one transaction with the request's
ledger entry.
"""

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

import orjson
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core.models import project_pk
from apps.traces.ledger import Source as LedgerSource
from apps.traces.ledger import ingestion_record
from apps.traces.models import AgentTrace

from .rest import ToolCallInput, repeated_call_id
from .writer import tool_calls_insert, traces_completed_announce, traces_insert


@dataclass
class BatchTrace:
    session_id: str
    user_query: str
    agent_name: str
    final_response: str | None
    success: bool
    intent_detected: str | None = None
    resource_type: str | None = None
    operation: str | None = None
    error: str | None = None
    tool_calls: list[ToolCallInput] = field(default_factory=list)
    start_time: datetime | None = None
    end_time: datetime | None = None
    metadata: dict = field(default_factory=dict)
    # The request item as received, hashed to recognise a retry of the same trace.
    canonical: dict = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(orjson.dumps(self.canonical, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()


@dataclass
class BatchOutcome:
    accepted: list[dict] = field(default_factory=list)
    rejected: list[dict] = field(default_factory=list)
    # The ledger's reason code of each rejected item, counted (apps.traces.ledger.REASONS).
    rejected_reasons: dict[str, int] = field(default_factory=dict)

    def reject(self, index: int, session_id: str | None, reason: str, *, code: str) -> None:
        self.rejected.append({"index": index, "session_id": session_id, "reason": reason})
        self.rejected_reasons[code] = self.rejected_reasons.get(code, 0) + 1

    def record(self, *, project_id: int, created: int) -> None:
        """The request's ledger entry, one per batch, in the project's ledger: call it in the
        transaction that stores the created traces. Everything not created was a duplicate
        (`unchanged`) or rejected."""
        unchanged = sum(1 for entry in self.accepted if entry["status"] == "unchanged")
        ingestion_record(
            project=project_id,
            source=LedgerSource.BATCH,
            received=created + unchanged + len(self.rejected),
            stored=created,
            duplicate=unchanged,
            rejected=self.rejected_reasons,
        )


def _build_trace(project_id: int, item: BatchTrace, content_hash: str, now: datetime) -> AgentTrace:
    end_time = item.end_time or now
    start_time = item.start_time or end_time
    return AgentTrace(
        project_id=project_id,
        session_id=item.session_id,
        user_query=item.user_query,
        agent_name=item.agent_name,
        intent_detected=item.intent_detected,
        resource_type=item.resource_type,
        operation=item.operation,
        final_response=item.final_response,
        success=item.success,
        error=item.error,
        status=AgentTrace.Status.COMPLETED if item.success else AgentTrace.Status.FAILED,
        start_time=start_time,
        end_time=end_time,
        duration_seconds=max((end_time - start_time).total_seconds(), 0.0),
        tool_call_count=len(item.tool_calls),
        metadata=item.metadata,
        content_hash=content_hash,
        source=AgentTrace.Source.BATCH,
    )


def _tool_call_rows(traces: list[AgentTrace], items: list[BatchTrace]):
    for trace, item in zip(traces, items, strict=True):
        for seq, c in enumerate(item.tool_calls, start=1):
            yield (
                trace.pk,
                seq,
                c.call_id,
                c.tool_name,
                c.tool_args,
                c.tool_result,
                c.success,
                c.error,
                c.timestamp or trace.start_time,
                c.duration_ms,
            )


def _insert(project_id: int, items: list[BatchTrace], hashes: list[str], now: datetime) -> None:
    traces = traces_insert(traces=[_build_trace(project_id, i, h, now) for i, h in zip(items, hashes, strict=True)])
    tool_calls_insert(rows=_tool_call_rows(traces, items))
    traces_completed_announce(trace_ids=[trace.pk for trace in traces])


def traces_ingest_batch(
    *, items: list[tuple[int, BatchTrace]], refused: BatchOutcome | None = None, project_id: int | None = None
) -> BatchOutcome:
    """Store whole traces in the project (`default` if None). `items` are (index in the request,
    trace) pairs that passed validation; `refused` holds the request's items that did not (the
    answer and the ledger count them too).

    A session that already exists with the same content is accepted as `unchanged` (a retried
    batch); with different content it is rejected. New traces go in with two bulk INSERTs, in the
    same transaction as the request's ledger entry.
    """
    outcome = refused or BatchOutcome()
    project_id = project_pk(project_id)
    project_traces = AgentTrace.objects.filter(project_id=project_id)
    now = timezone.now()
    hashes: dict[int, str] = {}
    first_in_request: dict[str, int] = {}
    fresh: list[tuple[int, BatchTrace]] = []
    for index, item in items:
        if item.end_time and item.start_time and item.end_time < item.start_time:
            outcome.reject(index, item.session_id, "end_time is before start_time", code="invalid")
            continue
        repeated = repeated_call_id(item.tool_calls)
        if repeated:
            outcome.reject(
                index, item.session_id, f"tool_calls: call_id {repeated!r} appears more than once", code="invalid"
            )
            continue
        hashes[index] = item.content_hash
        if item.session_id in first_in_request:
            earlier = first_in_request[item.session_id]
            if hashes[earlier] == hashes[index]:
                outcome.accepted.append({"index": index, "session_id": item.session_id, "status": "unchanged"})
            else:
                outcome.reject(
                    index, item.session_id, f"session_id repeats item {earlier} with different content", code="conflict"
                )
            continue
        first_in_request[item.session_id] = index
        fresh.append((index, item))

    existing = dict(
        project_traces.filter(session_id__in=[item.session_id for _, item in fresh]).values_list(
            "session_id", "content_hash"
        )
    )
    to_insert: list[tuple[int, BatchTrace]] = []
    for index, item in fresh:
        if item.session_id not in existing:
            to_insert.append((index, item))
        elif existing[item.session_id] == hashes[index]:
            outcome.accepted.append({"index": index, "session_id": item.session_id, "status": "unchanged"})
        else:
            outcome.reject(
                index,
                item.session_id,
                f"Session {item.session_id} already exists with different content",
                code="conflict",
            )

    try:
        with transaction.atomic():
            if to_insert:
                _insert(project_id, [item for _, item in to_insert], [hashes[index] for index, _ in to_insert], now)
            outcome.record(project_id=project_id, created=len(to_insert))
        outcome.accepted.extend({"index": i, "session_id": t.session_id, "status": "created"} for i, t in to_insert)
    except IntegrityError:
        # Another request inserted one of these sessions meanwhile: settle each on its own, under one
        # transaction that also holds the ledger entry (a savepoint per item).
        created = 0
        with transaction.atomic():
            for index, item in to_insert:
                try:
                    with transaction.atomic():
                        _insert(project_id, [item], [hashes[index]], now)
                    outcome.accepted.append({"index": index, "session_id": item.session_id, "status": "created"})
                    created += 1
                except IntegrityError as exc:
                    stored = (
                        project_traces.filter(session_id=item.session_id).values_list("content_hash", flat=True).first()
                    )
                    if stored == hashes[index]:
                        outcome.accepted.append({"index": index, "session_id": item.session_id, "status": "unchanged"})
                    elif stored is not None:
                        outcome.reject(
                            index,
                            item.session_id,
                            f"Session {item.session_id} already exists with different content",
                            code="conflict",
                        )
                    else:
                        # Not a race: the item itself breaks a constraint the checks above do not know.
                        outcome.reject(
                            index, item.session_id, f"could not be stored: {str(exc).splitlines()[0]}", code="invalid"
                        )
            outcome.record(project_id=project_id, created=created)
    outcome.accepted.sort(key=lambda entry: entry["index"])
    outcome.rejected.sort(key=lambda entry: entry["index"])
    return outcome
