from apps.core.errors import NotFoundError

from .models import TraceEvaluation, metric_scores_of
from .payload import normalise_test_name


def trace_evaluation_list(*, test: str | None = None, outcome: str | None = None):
    queryset = TraceEvaluation.objects.select_related("created_by")
    if test:
        queryset = queryset.with_test(normalise_test_name(test))
    if outcome:
        queryset = queryset.filter(outcome=outcome)
    return queryset


def trace_evaluation_get(*, evaluation_id: int) -> TraceEvaluation:
    evaluation = trace_evaluation_list().filter(pk=evaluation_id).first()
    if evaluation is None:
        raise NotFoundError(f"No TRACE evaluation {evaluation_id}")
    return evaluation


def trace_evaluation_search(
    *, q: str = "", test: str = "", status: str = "", score_below: float | None = None, outcome: str = ""
):
    """RAG evaluations newest first for the console's list: `q` is an evaluation id (`42` or `#42`)
    or a piece of the question's text, in any case; the other filters are those of
    TraceEvaluationQuerySet.with_test_matching.
    The payload stays unread (only its question); a page's scores come in one more query
    (trace_evaluations_with_scores)."""
    queryset = TraceEvaluation.objects.with_question().only(
        "pk", "created_at", "source", "outcome", "partial", "judge", "duration_ms"
    )
    q = q.strip()
    if q:
        number = q.removeprefix("#")
        # A number is an id (at most 18 digits, so it fits the database's integer).
        is_id = number.isdigit() and len(number) <= 18
        queryset = queryset.filter(pk=int(number)) if is_id else queryset.filter(question__icontains=q)
    if test or status or score_below is not None:
        queryset = queryset.with_test_matching(
            name=normalise_test_name(test) if test else "", status=status, score_below=score_below
        )
    if outcome:
        queryset = queryset.filter(outcome=outcome)
    return queryset.order_by("-created_at", "-id")


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
