"""TRACE evaluation: parse → validate → flag missing → score → store, and the answer in the contract's shape."""

import time
from dataclasses import dataclass

import orjson
from django.db import transaction

from apps.core.llm import client as llm

from .metrics.evaluate import DETERMINISTIC, score_metrics
from .models import TraceEvaluation, TraceEvaluationTest
from .parsing import parse_query
from .payload import UNSUPPORTED, missing_parameters


@dataclass
class TraceAnswer:
    body: dict
    evaluation: TraceEvaluation


def trace_evaluation_create(*, query: str | dict, partial: bool = False, user=None,
                            use_llm: bool | None = None) -> TraceAnswer:
    """Raises query_object.QueryParseError for a query that yields no payload (the API's 400).
    use_llm: None means "when one is configured"."""
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
    body = {
        "provided_parameters": provided,
        "tests": payload.tests,
        "missing": missing,
        "evaluation_scores": scoring.scores,
        "details": scoring.details,
    }
    judge = scoring.judge if scoring.judge != DETERMINISTIC else (parsed.judge or DETERMINISTIC)
    usage = _add_usage(parsed.llm_usage, scoring.llm_usage)
    outcome = (TraceEvaluation.Outcome.MISSING if anything_missing and not partial
               else TraceEvaluation.Outcome.PARTIAL if anything_missing else TraceEvaluation.Outcome.SCORED)
    evaluation = _store(query=query, parsed_source=parsed.source, body=body, missing=missing, outcome=outcome,
                        partial=partial, judge=judge, usage=usage, user=user,
                        duration_ms=(time.perf_counter() - started) * 1000)
    return TraceAnswer(body=body, evaluation=evaluation)


def _add_usage(*usages: dict | None) -> dict | None:
    present = [u for u in usages if u]
    if not present:
        return None
    return {key: sum(u[key] for u in present) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}


def _test_row(name: str, absent, body: dict) -> TraceEvaluationTest:
    if absent == [UNSUPPORTED]:
        return TraceEvaluationTest(name=name, status=TraceEvaluationTest.Status.UNSUPPORTED, missing=absent)
    if absent:
        return TraceEvaluationTest(name=name, status=TraceEvaluationTest.Status.MISSING, missing=absent)
    details = body["details"].get(name)
    if details is None:
        return TraceEvaluationTest(name=name, status=TraceEvaluationTest.Status.NOT_RUN)
    return TraceEvaluationTest(name=name, status=details.get("status", "scored"),
                               score=body["evaluation_scores"].get(name), method=details.get("method", ""),
                               judge=details.get("judge", ""))


@transaction.atomic
def _store(*, query, parsed_source: str, body: dict, missing: dict, outcome: str, partial: bool, judge: str,
           usage: dict | None, user, duration_ms: float) -> TraceEvaluation:
    evaluation = TraceEvaluation.objects.create(
        created_by=user if getattr(user, "is_authenticated", False) else None,
        query=query if isinstance(query, str) else orjson.dumps(query).decode(),
        source=parsed_source,
        payload=body["provided_parameters"],
        tests=body["tests"],
        missing=missing,
        scores=body["evaluation_scores"],
        details=body["details"],
        outcome=outcome,
        partial=partial,
        judge=judge,
        llm_usage=usage,
        duration_ms=duration_ms,
    )
    rows = [_test_row(name, absent, body) for name, absent in missing.items()]
    for row in rows:
        row.evaluation = evaluation
    TraceEvaluationTest.objects.bulk_create(rows)
    return evaluation
