"""The run lists' filters (HackSoft style: the selectors apply them, the API's query models and the
console's query string feed them).

RunFilter chooses runs for `GET /api/v1/runs` (selectors.run_list) and the console's run list
(selectors.run_named_list); ResultFilter a run's finished results for the results API
(selectors.result_list and result_page); ResultTableFilter those of the run page's table
(selectors.results_filtered). A repeated run's verdict filters (passed, outcome over all of an
item's attempts) are not row filters: attempts.item_positions applies them to the items."""

import django_filters
from django.db.models import Q

from .jsonfilters import HasTag
from .models import EvaluationResult, EvaluationRun


class RunFilter(django_filters.FilterSet):
    """agent_id (the bot), status, and test_set_id, which names a test set or a question set (a V1
    run's dataset): one id box in the console for both."""

    agent_id = django_filters.CharFilter()
    status = django_filters.ChoiceFilter(choices=EvaluationRun.Status.choices)
    test_set_id = django_filters.UUIDFilter(method="of_test_set")

    class Meta:
        model = EvaluationRun
        fields: list[str] = []

    def of_test_set(self, queryset, name, value):
        return queryset.filter(Q(test_set_id=value) | Q(dataset_id=value))


class ResultFilter(django_filters.FilterSet):
    """passed (the result's verdict: false is failed or unassessed) and item_type."""

    passed = django_filters.BooleanFilter()
    item_type = django_filters.ChoiceFilter(choices=[(t, t) for t in ("single_turn", "scenario", "question")])

    class Meta:
        model = EvaluationResult
        fields: list[str] = []


class ResultTableFilter(django_filters.FilterSet):
    """The run page's table: the result's verdict (passed, outcome), its item's type, name (q), tag
    and priority, and the severity of a rubric rule it failed."""

    passed = django_filters.BooleanFilter()
    outcome = django_filters.CharFilter()
    item_type = django_filters.CharFilter()
    q = django_filters.CharFilter(field_name="item_name", lookup_expr="icontains")
    # Tags live in the item's JSON (jsonfilters.HasTag: one condition on either database).
    tag = django_filters.CharFilter(method="with_tag")
    priority = django_filters.CharFilter(field_name="item__priority")
    failed_severity = django_filters.CharFilter(method="with_failed_rule")

    class Meta:
        model = EvaluationResult
        fields: list[str] = []

    def with_tag(self, queryset, name, value):
        return queryset.filter(HasTag(value))

    def with_failed_rule(self, queryset, name, value):
        return queryset.with_failed_rule(value)


def filtered(filterset: type[django_filters.FilterSet], filters: dict | None, queryset):
    """The rows of `queryset` the filters choose. A value that does not validate (a test set id that
    is not a UUID, typed in the console's box) chooses no row: it names nothing, rather than being
    dropped and showing everything. The API's query models reject such values before this."""
    bound = filterset({k: v for k, v in (filters or {}).items() if v not in (None, "")}, queryset)
    return bound.qs if bound.is_valid() else queryset.none()
