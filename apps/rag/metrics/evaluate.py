"""Scoring: each requested, complete metric → (score, details). One registry maps a metric name to
its deterministic function and, where Ragas has one, its LLM function; the LLM one runs when an LLM
is configured. A metric that fails reports the failure in its details and gets no score; it never
takes the request down with it, and never gets a default number.
"""

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from apps.core.llm import client as llm
from apps.scores.vocabulary import JudgeStatus

from ..payload import MAX_ANSWER_CHARS, MAX_GROUND_TRUTH_CHARS, TracePayload
from ..scoring import TestStatus
from . import lexical
from . import ragas_backend as rb

logger = logging.getLogger(__name__)

DETERMINISTIC = "deterministic"
# Ragas' ContextUtilization makes one LLM call per context, one after another, inside the request.
MAX_LLM_CONTEXTS = 20
MAX_LEVENSHTEIN_CELLS = MAX_ANSWER_CHARS * MAX_GROUND_TRUTH_CHARS


@dataclass
class MetricOutcome:
    score: float | None
    details: dict
    judge: str = DETERMINISTIC
    usage: dict | None = None


@dataclass
class Scoring:
    scores: dict[str, float | None] = field(default_factory=dict)
    details: dict[str, dict] = field(default_factory=dict)
    judge: str = DETERMINISTIC
    llm_usage: dict | None = None


def _ids(payload: TracePayload) -> list[str]:
    return [c.id for c in payload.contexts]


def _texts(payload: TracePayload) -> list[str]:
    return [c.text for c in payload.contexts]


# --- deterministic -------------------------------------------------------------------------------


async def context_recall(p: TracePayload) -> MetricOutcome:
    retrieved = _ids(p)
    found = [i for i in p.relevant_context_ids if i in set(retrieved)]
    score = await rb.id_based_context_recall(retrieved_ids=retrieved, reference_ids=p.relevant_context_ids)
    return MetricOutcome(
        score,
        {
            "method": "ragas:IDBasedContextRecall",
            "relevant_context_ids": p.relevant_context_ids,
            "found_relevant_count": len(found),
            "total_relevant_count": len(p.relevant_context_ids),
            "found_relevant_ids": found,
        },
    )


async def context_precision(p: TracePayload) -> MetricOutcome:
    retrieved = _ids(p)
    relevant = set(p.relevant_context_ids)
    relevant_retrieved = [i for i in retrieved if i in relevant]
    score = await rb.id_based_context_precision(retrieved_ids=retrieved, reference_ids=p.relevant_context_ids)
    return MetricOutcome(
        score,
        {
            "method": "ragas:IDBasedContextPrecision",
            "retrieved_context_ids": retrieved,
            "relevant_context_ids": p.relevant_context_ids,
            "relevant_retrieved_count": len(relevant_retrieved),
            "total_retrieved_count": len(retrieved),
            "relevant_retrieved_ids": relevant_retrieved,
        },
    )


async def answer_accuracy(p: TracePayload) -> MetricOutcome:
    """Normalised exact match against each ground truth, else Ragas' Levenshtein similarity of the
    normalised strings; the best ground truth wins."""
    answer = lexical.normalise_answer(p.answer)
    if not answer:
        return MetricOutcome(
            None,
            {
                "method": "exact_match",
                "status": JudgeStatus.SKIPPED,
                "normalised_answer": answer,
                "reason": "the answer has no word characters to compare",
            },
        )
    candidates = []
    for truth in p.ground_truths:
        normalised = lexical.normalise_answer(truth)
        if not normalised:
            candidates.append({"ground_truth": truth, "normalised": normalised, "method": "exact_match", "score": 0.0})
        elif answer == normalised:
            candidates.append({"ground_truth": truth, "normalised": normalised, "method": "exact_match", "score": 1.0})
        elif len(answer) * len(normalised) > MAX_LEVENSHTEIN_CELLS:
            # Levenshtein is quadratic: the payload limits keep API requests under this, an
            # in-process caller past it gets a reason rather than a worker busy for a minute.
            candidates.append(
                {
                    "ground_truth": truth,
                    "normalised": normalised,
                    "score": None,
                    "status": JudgeStatus.SKIPPED,
                    "reason": f"answer and ground truth too long to compare ({len(answer)} x "
                    f"{len(normalised)} characters, limit {MAX_LEVENSHTEIN_CELLS} cells)",
                }
            )
        else:
            similarity = await rb.string_similarity(response=answer, reference=normalised)
            candidates.append(
                {
                    "ground_truth": truth,
                    "normalised": normalised,
                    "method": "ragas:NonLLMStringSimilarity(levenshtein)",
                    "score": similarity,
                }
            )
    scored = [c for c in candidates if c["score"] is not None]
    if not scored:
        return MetricOutcome(
            None,
            {
                "method": "ragas:NonLLMStringSimilarity(levenshtein)",
                "status": JudgeStatus.SKIPPED,
                "reason": candidates[0]["reason"],
                "candidates": candidates,
            },
        )
    best = max(scored, key=lambda c: c["score"])
    return MetricOutcome(
        best["score"],
        {
            "method": best["method"],
            "normalised_answer": answer,
            "best_ground_truth": best["ground_truth"],
            "candidates": candidates,
        },
    )


