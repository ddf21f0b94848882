from .models import EvaluationResult, EvaluationRun


def run_get(*, run_id) -> EvaluationRun | None:
    return EvaluationRun.objects.filter(run_id=run_id).first()


def runs_list(*, agent_id: str | None = None, status: str | None = None, limit: int = 50):
    runs = EvaluationRun.objects.order_by("-created_at", "-id")
    if agent_id:
        runs = runs.filter(agent_id=agent_id)
    if status:
        runs = runs.filter(status=status)
    return runs[:limit]


def run_results(*, run: EvaluationRun, passed: bool | None = None, item_type: str | None = None):
    """Finished results of a run, in test set order."""
    results = run.results.filter(state=EvaluationResult.State.DONE).order_by("position")
    if passed is not None:
        results = results.filter(passed=passed)
    if item_type:
        results = results.filter(item_type=item_type)
    return results


def run_live_component_scores(*, run: EvaluationRun) -> dict | None:
    """component_scores of a run still in progress, from the verdicts so far."""
    from .judging.aggregate import component_scores

    if not run.rubric_id:
        return None
    if run.component_scores is not None:
        return run.component_scores
    verdicts = [v for scores in run_results(run=run).values_list("rubric_scores", flat=True) for v in (scores or [])]
    return component_scores(verdicts)
