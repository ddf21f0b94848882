from apps.core.errors import NotFoundError

from .models import TraceEvaluation
from .payload import normalise_test_name


def trace_evaluation_list(*, test: str | None = None, outcome: str | None = None):
    queryset = TraceEvaluation.objects.select_related("created_by").prefetch_related("test_rows")
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
