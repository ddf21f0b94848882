"""The agentic history's filters as one FilterSet (HackSoft style: selectors.evaluation_history
applies it to the evaluations before it pages them). The API's query model (api.schemas.HistoryQuery)
has validated the values already; the FilterSet says what each one selects."""

import django_filters
from django import forms
from django.db.models import QuerySet

from .models import AgentEvaluation


class _TextField(forms.CharField):
    """Text whose empty string is a value: only an absent parameter (None) leaves the filter out."""

    def to_python(self, value):
        return value


class ExactFilter(django_filters.CharFilter):
    """`field = value`, the empty string included: `?agent_name=` has always chosen the evaluations
    stored without an agent name, where django-filter's CharFilter would skip it."""

    field_class = _TextField

    def filter(self, qs: QuerySet, value: str | None) -> QuerySet:
        if value is None:
            return qs
        return qs.filter(**{self.field_name: value})


class EvaluationHistoryFilter(django_filters.FilterSet):
    agent_name = ExactFilter()
    operation = ExactFilter()
    # Served, when it is selective, by the agenteval_overall index; otherwise the newest-first walk.
    min_score = django_filters.NumberFilter(field_name="overall_score", lookup_expr="gte")

    class Meta:
        model = AgentEvaluation
        fields: list[str] = []  # only the filters declared above
