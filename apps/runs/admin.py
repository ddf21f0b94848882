"""The reviewer console for runs: list with progress, run page with aggregates and results,
result page with the transcript and every verdict. Launch and cancel go through the services."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from apps.core.admin.scoping import ProjectScopedAdmin, role_allows
from apps.core.admin.utils import ViewOnlyAdminMixin, pretty_json
from apps.core.errors import DomainError
from apps.core.models import ProjectRole
from apps.core.projects.resolution import project_of

from . import services
from .forms import AdminRunLaunchForm
from .judging.aggregate import UNASSESSED
from .judging.types import CRITERION, RULE, Verdict
from .models import AlignmentTrial, AnchorCheck, AnchorSet, EvaluationResult, EvaluationRun
from .selectors import run_bot_choices, run_live_component_scores


def _progress(run: EvaluationRun) -> str:
    return format_html(
        '<progress max="{}" value="{}" style="width:6em" title="{}/{}"></progress> {}/{}',
        run.total or 1,
        run.completed,
        run.completed,
        run.total,
        run.completed,
        run.total,
    )


def _verdict_badge(passed, status="ok", outcome=None) -> str:
    if outcome == UNASSESSED:
        return format_html(
            '<strong style="color:#b26b00" title="{}">UNASSESSED</strong>',
            "a verdict that decides the item was not given: neither passed nor failed",
        )
    if status != "ok":
        return format_html('<strong style="color:#b26b00">{}</strong>', status.upper())
    return format_html(
        '<strong style="color:{}">{}</strong>', "#1a7f37" if passed else "#cf222e", "PASS" if passed else "FAIL"
    )


class ResultInline(admin.TabularInline):
    model = EvaluationResult
    extra = 0
    can_delete = False
    show_change_link = True
    fields = [
        "position",
        "attempt",
        "item_name",
        "item_type",
        "verdict",
        "criteria_passed",
        "rubric_passed",
        "duration_ms",
        "error",
    ]
    readonly_fields = fields
    ordering = ["passed", "position", "attempt"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="verdict")
    def verdict(self, obj):
        return "—" if obj.passed is None else _verdict_badge(obj.passed, outcome=obj.outcome)


class BotNameFilter(admin.SimpleListFilter):
    """Runs of one bot, offered by name (runs keep the bot's id; a deleted bot's runs by that id)."""

    title = "bot"
    parameter_name = "agent_id"

    def lookups(self, request, model_admin):
        return run_bot_choices(projects=[project_of(request)])

    def queryset(self, request, queryset):
        return queryset.filter(agent_id=self.value()) if self.value() else queryset


@admin.register(EvaluationRun)
class EvaluationRunAdmin(ProjectScopedAdmin, ViewOnlyAdminMixin, admin.ModelAdmin):
    # Runs named as a reviewer knows them: label and creation time (the column sorts by time), bot
    # and test set names; the run id is the title of the run's link. The stylesheet of
    # change_list.html keeps short values (judge, status) on one line. Passed (in the pass rate), failed and unassessed
    # apart: an unassessed result is neither.
    list_display = [
        "run_name",
        "bot_name",
        "status",
        "progress",
        "pass_rate_display",
        "failed",
        "unassessed",
        "versions",
        "judge",
    ]
    list_display_links = ["run_name"]
    list_filter = ["status", "judge", BotNameFilter]
    search_fields = ["run_id", "agent_id"]
    list_per_page = 50
    inlines = [ResultInline]
    actions = ["cancel_runs"]
    readonly_fields = [
        "run_id",
        "agent_id",
        "status",
        "progress",
        "pass_rate_display",
        "error",
        "test_set_id",
        "test_set_version",
        "dataset_id",
        "rubric_id",
        "rubric_version",
        "concurrency",
        "repeats",
        "component_scope_filter",
        "component_ids_filter",
        "component_scores_display",
        "criteria_passed",
        "criteria_total",
        "rubric_rules_passed",
        "rubric_rules_total",
        "bot_llm_provider",
        "bot_llm_model",
        "judge",
        "created_by",
        "created_at",
        "started_at",
        "completed_at",
    ]
    fields = readonly_fields

    def get_queryset(self, request):
        # Runs are launched from the launch page, through the run service; the list shows the names
        # of their bot, test set and rubric.
        return super().get_queryset(request).with_names()

    @admin.display(description="run", ordering="created_at")
    def run_name(self, obj):
        when = f"{obj.created_at:%Y-%m-%d %H:%M}" if obj.created_at else ""
        if obj.label:
            return format_html('<span title="run {}">{}</span><br><small>{}</small>', obj.run_id, obj.label, when)
        return format_html('<span title="run {}">{}</span>', obj.run_id, when or obj.run_id)

    @admin.display(description="test set · rubric", ordering="test_set_name_value")
    def versions(self, obj):
        if obj.test_set_id:
            source = f"{obj.test_set_name_value or '(deleted test set)'} v{obj.test_set_version}"
        else:
            source = f"{obj.test_set_name_value or '(deleted question set)'} (question set)"
        if not obj.rubric_id:
            return source
        return format_html(
            "{}<br><small>{} v{}</small>", source, obj.rubric_name_value or "(deleted rubric)", obj.rubric_version
        )

    @admin.display(description="bot", ordering="bot_name_value")
    def bot_name(self, obj):
        return format_html('<span title="bot id {}">{}</span>', obj.agent_id, obj.bot_name_value or "(deleted bot)")

    def get_urls(self):
        launch = path("launch/", self.admin_site.admin_view(self.launch_view), name="runs_evaluationrun_launch")
        return [launch, *super().get_urls()]

    def changelist_view(self, request, extra_context=None):
        # The launch link only for those who may launch (the view refuses the others anyway).
        launch_url = reverse("admin:runs_evaluationrun_launch") if self.has_launch_permission(request) else None
        extra_context = {**(extra_context or {}), "launch_url": launch_url}
        return super().changelist_view(request, extra_context)

    def launch_view(self, request):
        # admin_view (get_urls) has sent whoever may not enter the admin to its login page.
        if not self.has_launch_permission(request):
            raise PermissionDenied
        form = AdminRunLaunchForm(request.POST or None, initial=request.GET or None, project=project_of(request))
        if request.method == "POST" and form.is_valid():
            run = form.launch(user=request.user)
            if run is not None:
                messages.success(request, f"Run {run.run_id} started with {run.total} items.")
                return redirect("admin:runs_evaluationrun_change", run.pk)
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "title": "Launch an evaluation run",
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/runs/launch.html", context)

    @admin.display(description="progress")
    def progress(self, obj):
        return _progress(obj)

    @admin.display(description="pass rate")
    def pass_rate_display(self, obj):
        return "—" if obj.pass_rate is None else f"{obj.pass_rate:.0%} ({obj.passed}/{obj.completed})"

    @admin.display(description="component scores")
    def component_scores_display(self, obj):
        scores = run_live_component_scores(run=obj)
        if not scores:
            return "—"
        return format_html_join(
            "",
            "<div>{}: {}/{} ({})</div>",
            ((s, v["passed"], v["total"], f"{v['score']:.0%}") for s, v in scores.items()),
        )

    def has_launch_permission(self, request) -> bool:
        """Launching and cancelling are an editor's (the project's role), as in the console."""
        return role_allows(request, ProjectRole.EDITOR)

    @admin.action(description="Cancel selected runs", permissions=["launch"])
    def cancel_runs(self, request, queryset):
        cancelled = 0
        for run in queryset:
            try:
                services.run_cancel(run=run)
                cancelled += 1
            except DomainError as exc:
                messages.warning(request, str(exc.detail))
        if cancelled:
            messages.success(request, f"Cancelled {cancelled} run(s).")


@admin.register(EvaluationResult)
class EvaluationResultAdmin(ProjectScopedAdmin, ViewOnlyAdminMixin, admin.ModelAdmin):
    project_path = "run__project"

    list_display = [
        "item_name",
        "run_link",
        "item_type",
        "verdict",
        "criteria_passed",
        "rubric_passed",
        "duration_ms",
        "state",
    ]
    list_filter = ["outcome", "item_type", "state"]
    list_select_related = ["run"]
    search_fields = ["item_name", "run__run_id", "test_case_id"]
    fields = [
        "run_link",
        "test_case_id",
        "item_name",
        "item_type",
        "verdict",
        "error",
        "transcript",
        "criteria_table",
        "rubric_table",
        "scores_pretty",
        "duration_ms",
        "langsmith_run_id",
        "attempt",
        "executions",
        "state",
        "created_at",
        "finished_at",
    ]
    readonly_fields = fields

    # The model's `attempts` counts executions of this one row (a worker that died and was retried);
    # `attempt` is which of the run's repeats it is. Two words for two things.
    @admin.display(description="executions (retries included)")
    def executions(self, obj):
        return obj.attempts

    @admin.display(description="run")
    def run_link(self, obj):
        return format_html(
            '<a href="{}">{}</a>', reverse("admin:runs_evaluationrun_change", args=[obj.run_id]), obj.run.run_id
        )

    @admin.display(description="verdict")
    def verdict(self, obj):
        return "—" if obj.passed is None else _verdict_badge(obj.passed, outcome=obj.outcome)

    @admin.display(description="transcript")
    def transcript(self, obj):
        messages_ = (obj.output or {}).get("messages") or []
        rows = []
        for m in messages_:
            calls = format_html_join(
                "",
                "<details><summary>tool call <code>{}</code> {}</summary>{}</details>",
                (
                    (
                        c["name"],
                        "" if c.get("success", True) else "FAILED",
                        pretty_json(
                            {"arguments": c.get("arguments"), "result": c.get("result"), "error": c.get("error")}
                        ),
                    )
                    for c in m.get("tool_calls") or []
                ),
            )
            rows.append(
                format_html(
                    '<div style="margin:.4em 0"><strong>{}</strong>: {}{}</div>', m["role"], m["content"], calls
                )
            )
        return format_html_join("", "{}", ((r,) for r in rows)) if rows else "—"

    @admin.display(description="criteria")
    def criteria_table(self, obj):
        if obj.criteria_scores is None:
            return "—"
        return format_html_join(
            "",
            "<div>{} <em>{}</em> — {} <small>({}, score {})</small></div>",
            (
                (_verdict_badge(c.passed, c.status), c.key, c.reasoning, c.judge, c.score)
                for c in Verdict.list_from_json(obj.criteria_scores, kind=CRITERION)
            ),
        )

    @admin.display(description="rubric rules")
    def rubric_table(self, obj):
        if obj.rubric_scores is None:
            return "—"
        return format_html_join(
            "",
            "<div>{} <code>{}</code> {} [{}] — {} <small>({})</small></div>",
            (
                (_verdict_badge(r.passed, r.status), r.key, r.rule_name, r.severity, r.reasoning, r.judge)
                for r in Verdict.list_from_json(obj.rubric_scores, kind=RULE)
            ),
        )

    @admin.display(description="scores")
    def scores_pretty(self, obj):
        return pretty_json(obj.scores)


class NoDeleteViewOnlyAdmin(ProjectScopedAdmin, ViewOnlyAdminMixin, admin.ModelAdmin):
    """Rows a service keeps consistent (a check in flight holds its anchors; a trial its report):
    read here, changed and deleted through the console or the API, never by a bare admin delete."""

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(AnchorSet)
class AnchorSetAdmin(NoDeleteViewOnlyAdmin):
    """Test-set versions marked as anchors (apps.runs.anchors); unmark one on /console/anchors/."""

    list_display = ["anchor_id", "test_set_id", "test_set_version", "reference_run", "anchored", "created_at"]
    list_select_related = ["reference_run"]
    search_fields = ["anchor_id", "test_set_id"]
    fields = ["anchor_id", "test_set_id", "test_set_version", "reference_run", "rubric_id", "rubric_version"]
    fields += ["rule_ids", "has_criteria", "anchored", "reference_judges_shown", "created_by", "created_at"]
    readonly_fields = fields

    @admin.display(description="anchored results")
    def anchored(self, obj):
        return len(obj.results)

    @admin.display(description="reference judges")
    def reference_judges_shown(self, obj):
        return pretty_json(obj.reference_judges)


@admin.register(AnchorCheck)
class AnchorCheckAdmin(NoDeleteViewOnlyAdmin):
    project_path = "anchor_set__project"
    list_display = ["check_id", "anchor_set", "trigger", "judge", "status", "judged", "total", "created_at"]
    list_filter = ["status", "trigger"]
    list_select_related = ["anchor_set"]
    search_fields = ["check_id", "judge"]
    fields = ["check_id", "anchor_set", "trigger", "judge", "status", "judged", "total", "error"]
    fields += ["report_shown", "created_by", "created_at", "started_at", "finished_at"]
    readonly_fields = fields

    @admin.display(description="report")
    def report_shown(self, obj):
        return pretty_json(obj.report)


@admin.register(AlignmentTrial)
class AlignmentTrialAdmin(NoDeleteViewOnlyAdmin):
    """Alignment trials of rubric rules and agentic metrics; their page is /console/alignment-trials/{id}/."""

    list_display = ["trial_id", "rubric", "rule_id", "metric", "agent_name", "status", "judged", "created_at"]
    list_filter = ["status", "metric"]
    list_select_related = ["rubric"]
    search_fields = ["trial_id", "rule_id", "agent_name"]
    fields = ["trial_id", "rubric", "rule_id", "metric", "agent_name", "candidate_shown", "status", "judged"]
    fields += ["report_shown", "published_shown", "error", "created_by", "created_at", "finished_at", "published_at"]
    readonly_fields = fields

    @admin.display(description="candidate")
    def candidate_shown(self, obj):
        return pretty_json(obj.candidate)

    @admin.display(description="report")
    def report_shown(self, obj):
        return pretty_json(obj.report)

    @admin.display(description="published")
    def published_shown(self, obj):
        return pretty_json(obj.published)
