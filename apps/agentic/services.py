"""Agentic evaluation: the only code that writes AgentEvaluation rows.

Judging happens outside any transaction and, for the LLM judge, on a bounded thread pool that never
touches the database; the rows are then written in one short transaction. An unchanged trace judged
again by the same judge returns the stored evaluation (no LLM call) unless `force` is set.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.conf import settings
from django.db import transaction
from django.db.models import Q

from apps.core.errors import ConflictError, NotFoundError
from apps.core.judges import AgenticJudge, JudgeInput, JudgeToolCall, Judgement, get_agentic_judge, rating_for
from apps.core.judges.base import MetricStatus
from apps.traces.models import AgentTrace
from apps.traces.services import traces_clear

from .models import AgentEvaluation

logger = logging.getLogger(__name__)

MAX_BATCH_SESSIONS = 500


def judge_input_from_trace(trace: AgentTrace) -> JudgeInput:
    """Needs trace.tool_calls prefetched (or it runs one query)."""
    return JudgeInput(
        query=trace.user_query,
        final_response=trace.final_response,
        tool_calls=tuple(
            JudgeToolCall(tool_name=c.tool_name, tool_args=c.tool_args or {}, tool_result=c.tool_result,
                          success=c.success, error=c.error)
            for c in sorted(trace.tool_calls.all(), key=lambda c: c.seq)
        ),
        intent=trace.intent_detected,
        resource_type=trace.resource_type,
        operation=trace.operation,
        agent_name=trace.agent_name,
        success=trace.success,
    )


def input_fingerprint(item: JudgeInput, judge_label: str) -> str:
    payload = {"judge": judge_label, "input": item.canonical()}
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()


def _evaluation_row(*, item: JudgeInput, judgement: Judgement, session_id: str, trace: AgentTrace | None,
                    source: str, fingerprint: str, manual_input: dict | None = None) -> AgentEvaluation:
    usage = judgement.usage or {}
    overall = judgement.overall_score
    row = AgentEvaluation(
        session_id=session_id,
        trace=trace,
        source=source,
        agent_name=item.agent_name or "unknown",
        operation=item.operation,
        intent_detected=item.intent,
        resource_type=item.resource_type,
        user_query=item.query,
        overall_score=overall,
        rating=rating_for(overall),
        judge=judgement.judge,
        prompt_tokens=usage.get("prompt_tokens") if judgement.usage is not None else None,
        completion_tokens=usage.get("completion_tokens") if judgement.usage is not None else None,
        total_tokens=usage.get("total_tokens") if judgement.usage is not None else None,
        input_fingerprint=fingerprint,
        input=manual_input,
    )
    for name, verdict in judgement.verdicts().items():
        setattr(row, name, verdict.score)
        setattr(row, f"{name}_reasoning", verdict.reasoning)
        setattr(row, f"{name}_status", verdict.status.value)
    return row


def _judge_all(judge: AgenticJudge, items: list[JudgeInput]) -> list[Judgement]:
    """Judge in order. The heuristic judge is CPU work and runs inline; LLM calls wait on the network,
    so they run on a bounded pool (EVALSITE_AGENTIC_CONCURRENCY) — the pool never touches the database."""
    if len(items) <= 1 or judge.label.startswith("heuristic"):
        return [judge.judge(item) for item in items]
    workers = max(1, min(int(settings.EVALSITE_AGENTIC_CONCURRENCY), len(items)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agentic-judge") as pool:
        return list(pool.map(judge.judge, items))


_ERROR_STATUS = (Q(task_adherence_status=MetricStatus.ERROR) | Q(tool_call_accuracy_status=MetricStatus.ERROR)
                 | Q(intent_resolution_status=MetricStatus.ERROR))


@dataclass
class SessionEvaluation:
    evaluation: AgentEvaluation
    reused: bool


@dataclass
class BatchEvaluation:
    evaluated: list[SessionEvaluation] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    # Sessions found but not evaluable (still active), with the reason.
    skipped: list[dict[str, str]] = field(default_factory=list)


def evaluate_sessions(*, session_ids: list[str], judge: str | None = "auto", force: bool = False) -> BatchEvaluation:
    """Evaluate stored traces. Unknown sessions are reported as missing, active ones as skipped."""
    wanted = list(dict.fromkeys(session_ids))
    agentic_judge = get_agentic_judge(judge)
    traces = {t.session_id: t for t in AgentTrace.objects.filter(session_id__in=wanted).prefetch_related("tool_calls")}
    outcome = BatchEvaluation(missing=[s for s in wanted if s not in traces])
    candidates: list[tuple[AgentTrace, JudgeInput, str]] = []
    for session_id in wanted:
        trace = traces.get(session_id)
        if trace is None:
            continue
        if trace.status == AgentTrace.Status.ACTIVE:
            outcome.skipped.append({"session_id": session_id,
                                    "reason": "trace is still active; complete it before evaluating"})
            continue
        item = judge_input_from_trace(trace)
        candidates.append((trace, item, input_fingerprint(item, agentic_judge.label)))

    reusable: dict[tuple[str, str], AgentEvaluation] = {}
    if not force and candidates:
        stored = (AgentEvaluation.objects
                  .filter(session_id__in=[t.session_id for t, _, _ in candidates], judge=agentic_judge.label,
                          input_fingerprint__in=[fp for _, _, fp in candidates])
                  .exclude(_ERROR_STATUS)
                  .order_by("created_at", "id"))
        for row in stored:
            reusable[(row.session_id, row.input_fingerprint)] = row  # the newest wins

    to_judge = [(t, item, fp) for t, item, fp in candidates if (t.session_id, fp) not in reusable]
    judgements = _judge_all(agentic_judge, [item for _, item, _ in to_judge])
    rows = [
        _evaluation_row(item=item, judgement=judgement, session_id=trace.session_id, trace=trace,
                        source=AgentEvaluation.Source.SESSION, fingerprint=fp)
        for (trace, item, fp), judgement in zip(to_judge, judgements)
    ]
    with transaction.atomic():
        AgentEvaluation.objects.bulk_create(rows, batch_size=500)
    fresh = {row.session_id: row for row in rows}
    for trace, _item, fp in candidates:
        if trace.session_id in fresh:
            outcome.evaluated.append(SessionEvaluation(fresh[trace.session_id], reused=False))
        else:
            outcome.evaluated.append(SessionEvaluation(reusable[(trace.session_id, fp)], reused=True))
    return outcome


def evaluate_session(*, session_id: str, judge: str | None = "auto", force: bool = False) -> SessionEvaluation:
    outcome = evaluate_sessions(session_ids=[session_id], judge=judge, force=force)
    if outcome.missing:
        raise NotFoundError(f"No trace found for session {session_id}")
    if outcome.skipped:
        raise ConflictError(f"Trace {session_id} is still active; complete it before evaluating")
    return outcome.evaluated[0]


def evaluate_manual(
    *,
    user_query: str,
    agent_response: str | None,
    tool_calls: list[JudgeToolCall],
    detected_intent: str | None = None,
    resource_type: str | None = None,
    operation: str | None = None,
    agent_name: str | None = None,
    judge: str | None = "auto",
    submitted: dict[str, Any] | None = None,
) -> AgentEvaluation:
    """Judge an interaction that has no trace; it is stored under a generated session id."""
    agentic_judge = get_agentic_judge(judge)
    item = JudgeInput(query=user_query, final_response=agent_response, tool_calls=tuple(tool_calls),
                      intent=detected_intent, resource_type=resource_type, operation=operation,
                      agent_name=agent_name or "manual")
    judgement = agentic_judge.judge(item)
    row = _evaluation_row(item=item, judgement=judgement, session_id=f"manual_{uuid.uuid4().hex}", trace=None,
                          source=AgentEvaluation.Source.MANUAL, fingerprint=input_fingerprint(item, judgement.judge),
                          manual_input=submitted)
    row.save()
    return row


def evaluate_traces_by_id(*, trace_ids: list[int], judge: str | None = "auto", force: bool = False) -> BatchEvaluation:
    """The admin action's path (through Celery): trace primary keys in, evaluated in batches."""
    session_ids = list(AgentTrace.objects.filter(id__in=trace_ids).values_list("session_id", flat=True))
    total = BatchEvaluation()
    for start in range(0, len(session_ids), MAX_BATCH_SESSIONS):
        part = evaluate_sessions(session_ids=session_ids[start:start + MAX_BATCH_SESSIONS], judge=judge, force=force)
        total.evaluated += part.evaluated
        total.missing += part.missing
        total.skipped += part.skipped
    return total


@transaction.atomic
def evaluations_and_traces_clear() -> tuple[int, int]:
    """Delete every evaluation and every trace, together or not at all. Returns (evaluations, traces)."""
    evaluations, _ = AgentEvaluation.objects.all().delete()
    traces = traces_clear()
    return evaluations, traces
