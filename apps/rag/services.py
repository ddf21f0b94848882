"""TRACE evaluation: parse → validate → flag missing → score → store, and the answer in the contract's shape."""

import time
from collections.abc import Callable

import orjson
from django.db import transaction

from apps.core.llm import client as llm
from apps.core.models import project_pk
from apps.core.retention import expired_ids, rows_delete_quietly
from apps.scores.services import scores_delete, scores_store, subjects_forget
from apps.scores.vocabulary import SubjectKind

from .metrics.evaluate import DETERMINISTIC, Scoring, score_metrics
from .models import TraceEvaluation
from .parsing import parse_query
from .payload import missing_parameters
from .scoring import metric_scores


def trace_evaluation_create(
    *,
    query: str | dict,
    partial: bool = False,
    user=None,
    use_llm: bool | None = None,
    project_id: int | None = None,
    on_stored: Callable[[], None] | None = None,
) -> TraceEvaluation:
    """The stored evaluation, its metric Score rows in `metric_scores`: the answer is read from it
    (api.schemas.TraceAnswerOut). Raises query_object.QueryParseError for a query that yields no
    payload (the API's 400). use_llm: None means "when one is configured". Stored in the project
    (`default` if None); `on_stored` runs in the storing transaction (the request's redaction
    counts), after the scoring, which holds no transaction."""
    started = time.perf_counter()
    use_llm = llm.llm_configured() if use_llm is None else use_llm
    parsed = parse_query(query, use_llm=use_llm)
    payload = parsed.payload
    missing = missing_parameters(payload)
    complete = [name for name, absent in missing.items() if absent is False]
    anything_missing = len(complete) != len(missing)
    to_score = complete if (partial or not anything_missing) else []
    scoring = score_metrics(to_score, payload, use_llm=use_llm)

    provided = payload.model_dump(mode="json")
    provided["parsing"] = {"source": parsed.source, "notes": parsed.notes}
    judge = scoring.judge if scoring.judge != DETERMINISTIC else (parsed.judge or DETERMINISTIC)
    usage = _add_usage(parsed.llm_usage, scoring.llm_usage)
    outcome = (
        TraceEvaluation.Outcome.MISSING
        if anything_missing and not partial
        else TraceEvaluation.Outcome.PARTIAL
        if anything_missing
        else TraceEvaluation.Outcome.SCORED
    )
    return _store(
        query=query,
        parsed_source=parsed.source,
        provided=provided,
        tests=payload.tests,
        missing=missing,
        scoring=scoring,
        outcome=outcome,
        partial=partial,
        judge=judge,
        usage=usage,
        user=user,
        duration_ms=(time.perf_counter() - started) * 1000,
        project_id=project_pk(project_id),
        on_stored=on_stored,
    )


def _add_usage(*usages: dict | None) -> dict | None:
    present = [u for u in usages if u]
    if not present:
        return None
    return {key: sum(u[key] for u in present) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}


@transaction.atomic
def _store(
    *,
    query,
    parsed_source: str,
    provided: dict,
    tests: list[str],
    missing: dict,
    scoring: Scoring,
    outcome: str,
    partial: bool,
    judge: str,
    usage: dict | None,
    user,
    duration_ms: float,
    project_id: int,
    on_stored: Callable[[], None] | None = None,
) -> TraceEvaluation:
    evaluation = TraceEvaluation.objects.create(
        project_id=project_id,
        created_by=user if getattr(user, "is_authenticated", False) else None,
        query=query if isinstance(query, str) else orjson.dumps(query).decode(),
        source=parsed_source,
        payload=provided,
        tests=tests,
        missing=missing,
        outcome=outcome,
        partial=partial,
        judge=judge,
        llm_usage=usage,
        duration_ms=duration_ms,
    )
    scores = metric_scores(missing=missing, scores=scoring.scores, details=scoring.details)
    for score in scores:
        score.subject_id = evaluation.pk
    # The answer is read from these rows as stored, without a query back.
    evaluation.metric_scores = scores_store(rows=scores)
    if on_stored is not None:
        on_stored()
    return evaluation


@transaction.atomic
def trace_evaluations_delete(*, evaluations) -> int:
    """Deletes evaluations (a queryset) with their Score rows, judge's and people's alike: a score
    names its subject by kind + id, so no cascade reaches it."""
    ids = list(evaluations.values_list("pk", flat=True))
    scores_delete(subject_kind=SubjectKind.RAG_EVALUATION, subject_ids=ids)
    deleted, _ = TraceEvaluation.objects.filter(pk__in=ids).delete()
    return deleted


def trace_evaluations_expire(project, before, limit: int) -> int:
    """Retention (apps.core.retention): deletes up to `limit` of the project's RAG evaluations
    created before `before`, oldest first, with their Score rows and queue items."""
    with transaction.atomic():
        ids = expired_ids(TraceEvaluation.objects.filter(project=project), before=before, limit=limit)
        if not ids:
            return 0
        subjects_forget(subject_kind=SubjectKind.RAG_EVALUATION, subject_ids=ids)
        return rows_delete_quietly(TraceEvaluation.objects.filter(pk__in=ids))
