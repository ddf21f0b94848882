from django.contrib import admin
from django.db.models import Count
from django.utils.html import format_html_join

from apps.core.admin.utils import pretty_json

from .models import TraceEvaluation, TraceEvaluationTest


class TraceEvaluationTestInline(admin.TabularInline):
    model = TraceEvaluationTest
    extra = 0
    can_delete = False
    fields = ["name", "status", "score", "method", "judge", "missing"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class TestNameFilter(admin.SimpleListFilter):
    title = "test"
    parameter_name = "test"

    def lookups(self, request, model_admin):
        names = TraceEvaluationTest.objects.order_by("name").values_list("name", flat=True).distinct()
        return [(name, name) for name in names]

    def queryset(self, request, queryset):
        return queryset.with_test(self.value()) if self.value() else queryset


@admin.register(TraceEvaluation)
class TraceEvaluationAdmin(admin.ModelAdmin):
    """What TRACE was asked and answered; a record, so read-only."""

    list_display = ["id", "created_at", "test_summary", "outcome", "source", "judge", "test_count", "duration"]
    list_filter = ["outcome", "source", "judge", "partial", TestNameFilter]
    search_fields = ["query"]
    date_hierarchy = "created_at"
    list_per_page = 50
    list_select_related = ["created_by"]
    show_full_result_count = False
    inlines = [TraceEvaluationTestInline]
    fieldsets = [
        (None, {"fields": ["created_at", "created_by", "outcome", "partial", "source", "judge", "duration",
                           "llm_usage_pretty"]}),
        ("Scores", {"fields": ["scores_pretty", "missing_pretty", "details_pretty"]}),
        ("Input", {"fields": ["query", "payload_pretty"]}),
    ]
    readonly_fields = ["created_at", "created_by", "outcome", "partial", "source", "judge", "duration",
                       "llm_usage_pretty", "scores_pretty", "missing_pretty", "details_pretty", "query", "payload_pretty"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_test_count=Count("test_rows")).prefetch_related("test_rows")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="tests: scores")
    def test_summary(self, obj):
        return format_html_join(
            ", ", "{}: {}",
            ((row.name, "—" if row.score is None else f"{row.score:.2f}" if row.status == "scored" else row.status)
             for row in obj.test_rows.all()),
        )

    @admin.display(description="tests", ordering="_test_count")
    def test_count(self, obj):
        return obj._test_count

    @admin.display(description="duration")
    def duration(self, obj):
        return "—" if obj.duration_ms is None else f"{obj.duration_ms:.1f} ms"

    @admin.display(description="scores")
    def scores_pretty(self, obj):
        return pretty_json(obj.scores)

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
