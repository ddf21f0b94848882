from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils.html import format_html, format_html_join

from apps.core.admin.scoping import ProjectScopedAdmin
from apps.core.admin.utils import pretty_json
from apps.scores.models import Score
from apps.scores.vocabulary import ScoreKind, SubjectKind

from .models import TraceEvaluation, metric_scores_of
from .scoring import TestStatus
from .selectors import trace_evaluations_with_scores
from .services import trace_evaluations_delete


class TestNameFilter(admin.SimpleListFilter):
    title = "test"
    parameter_name = "test"

    def lookups(self, request, model_admin):
        names = (
            Score.objects.of(SubjectKind.RAG_EVALUATION)
            .machine()
            .filter(kind=ScoreKind.METRIC)
            .order_by("key")
            .values_list("key", flat=True)
            .distinct()
        )
        return [(name, name) for name in names]

    def queryset(self, request, queryset):
        return queryset.with_test(self.value()) if self.value() else queryset


class ScoredChangeList(ChangeList):
    """Reads the page's metric scores in one query once the page is known."""

    def get_results(self, request):
        super().get_results(request)
        self.result_list = trace_evaluations_with_scores(self.result_list)


@admin.register(TraceEvaluation)
class TraceEvaluationAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    """What TRACE was asked and answered; a record, so read-only."""

    list_display = ["id", "created_at", "test_summary", "outcome", "source", "judge", "test_count", "duration"]
    list_filter = ["outcome", "source", "judge", "partial", TestNameFilter]
    search_fields = ["query"]
    date_hierarchy = "created_at"
    list_per_page = 50
    list_select_related = ["created_by"]
    show_full_result_count = False
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "created_at",
                    "created_by",
                    "outcome",
                    "partial",
                    "source",
                    "judge",
                    "duration",
                    "llm_usage_pretty",
                ]
            },
        ),
        ("Scores", {"fields": ["tests_table", "scores_pretty", "missing_pretty", "details_pretty"]}),
        ("Input", {"fields": ["query", "payload_pretty"]}),
    ]
    readonly_fields = [
        "created_at",
        "created_by",
        "outcome",
        "partial",
        "source",
        "judge",
        "duration",
        "llm_usage_pretty",
        "tests_table",
        "scores_pretty",
        "missing_pretty",
        "details_pretty",
        "query",
        "payload_pretty",
    ]

    def get_queryset(self, request):
        # Counted in the database so the column sorts; the page's rows themselves come in one query.
        count = (
            metric_scores_of(None)
            .filter(subject_id=OuterRef("pk"))
            .order_by()
            .values("subject_id")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return (
            super()
            .get_queryset(request)
            .annotate(_test_count=Coalesce(Subquery(count, output_field=IntegerField()), 0))
        )

    def get_changelist(self, request, **kwargs):
        return ScoredChangeList

    def has_add_permission(self, request):
        return False

    def delete_model(self, request, obj):
        trace_evaluations_delete(evaluations=TraceEvaluation.objects.filter(pk=obj.pk))

    def delete_queryset(self, request, queryset):
        trace_evaluations_delete(evaluations=queryset)

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="tests: scores")
    def test_summary(self, obj):
        return format_html_join(
            ", ",
            "{}: {}",
            (
                (
                    row.name,
                    "—" if row.score is None else f"{row.score:.2f}" if row.status == TestStatus.SCORED else row.status,
                )
                for row in obj.test_results
            ),
        )

    @admin.display(description="tests", ordering="_test_count")
    def test_count(self, obj):
        return obj._test_count

    @admin.display(description="duration")
    def duration(self, obj):
        return "—" if obj.duration_ms is None else f"{obj.duration_ms:.1f} ms"

    @admin.display(description="tests")
    def tests_table(self, obj):
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    row.name,
                    row.status,
                    "—" if row.score is None else row.score,
                    row.method,
                    row.judge,
                    ", ".join(row.missing),
                )
                for row in obj.test_results
            ),
        )
        return format_html(
            "<table><thead><tr><th>name</th><th>status</th><th>score</th><th>method</th>"
            "<th>judge</th><th>missing</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    @admin.display(description="scores")
    def scores_pretty(self, obj):
        return pretty_json(obj.evaluation_scores)

    @admin.display(description="missing")
    def missing_pretty(self, obj):
        return pretty_json(obj.missing)

    @admin.display(description="details")
    def details_pretty(self, obj):
        return pretty_json(obj.details)

    @admin.display(description="payload")
    def payload_pretty(self, obj):
        return pretty_json(obj.payload)

    @admin.display(description="LLM usage")
    def llm_usage_pretty(self, obj):
        return pretty_json(obj.llm_usage)
