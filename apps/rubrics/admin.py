"""The rubric editor. The admin never writes rubric rows itself: every save builds the rubric's
content from the forms and publishes it through rubrics.services, like the API's PUT."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count
from pydantic import ValidationError as PydanticValidationError

from apps.core.admin_forms import LinesField, pydantic_messages
from apps.core.admin_utils import pretty_json
from apps.core.admin_versioning import VersionHistoryAdminMixin
from apps.core.errors import DomainError

from . import services
from .models import Rubric, RubricRule, RubricVersion
from .schemas import RubricContent


class RubricRuleForm(forms.ModelForm):
    pass_conditions = LinesField(help_text="One condition per line.")
    fail_conditions = LinesField(help_text="One condition per line.")
    component_ids = LinesField(rows=2, help_text="One id per line.")
    component_names = LinesField(rows=2, help_text="One name per line.")

    class Meta:
        model = RubricRule
        fields = ["position", "rule_id", "name", "severity", "category", "component_scope", "description",
                  "prompt_reference", "pass_conditions", "fail_conditions", "example_violation", "example_correct",
                  "component_ids", "component_names"]
        widgets = {"description": forms.Textarea(attrs={"rows": 2, "cols": 60}),
                   "example_violation": forms.Textarea(attrs={"rows": 2, "cols": 60}),
                   "example_correct": forms.Textarea(attrs={"rows": 2, "cols": 60})}


def rule_data(cleaned: dict) -> dict:
    return {
        "id": cleaned.get("rule_id", ""),
        "name": cleaned.get("name", ""),
        "severity": cleaned.get("severity", ""),
        "category": cleaned.get("category", ""),
        "description": cleaned.get("description", ""),
        "prompt_reference": cleaned.get("prompt_reference", ""),
        "evaluation_criteria": {"pass_conditions": cleaned.get("pass_conditions", []),
                                "fail_conditions": cleaned.get("fail_conditions", [])},
        "examples": {"violation": cleaned.get("example_violation", ""), "correct": cleaned.get("example_correct", "")},
        "component_scope": cleaned.get("component_scope") or None,
        "component_ids": cleaned.get("component_ids", []),
        "component_names": cleaned.get("component_names", []),
    }


class RubricRuleFormSet(forms.BaseInlineFormSet):
    """Validates the whole rubric (head fields from the parent form plus these rules) with the
    API's schema, so the admin refuses exactly what the API refuses."""

    content: RubricContent | None = None

    def clean(self):
        super().clean()
        if any(self.errors):
            return
        kept = [f for f in self.forms if f.cleaned_data and not f.cleaned_data.get("DELETE")]
        kept.sort(key=lambda f: (f.cleaned_data.get("position") or 0, self.forms.index(f)))
        rubric = self.instance
        agent_id = rubric.agent.agent_id if rubric.agent_id else ""
        try:
            self.content = RubricContent.model_validate({
                "agent_id": agent_id, "name": rubric.name, "description": rubric.description,
                "severity_definitions": rubric.severity_definitions,
                "rules": [rule_data(f.cleaned_data) for f in kept],
            })
        except PydanticValidationError as exc:
            raise ValidationError(pydantic_messages(exc)) from None


class RubricRuleInline(admin.StackedInline):
    model = RubricRule
    form = RubricRuleForm
    formset = RubricRuleFormSet
    extra = 0
    ordering = ["position", "id"]


class RubricForm(forms.ModelForm):
    severity_high = forms.CharField(label="High severity means", required=False,
                                    widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))
    severity_medium = forms.CharField(label="Medium severity means", required=False,
                                      widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))
    severity_low = forms.CharField(label="Low severity means", required=False,
                                   widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))
    changelog = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
                                help_text="What this change does; kept with the version it publishes.")
    based_on_version = forms.IntegerField(required=False, widget=forms.HiddenInput)

    class Meta:
        model = Rubric
        fields = ["agent", "name", "description"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        definitions = self.instance.severity_definitions or {}
        for level in ("high", "medium", "low"):
            self.fields[f"severity_{level}"].initial = definitions.get(level, "")
        self.fields["based_on_version"].initial = self.instance.current_version

    def clean(self):
        cleaned = super().clean()
        based_on = cleaned.get("based_on_version")
        if not self.instance._state.adding and based_on is not None:
            current = Rubric.objects.filter(pk=self.instance.pk).values_list("current_version", flat=True).first()
            if current is not None and current != based_on:
                raise forms.ValidationError(
                    f"Someone published version {current} while you edited version {based_on}. "
                    "Reload the page and apply your change again.")
        return cleaned


@admin.register(Rubric)
class RubricAdmin(VersionHistoryAdminMixin, admin.ModelAdmin):
    form = RubricForm
    inlines = [RubricRuleInline]
    list_display = ["name", "agent", "current_version", "rule_count", "updated_at"]
    list_select_related = ["agent"]
    list_filter = ["agent"]
    search_fields = ["name", "description", "agent__name", "agent__agent_id", "rules__rule_id"]
    readonly_fields = ["rubric_id", "current_version", "version_history_link"]
    fieldsets = [
        (None, {"fields": ["rubric_id", "agent", "name", "description", "current_version", "version_history_link"]}),
        ("Severity definitions", {"fields": ["severity_high", "severity_medium", "severity_low"]}),
        ("Publish", {"fields": ["changelog", "based_on_version"]}),
    ]
    version_model = RubricVersion
    version_parent_field = "rubric"

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(rule_total=Count("rules"))

    @admin.display(description="rules", ordering="rule_total")
    def rule_count(self, obj):
        return obj.rule_total

    def save_form(self, request, form, change):
        rubric = form.save(commit=False)
        rubric.severity_definitions = {level: form.cleaned_data[f"severity_{level}"]
                                       for level in ("high", "medium", "low") if form.cleaned_data[f"severity_{level}"]}
        rubric._based_on_version = form.cleaned_data.get("based_on_version") if change else None
        rubric._changelog = form.cleaned_data.get("changelog", "")
        return rubric

    def save_model(self, request, obj, form, change):
        """Nothing here: the head is written when the version is published, in save_related."""

    def save_related(self, request, form, formsets, change):
        content = next(fs.content for fs in formsets if isinstance(fs, RubricRuleFormSet))
        rubric = form.instance
        author = request.user.get_username()
        try:
            if not change:
                services.rubric_create(content=content, changelog=rubric._changelog, author=author,
                                       rubric_id=rubric.pk)
                return
            _rubric, published = services.rubric_publish_version(
                rubric=rubric, content=content, changelog=rubric._changelog, author=author,
                expected_version=rubric._based_on_version)
        except DomainError as exc:
            self.publish_failed(request, exc.detail)
            return
        if not published:
            messages.info(request, "Nothing changed, so no new version was published.")

    def restore_version(self, obj, version, author):
        return services.rubric_restore_version(rubric=obj, version=version, author=author)


@admin.register(RubricVersion)
class RubricVersionAdmin(admin.ModelAdmin):
    """Published versions are immutable: read-only here."""

    list_display = ["rubric", "version", "author", "created_at"]
    list_select_related = ["rubric"]
    search_fields = ["rubric__name", "changelog"]
    readonly_fields = ["rubric", "version", "author", "changelog", "created_at", "snapshot_pretty"]
    exclude = ["snapshot"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="snapshot")
    def snapshot_pretty(self, obj):
        return pretty_json(obj.snapshot)
