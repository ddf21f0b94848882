from apps.runs.attempts import ItemAttempts
from apps.runs.judging.aggregate import PASSED
from apps.runs.models import EvaluationResult, EvaluationRun
from apps.runs.reviews import Review, human_passed, in_force
from apps.runs.selectors import run_judge_fingerprints, run_live_component_scores, run_trial_figures
from apps.runs.stats import VERDICT_WORDS


def run_data(run: EvaluationRun, judge_fingerprints: list[dict] | None = None) -> dict:
    """judge_fingerprints: the run's, when the caller read them for many runs at once."""
    if judge_fingerprints is None:
        judge_fingerprints = run_judge_fingerprints(runs=[run])[run.pk]
    return {
        "run_id": run.run_id,
        "label": run.label,
        "dataset_id": run.dataset_id,
        "agent_id": run.agent_id,
        "status": run.status,
        "total": run.total,
        "completed": run.completed,
        "passed": run.passed,
        "failed": run.failed,
        "unassessed": run.unassessed,
        "coverage": run.coverage,
        **run_trial_figures(run=run),
        "concurrency": run.concurrency,
        "started_at": run.started_at,
        "completed_at": run.completed_at,
        "error": run.error,
        "rubric_id": run.rubric_id,
        "rubric_version": run.rubric_version,
        "test_set_id": run.test_set_id,
        "test_set_version": run.test_set_version,
        "component_scope_filter": run.component_scope_filter,
        "component_ids_filter": run.component_ids_filter,
        "component_scores": run_live_component_scores(run=run),
        "criteria_passed": run.criteria_passed,
        "criteria_total": run.criteria_total,
        "rubric_rules_passed": run.rubric_rules_passed,
        "rubric_rules_total": run.rubric_rules_total,
        "rubric_rules_skipped": run.rubric_rules_skipped,
        "bot_llm_provider": run.bot_llm_provider,
        "bot_llm_model": run.bot_llm_model,
        "judge": run.judge,
        "bot_snapshot": run.bot_snapshot or None,
        "judge_fingerprints": judge_fingerprints,
        "created_at": run.created_at,
    }


def result_data(result: EvaluationResult, run: EvaluationRun) -> dict:
    return {
        "result_id": result.result_id,
        "run_id": run.run_id,
        "test_case_id": result.test_case_id,
        "langsmith_run_id": result.langsmith_run_id,
        "input": result.input,
        "output": result.output,
        "scores": result.scores,
        "item_name": result.item_name,
        "item_type": result.item_type,
        "attempt": result.attempt,
        "fingerprint": result.fingerprint,
        "criteria_scores": result.criteria_scores,
        "criteria_passed": result.criteria_passed,
        "rubric_scores": result.rubric_scores,
        "rubric_passed": result.rubric_passed,
        "passed": result.passed,
        "outcome": result.outcome,
        "duration_ms": result.duration_ms,
        "error": result.error,
        "created_at": result.created_at,
    }


def attempt_data(result: EvaluationResult) -> dict:
    return {
        "result_id": result.result_id,
        "attempt": result.attempt,
        "passed": result.passed,
        "outcome": result.outcome,
        "criteria_passed": result.criteria_passed,
        "rubric_passed": result.rubric_passed,
        "fingerprint": result.fingerprint,
        "duration_ms": result.duration_ms,
        "error": result.error,
        "created_at": result.created_at,
    }


def item_result_data(item: ItemAttempts, run: EvaluationRun) -> dict:
    """A repeated run's results entry: the contract's fields from the deciding attempt (its passed
    and outcome are the item's verdict), its finished attempts nested."""
    return {
        **result_data(item.deciding, run),
        "passed": item.outcome == PASSED,
        "outcome": item.outcome,
        "flaky": item.flaky,
        "attempts": [attempt_data(a) for a in item.attempts],
    }


def review_data(review: Review, *, result_id, current: bool) -> dict:
    return {
        "review_id": review.review_id,
        "result_id": result_id,
        "kind": review.kind,
        "key": review.key,
        "passed": review.passed,
        "note": review.note,
        "judge_passed": review.judge_passed,
        "judge_status": review.judge_status,
        "judge": review.judge,
        "reviewer": review.reviewer_name,
        "in_force": current,
        "created_at": review.created_at,
    }


def reviews_data(reviews: list[Review], *, result_id) -> list[dict]:
    latest = {id(r) for r in in_force(reviews).values()}
    return [review_data(r, result_id=result_id, current=id(r) in latest) for r in reviews]


def result_detail_data(result: EvaluationResult, reviews: list[Review]) -> dict:
    return {
        **result_data(result, result.run),
        "human_passed": human_passed(
            criteria=result.criteria_scores, rules=result.rubric_scores, latest=in_force(reviews)
        ),
        "reviews": reviews_data(reviews, result_id=result.result_id),
    }


def comparison_data(comparison: dict) -> dict:
    statistics = comparison["statistics"]
    return {
        "base_run_id": comparison["base"].run_id,
        "head_run_id": comparison["head"].run_id,
        "base_pass_rate": comparison["base_figures"]["judge_pass_rate"],
        "head_pass_rate": comparison["head_figures"]["judge_pass_rate"],
        "paired_items": statistics["paired_items"],
        "assessed_items": statistics["assessed_items"],
        "changes": statistics["changes"],
        "buckets": comparison["buckets"],
        "mcnemar_p": statistics["mcnemar_p"],
        "pass_rate_diff_ci": statistics["pass_rate_diff_ci"],
        "verdict": statistics["verdict"],
        "verdict_text": VERDICT_WORDS[statistics["verdict"]],
        "disagreement": statistics["disagreement"],
        "regressions": [
            {
                "test_case_id": head["test_case_id"],
                "item_name": head["item_name"],
                "item_type": head["item_type"],
                "base_result_id": base["result_id"],
                "head_result_id": head["result_id"],
                "question": head["question"],
                "base_answer": base["answer"],
                "head_answer": head["answer"],
                "failure_reason": head["failure_reason"],
            }
            for base, head in comparison["regressions"]
        ],
        "regressions_total": comparison["regressions_total"],
        "new_items": comparison["new_items"],
        "dropped_items": comparison["dropped"],
        "judge_changed": comparison["judge_changed"],
        "judge_changes": comparison["judge_changes"],
        "base_judge_fingerprints": comparison["base_judge_fingerprints"],
        "head_judge_fingerprints": comparison["head_judge_fingerprints"],
    }
