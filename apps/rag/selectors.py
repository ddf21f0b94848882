from django.db.models import QuerySet

from apps.core.errors import NotFoundError
from apps.core.models import project_pk

from .filters import TraceEvaluationFilter
from .models import TraceEvaluation, metric_scores_of


def project_trace_evaluations(project_id: int | None) -> QuerySet[TraceEvaluation]:
    """The RAG evaluations of a project (`default` when None). Every read of them starts here."""
    return TraceEvaluation.objects.filter(project_id=project_pk(project_id))


def trace_evaluation_list(*, filters: dict | None = None, project_id: int | None = None) -> QuerySet[TraceEvaluation]:
    """The project's stored evaluations with their author, as the API's history lists them: those
    the filters choose (TraceEvaluationFilter; the history's query model gives test and outcome)."""
    return TraceEvaluationFilter(filters or {}, project_trace_evaluations(project_id).select_related("created_by")).qs


def trace_evaluation_get(*, evaluation_id: int, project_id: int | None = None) -> TraceEvaluation:
    """The project's evaluation `evaluation_id`; another project's is not found, worded the same."""
    evaluation = trace_evaluation_list(project_id=project_id).filter(pk=evaluation_id).first()
    if evaluation is None:
        raise NotFoundError(f"No TRACE evaluation {evaluation_id}")
    return evaluation


def trace_evaluation_search(
    *,
    q: str = "",
    test: str = "",
    status: str = "",
    score_below: float | None = None,
    outcome: str = "",
    project_id: int | None = None,
):
    """RAG evaluations newest first for the console's list, through the API's FilterSet
    (TraceEvaluationFilter): `q` is an evaluation id (`42` or `#42`) or a piece of the question's
    text, in any case; test, status and score_below are conditions on one metric row
    (TraceEvaluationQuerySet.with_test_matching). Empty values are no filter.
    The payload stays unread (only its question); a page's scores come in one more query
    (trace_evaluations_with_scores)."""
    project = project_pk(project_id)
    queryset = (
        TraceEvaluation.objects.with_question()
        .filter(project_id=project)
        .only("pk", "created_at", "source", "outcome", "partial", "judge", "duration_ms")
    )
    given = {"q": q, "test": test, "status": status, "score_below": score_below, "outcome": outcome}
    filters = {name: value for name, value in given.items() if value not in ("", None)}
    return TraceEvaluationFilter(filters, queryset).qs.order_by("-created_at", "-id")


def trace_evaluations_with_scores(evaluations) -> list[TraceEvaluation]:
    """A page of evaluations with their metric scores read in one query (each one's
    `metric_scores`), instead of one query per evaluation."""
    evaluations = list(evaluations)
    by_evaluation: dict[int, list] = {evaluation.pk: [] for evaluation in evaluations}
    for score in metric_scores_of(list(by_evaluation)):
        by_evaluation[score.subject_id].append(score)
    for evaluation in evaluations:
        evaluation.metric_scores = by_evaluation[evaluation.pk]
    return evaluations


def trace_evaluations_expired_count(project, before) -> int:
    """How many of the project's RAG evaluations a retention pass would delete now."""
    return TraceEvaluation.objects.filter(project=project, created_at__lt=before).count()