def _lexical(fn: Callable[..., tuple[float | None, dict]], **kwargs) -> MetricOutcome:
    score, details = fn(**kwargs)
    return MetricOutcome(score, details)


async def faithfulness(p: TracePayload) -> MetricOutcome:
    return _lexical(lexical.faithfulness, contexts=_texts(p), answer=p.answer)


async def answer_relevancy(p: TracePayload) -> MetricOutcome:
    return _lexical(lexical.answer_relevancy, question=p.question, answer=p.answer)


async def context_utilisation(p: TracePayload) -> MetricOutcome:
    return _lexical(lexical.context_utilisation, contexts=_texts(p), answer=p.answer)


# --- with an LLM ---------------------------------------------------------------------------------


async def _ragas_llm(name: str, metric, fallback, p: TracePayload, **inputs) -> MetricOutcome:
    value, log = await rb.with_call_log(metric.ascore(**inputs))
    details = {"method": f"ragas:{type(metric).__name__}", "llm_calls": log.calls, "usage": log.usage.as_dict()}
    if math.isnan(value):
        reason = "; ".join(log.errors) or "the LLM gave no usable verdict"
        return MetricOutcome(
            None, {**details, "status": JudgeStatus.ERROR, "reason": reason}, usage=log.usage.as_dict()
        )
    if not 0.0 <= value <= 1.0:
        details["raw_score"] = value
        value = min(max(value, 0.0), 1.0)
    if fallback is not None:
        # The deterministic numbers beside the judge's, e.g. context_utilisation's token counts.
        _score, lexical_details = fallback
        details.update({k: v for k, v in lexical_details.items() if k != "method"})
        details["lexical_method"] = lexical_details.get("method")
    return MetricOutcome(value, details, usage=log.usage.as_dict())


def _rank(outcome: MetricOutcome) -> float:
    return -1.0 if outcome.score is None else outcome.score


async def answer_accuracy_llm(p: TracePayload, m: rb.LLMMetrics) -> MetricOutcome:
    if not p.has("question"):
        outcome = await answer_accuracy(p)
        outcome.details["note"] = "Ragas AnswerAccuracy needs the question; none was given, so the LLM was not used"
        return outcome
    best = None
    for truth in p.ground_truths:
        outcome = await _ragas_llm(
            "answer_accuracy", m.answer_accuracy, None, p, user_input=p.question, response=p.answer, reference=truth
        )
        outcome.details["ground_truth"] = truth
        if best is None or _rank(outcome) > _rank(best):
            best = outcome
    return best


async def faithfulness_llm(p: TracePayload, m: rb.LLMMetrics) -> MetricOutcome:
    if not p.has("question"):
        outcome = await faithfulness(p)
        outcome.details["note"] = "Ragas Faithfulness needs the question; none was given, so the LLM was not used"
        return outcome
    return await _ragas_llm(
        "faithfulness", m.faithfulness, None, p, user_input=p.question, response=p.answer, retrieved_contexts=_texts(p)
    )


async def answer_relevancy_llm(p: TracePayload, m: rb.LLMMetrics) -> MetricOutcome:
    return await _ragas_llm("answer_relevancy", m.answer_relevancy, None, p, user_input=p.question, response=p.answer)


