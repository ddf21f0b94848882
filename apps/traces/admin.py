from django.contrib import admin
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.forms.models import BaseInlineFormSet

from apps.core.admin.scoping import ProjectScopedAdmin
from apps.core.admin.utils import pretty_json
from apps.core.pricing import amount_text

from .models import AgentTrace, ToolCall
from .selectors import tool_call_page_size

# An admin row (every field, arguments and result pretty-printed) costs about 2.5 ms to render.
ADMIN_TOOL_CALLS_SHOWN = 100


class _FirstPageFormSet(BaseInlineFormSet):
    """The trace's first calls, numbered 1 to n in order: a trace may hold tens of thousands, and
    stored seqs may have gaps. The console's trace page pages through them all."""

    def get_queryset(self):
        if not hasattr(self, "_first_page"):
            ordered = super().get_queryset().annotate(position=Window(RowNumber(), order_by=F("seq").asc()))
            self._first_page = ordered[: min(ADMIN_TOOL_CALLS_SHOWN, tool_call_page_size())]
        return self._first_page


class ToolCallInline(admin.TabularInline):
    model = ToolCall
    formset = _FirstPageFormSet
    extra = 0
    can_delete = False
    fields = [
        "position",
        "tool_name",
        "success",
        "duration_ms",
        "timestamp",
        "args_pretty",
        "result_pretty",
        "error",
        "call_id",
    ]
    readonly_fields = fields
    ordering = ["seq"]
    verbose_name_plural = (
        f"tool calls (the first {ADMIN_TOOL_CALLS_SHOWN} at most; the console's trace page has them all)"
    )

    @admin.display(description="#")
    def position(self, obj):
        return getattr(obj, "position", obj.seq)

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="arguments")
    def args_pretty(self, obj):
        return pretty_json(obj.tool_args)

    @admin.display(description="result")
    def result_pretty(self, obj):
        return pretty_json(obj.tool_result)


@admin.register(AgentTrace)
class AgentTraceAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    """Traces are what agents reported: reviewers read them, nobody edits them here. Apps above
    traces add their own inlines and actions to this page (apps.agentic.admin adds the verdicts)."""

    # Operation and intent share a column so the list fits a 1440 px window beside its filters.
    # The cost is on the change page (the console's trace list has it as a column): one more column
    # here would push the start time out of a 1440 px window.
    list_display = ["session_id", "agent_name", "source", "status", "request", "tool_calls", "duration", "start_time"]
    list_filter = ["status", "source", "agent_name", "operation", "success"]
    search_fields = ["session_id", "user_query", "agent_name", "intent_detected"]
    date_hierarchy = "start_time"
    list_per_page = 50
    show_full_result_count = False
    inlines = [ToolCallInline]
    fieldsets = [
        (None, {"fields": ["session_id", "agent_name", "source", "status", "success", "error"]}),
        ("Request", {"fields": ["user_query", "intent_detected", "resource_type", "operation"]}),
        (
            "Outcome",
            {"fields": ["final_response", "start_time", "end_time", "duration", "tool_call_count", "cost_shown"]},
        ),
        ("Metadata", {"fields": ["metadata_pretty"], "classes": ["collapse"]}),
    ]
    readonly_fields = [
        "session_id",
        "agent_name",
        "source",
        "status",
        "success",
        "error",
        "user_query",
        "intent_detected",
        "resource_type",
        "operation",
        "final_response",
        "start_time",
        "end_time",
        "duration",
        "tool_call_count",
        "cost_shown",
        "metadata_pretty",
    ]

    def has_add_permission(self, request):
        return False

    @admin.display(description="operation · intent", ordering="operation")
    def request(self, obj):
        return " · ".join(v for v in (obj.operation, obj.intent_detected) if v) or "—"

    @admin.display(description="tool calls", ordering="tool_call_count")
    def tool_calls(self, obj):
        return obj.tool_call_count

    @admin.display(description="duration", ordering="duration_seconds")
    def duration(self, obj):
        return "—" if obj.duration_seconds is None else f"{obj.duration_seconds:.2f} s"

    @admin.display(description="cost")
    def cost_shown(self, obj):
        """As the trace list in the console shows it: the priced calls' sum, and the unpriced calls
        counted apart (never $0 for them); — when nothing was priced."""
        amount = "—" if obj.cost is None else f"${amount_text(obj.cost)}"
        return f"{amount} + {obj.unpriced_calls} unpriced" if obj.unpriced_calls else amount

    @admin.display(description="metadata")
    def metadata_pretty(self, obj):
        return pretty_json(obj.metadata)
