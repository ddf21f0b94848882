"""AgentEvaluation → JSON in the contract's field names."""

from apps.agentic.judges import AGENTIC_METRICS
from apps.agentic.models import AgentEvaluation
from apps.agentic.selectors import EXPORT_FIELDS


def token_usage(ev: AgentEvaluation) -> dict:
    return {"prompt_tokens": ev.prompt_tokens, "completion_tokens": ev.completion_tokens,
            "total_tokens": ev.total_tokens}


def _metrics(ev: AgentEvaluation) -> dict:
    return {
        name: {"score": score.value, "reasoning": score.reasoning, "status": score.status}
        for name, score in ev.metrics.items()
    }


def session_evaluation_data(ev: AgentEvaluation, *, reused: bool, metadata: dict) -> dict:
    return {
        "session_id": ev.session_id,
        "agent_name": ev.agent_name,
        **_metrics(ev),
        "overall_score": ev.overall_score,
        "rating": ev.rating,
        "judge": ev.judge,
        "token_usage": token_usage(ev),
        "fingerprint": ev.judge_fingerprint,
        "timestamp": ev.created_at,
        "reused": reused,
        "metadata": metadata,
    }


def manual_evaluation_data(ev: AgentEvaluation) -> dict:
    return {
        "session_id": ev.session_id,
        **_metrics(ev),
        "overall_score": ev.overall_score,
        "rating": ev.rating,
        "judge": ev.judge,
        "token_usage": token_usage(ev),
        "fingerprint": ev.judge_fingerprint,
        "evaluation_timestamp": ev.created_at,
    }


def batch_result_data(ev: AgentEvaluation, *, reused: bool) -> dict:
    return {
        "session_id": ev.session_id,
        "agent_name": ev.agent_name,
        **{name: ev.metrics[name].value for name in AGENTIC_METRICS},
        "overall_score": ev.overall_score,
        "rating": ev.rating,
        "judge": ev.judge,
        "reused": reused,
    }


def record_from_values(row: dict) -> dict:
    """A flat record (history, export) from a values() row or a model's fields."""
    record = {name: row[name] for name in EXPORT_FIELDS if name != "created_at"}
    record["timestamp"] = row["created_at"]
    return record


def record_data(ev: AgentEvaluation) -> dict:
    flat = {}
    for name, score in ev.metrics.items():
        flat.update({name: score.value, f"{name}_reasoning": score.reasoning, f"{name}_status": score.status})
    return record_from_values({name: flat[name] if name in flat else getattr(ev, name) for name in EXPORT_FIELDS})


def history_record_data(ev: AgentEvaluation) -> dict:
    """A history record: the flat record plus the rule that asked for it (rule prefetched)."""
    rule = {"id": ev.rule.pk, "name": ev.rule.name} if ev.rule_id is not None else None
    return {**record_data(ev), "rule": rule}
