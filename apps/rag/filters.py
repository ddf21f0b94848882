"""The RAG evaluation list's filters as one FilterSet, for the API's history (GET
/api/v1/trace/history: test, outcome) and the console's list (with q, status and score_below
too); selectors.trace_evaluation_list and trace_evaluation_search apply it. A value that does not
validate is left out of `cleaned_data` and not applied; the API's query model has refused it
before (422), so there it never happens."""

import django_filters
from django import forms
from django.db.models import QuerySet

from .models import TraceEvaluation, TraceEvaluationQuerySet
from .payload import normalise_test_name
from .scoring import TestStatus

# An evaluation id as the console's search box takes it (`42` or `#42`): at most 18 digits, so it
# fits the database's integer.
MAX_ID_DIGITS = 18


class FloatFilter(django_filters.NumberFilter):
    field_class = forms.FloatField  # a score, not NumberFilter's Decimal


class TraceEvaluationFilter(django_filters.FilterSet):
    """`q` is an evaluation id or a piece of the question's text in any case (the queryset must be
    `with_question()`); `test` is a metric in either spelling, `status` its answered status,
    `score_below` a score it was given under; `outcome` the evaluation's."""

    q = django_filters.CharFilter(method="filter_q", max_length=255)
    # Not stripped: the history's `?test= ` (a space) has always matched any metric, as a name.
    test = django_filters.CharFilter(method="metric_row", strip=False)
    status = django_filters.ChoiceFilter(choices=TestStatus.choices, method="metric_row")
    score_below = FloatFilter(method="metric_row")
    outcome = django_filters.ChoiceFilter(choices=TraceEvaluation.Outcome.choices)

    class Meta:
        model = TraceEvaluation
        fields: list[str] = []  # only the filters declared above

    def filter_q(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        number = value.removeprefix("#")
        if number.isdigit() and len(number) <= MAX_ID_DIGITS:
            return queryset.filter(pk=int(number))
        return queryset.filter(question__icontains=value)

    def metric_row(self, queryset: QuerySet, name: str, value) -> QuerySet:
        # test, status and score_below are conditions on one metric row, applied together by
        # filter_queryset (one EXISTS): filtered one by one, two rows could meet them between them.
        return queryset

    def filter_queryset(self, queryset: TraceEvaluationQuerySet) -> QuerySet:
        data = self.form.cleaned_data
        test, status, score_below = data.get("test"), data.get("status"), data.get("score_below")
        if test or status or score_below is not None:
            queryset = queryset.with_test_matching(
                name=normalise_test_name(test) if test else "", status=status or "", score_below=score_below
            )
        return super().filter_queryset(queryset)
