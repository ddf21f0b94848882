from functools import partial

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.urls import reverse
from django.utils.html import format_html

from apps.core.admin.scoping import ProjectScopedAdmin
from apps.core.admin.utils import judge_model_clean, pretty_json
from apps.core.errors import DomainError
from apps.core.projects.resolution import project_of
from apps.traces.admin import AgentTraceAdmin
from apps.traces.models import AgentTrace

from .judges import AGENTIC_METRICS
from .models import AgentEvaluation, EvaluationRule, MetricJudge
from .rules import services as rule_services
from .selectors import with_metric_columns
from .tasks import evaluate_traces

# Read from the evaluation's metric Score rows: on the change page through `metrics` (one query for
# the three), in the trace page's inline from the columns with_metric_columns joins in.
SCORE_FIELDS = [f"{name}{part}" for name in AGENTIC_METRICS for part in ("", "_status", "_reasoning")]


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _metric_display(name: str, part: str):
    def display(self, obj):
        if hasattr(obj, f"{name}_status"):  # annotated by with_metric_columns
            value = getattr(obj, f"{name}{part}")
        else:
            score = obj.metrics[name]
            value = {"": score.value, "_status": score.status, "_reasoning": score.reasoning}[part]
        return _score(value) if part == "" else (value or "—")

    display.short_description = f"{name.replace('_', ' ')}{part.replace('_', ' ')}"
    return display


class MetricFieldsMixin:
    """The nine SCORE_FIELDS as read-only admin displays."""


for _name in SCORE_FIELDS:
    _metric = next(m for m in AGENTIC_METRICS if _name.startswith(m))
    setattr(MetricFieldsMixin, _name, _metric_display(_metric, _name[len(_metric) :]))


@admin.register(AgentEvaluation)
class AgentEvaluationAdmin(ProjectScopedAdmin, MetricFieldsMixin, admin.ModelAdmin):
    """Verdicts are produced by judges; reviewers read them and follow the link to the trace."""

    # The trace column links by a word, not by the session id the first column already shows, and
    # source and rule share a column: the list then fits a 1440 px window beside its filters.
    list_display = [
        "session_id",
        "agent_name",
        "operation",
        "overall",
        "rating",
        "judge",
        "source_and_rule",
        "trace_short",
        "created_at",
    ]
    list_filter = ["rating", "judge", "source", "rule", "agent_name", "operation"]
    search_fields = ["session_id", "agent_name"]
    list_select_related = ["trace", "rule"]
    date_hierarchy = "created_at"
    list_per_page = 50
    show_full_result_count = False
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "session_id",
                    "trace_link",
                    "source",
                    "agent_name",
                    "operation",
                    "judge",
                    "rule",
                    "created_at",
                ]
            },
        ),
        ("Scores", {"fields": ["overall_score", "rating", *SCORE_FIELDS]}),
        ("Judge usage", {"fields": ["prompt_tokens", "completion_tokens", "total_tokens", "fingerprint"]}),
        ("Manual input", {"fields": ["manual_input_pretty"], "classes": ["collapse"]}),
    ]
    readonly_fields = [
        "session_id",
        "trace_link",
        "source",
        "agent_name",
        "operation",
        "judge",
        "rule",
        "created_at",
        "overall_score",
        "rating",
        *SCORE_FIELDS,
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "fingerprint",
        "manual_input_pretty",
    ]

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

    @admin.display(description="source", ordering="source")
    def source_and_rule(self, obj):
        source = obj.get_source_display()
        return format_html("{}<br><small>rule {}</small>", source, obj.rule) if obj.rule_id else source

    @admin.display(description="trace")
    def trace_short(self, obj):
        if obj.trace_id is None:
            return "—"
        return format_html('<a href="{}">timeline</a>', reverse("admin:traces_agenttrace_change", args=[obj.trace_id]))

    @admin.display(description="manual input")
    def manual_input_pretty(self, obj):
        return pretty_json(obj.manual_input) if obj.manual_input is not None else "—"


class AgentEvaluationInline(MetricFieldsMixin, admin.TabularInline):
    """On the trace page: every verdict on this trace, newest first, linking to its full reasoning."""

    model = AgentEvaluation
    extra = 0
    can_delete = False
    show_change_link = True
    fields = [
        "created_at",
        "judge",
        "overall_score",
        "rating",
        "task_adherence",
        "tool_call_accuracy",
        "intent_resolution",
    ]
    readonly_fields = fields
    ordering = ["-created_at", "-id"]

    def get_queryset(self, request):
        return with_metric_columns(super().get_queryset(request))

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.action(description="Evaluate selected traces")
def evaluate_selected_traces(modeladmin, request, queryset):
    trace_ids = list(queryset.values_list("pk", flat=True))
    transaction.on_commit(partial(evaluate_traces.delay, trace_ids))
    modeladmin.message_user(request, f"Evaluation of {len(trace_ids)} trace(s) queued.", messages.SUCCESS)


