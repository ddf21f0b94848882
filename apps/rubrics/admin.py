"""The rubric editor. The admin never writes rubric rows itself: every save builds the rubric's
content from the forms and publishes it through rubrics.services, like the API's PUT."""

from django import forms
from django.contrib import admin

from apps.core.admin.fields import LinesField
from apps.core.admin.scoping import ProjectScopedAdmin, ScopedHeadViews, scoped_version_admin
from apps.core.admin.utils import judge_model_clean
from apps.core.versioning.admin import (
    ContentFormSet,
    ContentInline,
    VersionedHeadAdmin,
    VersionedHeadForm,
)

from . import services
from .models import Rubric, RubricRule, RubricVersion, RuleJudge
from .schemas import RubricContent
from .selectors import rubric_version_changes


class RubricRuleForm(forms.ModelForm):
    pass_conditions = LinesField(help_text="One condition per line.")
    fail_conditions = LinesField(help_text="One condition per line.")
    component_ids = LinesField(rows=2, help_text="One id per line.")
    component_names = LinesField(rows=2, help_text="One name per line.")

    class Meta:
        model = RubricRule
        fields = [
            "position",
            "rule_id",
            "name",
            "severity",
            "category",
            "component_scope",
            "description",
            "prompt_reference",
            "pass_conditions",
            "fail_conditions",
            "example_violation",
            "example_correct",
            "component_ids",
            "component_names",
        ]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2, "cols": 60}),
            "example_violation": forms.Textarea(attrs={"rows": 2, "cols": 60}),
            "example_correct": forms.Textarea(attrs={"rows": 2, "cols": 60}),
        }


def rule_data(cleaned: dict) -> dict:
    return {
        "id": cleaned.get("rule_id", ""),
        "name": cleaned.get("name", ""),
        "severity": cleaned.get("severity", ""),
        "category": cleaned.get("category", ""),
        "description": cleaned.get("description", ""),
        "prompt_reference": cleaned.get("prompt_reference", ""),
        "evaluation_criteria": {
            "pass_conditions": cleaned.get("pass_conditions", []),
            "fail_conditions": cleaned.get("fail_conditions", []),
        },
        "examples": {"violation": cleaned.get("example_violation", ""), "correct": cleaned.get("example_correct", "")},
        "component_scope": cleaned.get("component_scope") or None,
        "component_ids": cleaned.get("component_ids", []),
        "component_names": cleaned.get("component_names", []),
    }


class RubricRuleFormSet(ContentFormSet):
    content_schema = RubricContent

    def content_data(self, head, rows):
        return {
            "agent_id": head.bot.agent_id if head.bot_id else "",
            "name": head.name,
            "description": head.description,
            "severity_definitions": head.severity_definitions,
            "rules": [rule_data(f.cleaned_data) for f in rows],
        }


class RubricRuleInline(ContentInline):
    model = RubricRule
    form = RubricRuleForm
    formset = RubricRuleFormSet


class RubricForm(VersionedHeadForm):
    severity_high = forms.CharField(
        label="High severity means", required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60})
    )
    severity_medium = forms.CharField(
        label="Medium severity means", required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60})
    )
    severity_low = forms.CharField(
        label="Low severity means", required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60})
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        definitions = self.instance.severity_definitions or {}
        for level in ("high", "medium", "low"):
            self.fields[f"severity_{level}"].initial = definitions.get(level, "")


@admin.register(Rubric)
class RubricAdmin(ScopedHeadViews, ProjectScopedAdmin, VersionedHeadAdmin):
    form = RubricForm
    inlines = [RubricRuleInline]
    rows = "rules"
    more_fieldsets = [("Severity definitions", {"fields": ["severity_high", "severity_medium", "severity_low"]})]
    search_fields = ["name", "description", "bot__name", "bot__agent_id", "rules__rule_id"]

    def save_form(self, request, form, change):
        rubric = super().save_form(request, form, change)
        rubric.severity_definitions = {
            level: form.cleaned_data[f"severity_{level}"]
            for level in ("high", "medium", "low")
            if form.cleaned_data[f"severity_{level}"]
        }
        return rubric

    def version_changes(self, old, new):
        return rubric_version_changes(old, new)

    def create_head(self, *, head, content, changelog, author):
        # A rubric is of its bot's project.
        return services.rubric_create(
            content=content, project=head.bot.project_id, changelog=changelog, author=author, rubric_id=head.pk
        )

    def publish_head(self, *, head, content, changelog, author, expected_version=None):
        return services.rubric_publish_version(
            rubric=head, content=content, changelog=changelog, author=author, expected_version=expected_version
        )


scoped_version_admin(RubricVersion, "rubric")


class RuleJudgeForm(forms.ModelForm):
    class Meta:
        model = RuleJudge
        fields = ["rubric", "rule_id", "judge_model", "instructions"]

    def clean_judge_model(self):
        return judge_model_clean(self.cleaned_data["judge_model"])


@admin.register(RuleJudge)
class RuleJudgeAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    """The rule judges published from alignment trials: an editor reads them, edits the model or the
    instructions by hand, or deletes one to judge the rule with each run's own judge again. Runs
    already created keep what they recorded."""

    form = RuleJudgeForm
    project_path = "rubric__project"
    list_display = ["rubric", "rule_id", "judge_model", "short_instructions", "trial_id", "author", "updated_at"]
    list_select_related = ["rubric"]
    search_fields = ["rule_id", "rubric__name", "judge_model"]
    readonly_fields = ["trial_id", "author", "updated_at"]
    fields = ["rubric", "rule_id", "judge_model", "instructions", "trial_id", "author", "updated_at"]

    @admin.display(description="instructions")
    def short_instructions(self, obj):
        return (obj.instructions[:60] + "…") if len(obj.instructions) > 60 else obj.instructions
