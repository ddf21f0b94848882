"""Response bodies built from stored evaluations (plain dicts; the renderer is orjson)."""

from apps.core.judges.base import METRICS

from ..models import AgentEvaluation


def _metric(evaluation: AgentEvaluation, name: str) -> dict:
    return {"score": getattr(evaluation, name), "reasoning": getattr(evaluation, f"{name}_reasoning"),
            "status": getattr(evaluation, f"{name}_status")}


def _common(evaluation: AgentEvaluation) -> dict:
    return {
        **{name: _metric(evaluation, name) for name in METRICS},
        "overall_score": evaluation.overall_score,
        "rating": evaluation.rating,
        "judge": evaluation.judge,
        "token_usage": evaluation.token_usage,
        "evaluation_id": evaluation.id,
    }


def session_evaluation_data(evaluation: AgentEvaluation, *, reused: bool) -> dict:
    return {
        "session_id": evaluation.session_id,
        "agent_name": evaluation.agent_name,
        **_common(evaluation),
        "timestamp": evaluation.created_at,
        "reused": reused,
        "metadata": {"operation": evaluation.operation, "intent_detected": evaluation.intent_detected,
                     "resource_type": evaluation.resource_type},
    }


def manual_evaluation_data(evaluation: AgentEvaluation) -> dict:
    return {"session_id": evaluation.session_id, **_common(evaluation),
            "evaluation_timestamp": evaluation.created_at}


def batch_result_data(evaluation: AgentEvaluation, *, reused: bool) -> dict:
    return {
        "session_id": evaluation.session_id,
        "agent_name": evaluation.agent_name,
        **{name: getattr(evaluation, name) for name in METRICS},
        "overall_score": evaluation.overall_score,
        "rating": evaluation.rating,
        "judge": evaluation.judge,
        "reused": reused,
        "statuses": {name: getattr(evaluation, f"{name}_status") for name in METRICS},
    }