async def context_utilisation_llm(p: TracePayload, m: rb.LLMMetrics) -> MetricOutcome:
    if len(p.contexts) > MAX_LLM_CONTEXTS:
        outcome = await context_utilisation(p)
        outcome.details["note"] = (
            f"{len(p.contexts)} contexts: more than the {MAX_LLM_CONTEXTS} Ragas "
            "ContextUtilization judges one LLM call each, so the LLM was not used"
        )
        return outcome
    lexical_result = lexical.context_utilisation(contexts=_texts(p), answer=p.answer)
    return await _ragas_llm(
        "context_utilisation",
        m.context_utilisation,
        lexical_result,
        p,
        user_input=p.question,
        response=p.answer,
        retrieved_contexts=_texts(p),
    )


DeterministicFn = Callable[[TracePayload], Awaitable[MetricOutcome]]
LLMFn = Callable[[TracePayload, rb.LLMMetrics], Awaitable[MetricOutcome]]

REGISTRY: dict[str, tuple[DeterministicFn, LLMFn | None]] = {
    "answer_accuracy": (answer_accuracy, answer_accuracy_llm),
    "context_recall": (context_recall, None),
    "context_precision": (context_precision, None),
    "faithfulness": (faithfulness, faithfulness_llm),
    "answer_relevancy": (answer_relevancy, answer_relevancy_llm),
    "context_utilisation": (context_utilisation, context_utilisation_llm),
}


async def _one(name: str, payload: TracePayload, llm_metrics: rb.LLMMetrics | None) -> MetricOutcome:
    deterministic, with_llm = REGISTRY[name]
    try:
        if with_llm is not None and llm_metrics is not None:
            outcome = await with_llm(payload, llm_metrics)
            if "llm_calls" in outcome.details:
                outcome.judge = llm_metrics.judge
            return outcome
        return await deterministic(payload)
    except Exception as exc:  # a metric's failure is its own, not the request's
        logger.warning("TRACE metric %s failed", name, exc_info=True)
        reason = exc.reason if isinstance(exc, llm.LLMError) else f"{type(exc).__name__}: {str(exc)[:500]}"
        return MetricOutcome(None, {"status": JudgeStatus.ERROR, "reason": reason})


async def _score_all(names: list[str], payload: TracePayload, use_llm: bool) -> list[MetricOutcome]:
    llm_metrics = None
    llm_problem = None
    if use_llm and any(REGISTRY[n][1] for n in names):
        try:
            llm_metrics = rb.llm_metrics()
        except Exception as exc:
            llm_problem = exc.reason if isinstance(exc, llm.LLMError) else f"{type(exc).__name__}: {exc}"
            logger.warning("TRACE LLM metrics unavailable: %s", llm_problem)
    outcomes = await asyncio.gather(*(_one(n, payload, llm_metrics) for n in names))
    if llm_problem:
        for name, outcome in zip(names, outcomes, strict=True):
            if REGISTRY[name][1]:
                outcome.details["note"] = f"LLM unavailable ({llm_problem}); deterministic method used"
    return list(outcomes)


def score_metrics(names: list[str], payload: TracePayload, *, use_llm: bool | None = None) -> Scoring:
    if use_llm is None:
        use_llm = llm.llm_configured()
    outcomes = rb.run(_score_all(names, payload, use_llm)) if names else []
    scoring = Scoring()
    usage = llm.LLMUsage()
    judges = set()
    for name, outcome in zip(names, outcomes, strict=True):
        outcome.details.setdefault("status", TestStatus.SCORED)
        outcome.details["judge"] = outcome.judge
        scoring.scores[name] = outcome.score
        scoring.details[name] = outcome.details
        judges.add(outcome.judge)
        if outcome.usage:
            usage.prompt_tokens += outcome.usage["prompt_tokens"]
            usage.completion_tokens += outcome.usage["completion_tokens"]
            usage.total_tokens += outcome.usage["total_tokens"]
    llm_judges = sorted(j for j in judges if j != DETERMINISTIC)
    scoring.judge = llm_judges[0] if llm_judges else DETERMINISTIC
    scoring.llm_usage = usage.as_dict() if llm_judges else None
    return scoring
