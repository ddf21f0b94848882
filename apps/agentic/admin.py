from functools import partial

from django.contrib import admin, messages
from django.db import transaction
from django.urls import reverse
from django.utils.html import format_html

from apps.core.admin_utils import pretty_json

from .models import AgentEvaluation
from .tasks import evaluate_traces

SCORE_FIELDS = ["task_adherence", "task_adherence_status", "task_adherence_reasoning",
                "tool_call_accuracy", "tool_call_accuracy_status", "tool_call_accuracy_reasoning",
                "intent_resolution", "intent_resolution_status", "intent_resolution_reasoning"]


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


@admin.register(AgentEvaluation)
class AgentEvaluationAdmin(admin.ModelAdmin):
    """Verdicts are produced by judges; reviewers read them and follow the link to the trace."""

    list_display = ["session_id", "agent_name", "operation", "overall", "rating", "judge", "source", "trace_link",
                    "created_at"]
    list_filter = ["rating", "judge", "source", "agent_name", "operation"]
    search_fields = ["session_id", "agent_name"]
    list_select_related = ["trace"]
    date_hierarchy = "created_at"
    list_per_page = 50
    show_full_result_count = False
    fieldsets = [
        (None, {"fields": ["session_id", "trace_link", "source", "agent_name", "operation", "judge", "created_at"]}),
        ("Scores", {"fields": ["overall_score", "rating", *SCORE_FIELDS]}),
        ("Judge usage", {"fields": ["prompt_tokens", "completion_tokens", "total_tokens", "fingerprint"]}),
        ("Manual input", {"fields": ["manual_input_pretty"], "classes": ["collapse"]}),
    ]
    readonly_fields = ["session_id", "trace_link", "source", "agent_name", "operation", "judge", "created_at",
                       "overall_score", "rating", *SCORE_FIELDS, "prompt_tokens", "completion_tokens",
                       "total_tokens", "fingerprint", "manual_input_pretty"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        # Deleting one by one would bypass the running totals of /summary; DELETE /clear is the way.
        return False

    @admin.display(description="overall", ordering="overall_score")
    def overall(self, obj):
        return _score(obj.overall_score)

    @admin.display(description="trace")
    def trace_link(self, obj):
        if obj.trace_id is None:
            return "—"
        url = reverse("admin:traces_agenttrace_change", args=[obj.trace_id])
        return format_html('<a href="{}">{}</a>', url, obj.trace.session_id)

    @admin.display(description="manual input")
    def manual_input_pretty(self, obj):
        return pretty_json(obj.manual_input) if obj.manual_input is not None else "—"


class AgentEvaluationInline(admin.TabularInline):
    """On the trace page: every verdict on this trace, newest first, linking to its full reasoning."""

    model = AgentEvaluation
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ["created_at", "judge", "overall_score", "rating", "task_adherence", "tool_call_accuracy",
              "intent_resolution"]
    readonly_fields = fields
    ordering = ["-created_at", "-id"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.action(description="Evaluate selected traces")
def evaluate_selected_traces(modeladmin, request, queryset):
    trace_ids = list(queryset.values_list("pk", flat=True))
    transaction.on_commit(partial(evaluate_traces.delay, trace_ids))
    modeladmin.message_user(request, f"Evaluation of {len(trace_ids)} trace(s) queued.", messages.SUCCESS)