class AgentTraceWithEvaluationsAdmin(AgentTraceAdmin):
    """The trace page with its verdicts and the evaluate action. Traces sit below agentic and cannot
    import it, so agentic extends the page that apps.traces.admin registered."""

    inlines = [*AgentTraceAdmin.inlines, AgentEvaluationInline]
    actions = [*AgentTraceAdmin.actions, evaluate_selected_traces]


admin.site.unregister(AgentTrace)
admin.site.register(AgentTrace, AgentTraceWithEvaluationsAdmin)


class EvaluationRuleForm(forms.ModelForm):
    class Meta:
        model = EvaluationRule
        fields = ["name", "enabled", "agent_name", "source", "sample_rate", "judge"]

    # The project a new rule goes to (the admin's get_form sets it: the reviewer's project).
    project_id: int | None = None

    def clean_name(self):
        # Names are unique per project, and the project is not a field of the form, so the model's
        # own unique check cannot see the conflict.
        name = self.cleaned_data["name"]
        project_id = self.instance.project_id if self.instance.pk else self.project_id
        taken = EvaluationRule.objects.filter(project_id=project_id, name=name).exclude(pk=self.instance.pk)
        if taken.exists():
            raise forms.ValidationError(f"An evaluation rule named {name!r} already exists in this project.")
        return name

    def clean_sample_rate(self):
        rate = self.cleaned_data["sample_rate"]
        if not 0 <= rate <= 1:
            raise forms.ValidationError("Between 0 and 1.")
        return rate

    def clean_judge(self):
        judge = self.cleaned_data["judge"].strip()
        if self.instance.pk is None or judge != self.instance.judge:
            try:
                rule_services.rule_judge_check(judge=judge)
            except DomainError as exc:
                raise forms.ValidationError(str(exc.detail)) from None
        return judge


@admin.register(EvaluationRule)
class EvaluationRuleAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    """The same fields as the API; saves go through the rule services (created_by is the reviewer)."""

    form = EvaluationRuleForm
    list_display = ["name", "enabled", "agent_name", "source", "sample_rate", "judge", "created_by", "created_at"]
    list_filter = ["enabled", "source", "judge"]
    search_fields = ["name", "agent_name"]
    list_select_related = ["created_by"]
    readonly_fields = ["created_by", "created_at"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.project_id = project_of(request).pk
        return form

    def save_model(self, request, obj, form, change):
        data = rule_services.RuleData(**{name: form.cleaned_data[name] for name in EvaluationRuleForm.Meta.fields})
        try:
            if change:
                rule_services.rule_update(rule=obj, data=data)
            else:
                saved = rule_services.rule_create(data=data, created_by=request.user, project_id=project_of(request).pk)
                obj.pk = saved.pk
        except DomainError as exc:
            # Only a race can get here (the form checked the name and the judge): say so, do not 500.
            self.message_user(request, str(exc.detail), messages.ERROR)

    def delete_model(self, request, obj):
        rule_services.rule_delete(rule=obj)


class MetricJudgeForm(forms.ModelForm):
    class Meta:
        model = MetricJudge
        fields = ["agent_name", "metric", "judge_model", "instructions"]

    # Set by MetricJudgeAdmin.get_form: the project is not a form field, so the form's own unique
    # check cannot see the (project, agent, metric) constraint, and a duplicate would be a 500.
    project_id: int

    def clean_judge_model(self):
        return judge_model_clean(self.cleaned_data["judge_model"])

    def clean(self):
        data = super().clean()
        taken = MetricJudge.objects.filter(
            project_id=self.project_id, agent_name=data.get("agent_name", ""), metric=data.get("metric")
        ).exclude(pk=self.instance.pk)
        if taken.exists():
            raise forms.ValidationError("This agent already has a judge for this metric: edit that one.")
        return data


@admin.register(MetricJudge)
class MetricJudgeAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    """The metric judges published from alignment trials: an editor reads them, edits the model or
    the instructions by hand, or deletes one to grade the metric with each evaluation's own judge
    again. Evaluations stored before keep their verdicts."""

    form = MetricJudgeForm
    list_display = ["agent_name", "metric", "judge_model", "short_instructions", "trial_id", "author", "updated_at"]
    list_filter = ["metric"]
    search_fields = ["agent_name", "judge_model"]
    readonly_fields = ["trial_id", "author", "updated_at"]
    fields = ["agent_name", "metric", "judge_model", "instructions", "trial_id", "author", "updated_at"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.project_id = project_of(request).pk
        return form

    @admin.display(description="instructions")
    def short_instructions(self, obj):
        return (obj.instructions[:60] + "…") if len(obj.instructions) > 60 else obj.instructions
