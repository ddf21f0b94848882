from django.contrib import admin, messages
from django.db import transaction
from django.urls import reverse
from django.utils.html import format_html

from apps.core.admin_utils import pretty_json
from apps.traces.admin import AgentTraceAdmin
from apps.traces.models import AgentTrace

from .models import AgentEvaluation
from .tasks import evaluate_traces

SCORE_FIELDS = ["task_adherence", "tool_call_accuracy", "intent_resolution", "overall_score"]


def _trace_link(evaluation: AgentEvaluation):
    if evaluation.trace_id is None:
        return "—"
    url = reverse("admin:traces_agenttrace_change", args=[evaluation.trace_id])
    return format_html('<a href="{}">{}</a>', url, evaluation.session_id)


@admin.register(AgentEvaluation)
class AgentEvaluationAdmin(admin.ModelAdmin):
    """Verdicts are written by judges: reviewers read and filter them, nobody edits them here."""

    list_display = ["session_id", "agent_name", "operation", "overall_score", "rating", "judge", "source",
                    "trace_link", "created_at"]
    list_filter = ["rating", "judge", "source", "agent_name", "operation"]
    search_fields = ["session_id", "agent_name", "user_query"]
    list_select_related = ["trace"]
    date_hierarchy = "created_at"
    list_per_page = 50
    show_full_result_count = False
    fieldsets = [
        (None, {"fields": ["session_id", "trace_link", "source", "agent_name", "judge", "created_at"]}),
        ("Interaction", {"fields": ["user_query", "intent_detected", "resource_type", "operation"]}),
        ("Scores", {"fields": ["overall_score", "rating",
                               "task_adherence", "task_adherence_status", "task_adherence_reasoning",
                               "tool_call_accuracy", "tool_call_accuracy_status", "tool_call_accuracy_reasoning",
                               "intent_resolution", "intent_resolution_status", "intent_resolution_reasoning"]}),
        ("Cost", {"fields": ["prompt_tokens", "completion_tokens", "total_tokens"]}),
        ("Manual input", {"fields": ["input_pretty"], "classes": ["collapse"]}),
    ]
    readonly_fields = ["session_id", "trace_link", "source", "agent_name", "judge", "created_at", "user_query",
                       "intent_detected", "resource_type", "operation", "overall_score", "rating",
                       "task_adherence", "task_adherence_status", "task_adherence_reasoning",
                       "tool_call_accuracy", "tool_call_accuracy_status", "tool_call_accuracy_reasoning",
                       "intent_resolution", "intent_resolution_status", "intent_resolution_reasoning",
                       "prompt_tokens", "completion_tokens", "total_tokens", "input_pretty"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="trace")
    def trace_link(self, obj):
        return _trace_link(obj)

    @admin.display(description="submitted interaction")
    def input_pretty(self, obj):
        return pretty_json(obj.input)


class EvaluationInline(admin.TabularInline):
    model = AgentEvaluation
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ["created_at", "judge", "overall_score", "rating", "task_adherence", "tool_call_accuracy",
              "intent_resolution", "total_tokens"]
    readonly_fields = fields
    ordering = ["-created_at"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.action(description="Evaluate selected traces (heuristic or configured LLM judge, in the background)")
def evaluate_selected_traces(modeladmin, request, queryset):
    trace_ids = list(queryset.values_list("id", flat=True))
    # Enqueued after commit so the worker never looks for rows this request has not committed.
    transaction.on_commit(lambda: evaluate_traces.delay(trace_ids))
    modeladmin.message_user(request, f"Evaluation of {len(trace_ids)} trace(s) queued.", messages.SUCCESS)


# The trace page lists its evaluations and gains the evaluate action; the traces app stays unaware of
# evaluations, so its admin is extended here rather than edited.
admin.site.unregister(AgentTrace)


@admin.register(AgentTrace)
class AgentTraceWithEvaluationsAdmin(AgentTraceAdmin):
    inlines = [*AgentTraceAdmin.inlines, EvaluationInline]
    actions = [*(AgentTraceAdmin.actions or []), evaluate_selected_traces]
