from apps.runs.models import EvaluationResult, EvaluationRun, VerdictReview
from apps.runs.reviews import human_passed, in_force
from apps.runs.selectors import run_live_component_scores


def run_data(run: EvaluationRun) -> dict:
    return {
        "run_id": run.run_id, "dataset_id": run.dataset_id, "agent_id": run.agent_id, "status": run.status,
        "total": run.total, "completed": run.completed, "passed": run.passed, "failed": run.failed,
        "concurrency": run.concurrency, "started_at": run.started_at, "completed_at": run.completed_at,
        "error": run.error, "rubric_id": run.rubric_id, "rubric_version": run.rubric_version,
        "test_set_id": run.test_set_id, "test_set_version": run.test_set_version,
        "component_scope_filter": run.component_scope_filter, "component_ids_filter": run.component_ids_filter,
        "component_scores": run_live_component_scores(run=run),
        "criteria_passed": run.criteria_passed, "criteria_total": run.criteria_total,
        "rubric_rules_passed": run.rubric_rules_passed, "rubric_rules_total": run.rubric_rules_total,
        "rubric_rules_skipped": run.rubric_rules_skipped,
        "bot_llm_provider": run.bot_llm_provider, "bot_llm_model": run.bot_llm_model, "judge": run.judge,
        "created_at": run.created_at,
    }


def result_data(result: EvaluationResult, run: EvaluationRun) -> dict:
    return {
        "result_id": result.result_id, "run_id": run.run_id, "test_case_id": result.test_case_id,
        "langsmith_run_id": result.langsmith_run_id, "input": result.input, "output": result.output,
        "scores": result.scores, "item_name": result.item_name, "item_type": result.item_type,
        "criteria_scores": result.criteria_scores, "criteria_passed": result.criteria_passed,
        "rubric_scores": result.rubric_scores, "rubric_passed": result.rubric_passed, "passed": result.passed,
        "duration_ms": result.duration_ms, "error": result.error, "created_at": result.created_at,
    }


def review_data(review: VerdictReview, *, result_id, current: bool) -> dict:
    return {
        "review_id": review.review_id, "result_id": result_id, "kind": review.kind, "key": review.key,
        "passed": review.passed, "note": review.note, "judge_passed": review.judge_passed,
        "judge_status": review.judge_status, "judge": review.judge, "reviewer": review.reviewer_name,
        "in_force": current, "created_at": review.created_at,
    }


def reviews_data(reviews: list[VerdictReview], *, result_id) -> list[dict]:
    latest = {id(r) for r in in_force(reviews).values()}
    return [review_data(r, result_id=result_id, current=id(r) in latest) for r in reviews]


def result_detail_data(result: EvaluationResult, reviews: list[VerdictReview]) -> dict:
    return {
        **result_data(result, result.run),
        "human_passed": human_passed(judge_passed=result.passed, criteria=result.criteria_scores,
                                     rules=result.rubric_scores, latest=in_force(reviews)),
        "reviews": reviews_data(reviews, result_id=result.result_id),
    }
