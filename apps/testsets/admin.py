"""The test set editor. Like the rubric editor, every save publishes a version through
testsets.services; import and export use the same code as the API."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from pydantic import ValidationError as PydanticValidationError

from apps.bots.models import Bot
from apps.core.admin_forms import LinesField, pydantic_messages
from apps.core.admin_utils import pretty_json
from apps.core.admin_versioning import VersionHistoryAdminMixin
from apps.core.errors import DomainError

from . import selectors, services, transfer
from .models import Dataset, DatasetQuestion, TestItem, TestSet, TestSetVersion
from .schemas import TestSetContent


class TestItemForm(forms.ModelForm):
    scripted_turns = LinesField(help_text="Scenario only: user turns sent in order, one per line.")
    success_criteria = LinesField(help_text="One criterion per line.")
    should_use_tools = LinesField(rows=2, help_text="Tool names, one per line.")
    should_not_use_tools = LinesField(rows=2, help_text="Tool names, one per line.")
    tags = LinesField(rows=2, help_text="One tag per line.")

    class Meta:
        model = TestItem
        fields = ["position", "type", "name", "priority", "message", "persona", "initial_message", "max_turns",
                  "scripted_turns", "success_criteria", "should_use_tools", "should_not_use_tools",
                  "expected_outcome", "tags"]
        widgets = {name: forms.Textarea(attrs={"rows": 2, "cols": 60})
                   for name in ("message", "persona", "initial_message", "expected_outcome")}


def item_data(form) -> dict:
    cleaned = form.cleaned_data
    data = {
        "type": cleaned.get("type"),
        "name": cleaned.get("name", ""),
        "inputs": {"message": cleaned.get("message", ""), "persona": cleaned.get("persona", ""),
                   "initial_message": cleaned.get("initial_message", ""), "max_turns": cleaned.get("max_turns"),
                   "scripted_turns": cleaned.get("scripted_turns", [])},
        "expected": {"success_criteria": cleaned.get("success_criteria", []),
                     "should_use_tools": cleaned.get("should_use_tools", []),
                     "should_not_use_tools": cleaned.get("should_not_use_tools", []),
                     "expected_outcome": cleaned.get("expected_outcome", "")},
        "tags": cleaned.get("tags", []),
        "priority": cleaned.get("priority") or "medium",
    }
    if form.instance.pk:
        data["item_id"] = str(form.instance.item_id)
    return data


class TestItemFormSet(forms.BaseInlineFormSet):
    content: TestSetContent | None = None

    def clean(self):
        super().clean()
        if any(self.errors):
            return
        kept = [f for f in self.forms if f.cleaned_data and not f.cleaned_data.get("DELETE")]
        kept.sort(key=lambda f: (f.cleaned_data.get("position") or 0, self.forms.index(f)))
        test_set = self.instance
        try:
            self.content = TestSetContent.model_validate({
                "agent_id": test_set.agent.agent_id if test_set.agent_id else "", "name": test_set.name,
                "description": test_set.description, "items": [item_data(f) for f in kept]})
        except PydanticValidationError as exc:
            raise ValidationError(pydantic_messages(exc)) from None


class TestItemInline(admin.StackedInline):
    model = TestItem
    form = TestItemForm
    formset = TestItemFormSet
    extra = 0
    ordering = ["position", "id"]
    readonly_fields = ["item_id"]


class TestSetForm(forms.ModelForm):
    changelog = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
                                help_text="What this change does; kept with the version it publishes.")
    based_on_version = forms.IntegerField(required=False, widget=forms.HiddenInput)

    class Meta:
        model = TestSet
        fields = ["agent", "name", "description"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["based_on_version"].initial = self.instance.current_version

    def clean(self):
        cleaned = super().clean()
        based_on = cleaned.get("based_on_version")
        if not self.instance._state.adding and based_on is not None:
            current = TestSet.objects.filter(pk=self.instance.pk).values_list("current_version", flat=True).first()
            if current is not None and current != based_on:
                raise forms.ValidationError(
                    f"Someone published version {current} while you edited version {based_on}. "
                    "Reload the page and apply your change again.")
        return cleaned


class ImportForm(forms.Form):
    file = forms.FileField()
    format = forms.ChoiceField(choices=[(f, f.upper()) for f in transfer.FORMATS])


class NewTestSetImportForm(ImportForm):
    agent = forms.ModelChoiceField(queryset=Bot.objects.all(), required=False,
                                   help_text="Needed unless the JSON file names agent_id.")
    name = forms.CharField(required=False, help_text="Needed unless the JSON file names it.")


@admin.register(TestSet)
class TestSetAdmin(VersionHistoryAdminMixin, admin.ModelAdmin):
    form = TestSetForm
    inlines = [TestItemInline]
    change_list_template = "admin/testsets/testset/change_list.html"
    list_display = ["name", "agent", "current_version", "item_count", "updated_at"]
    list_select_related = ["agent"]
    list_filter = ["agent"]
    search_fields = ["name", "description", "agent__name", "agent__agent_id", "items__name"]
    readonly_fields = ["test_set_id", "current_version", "version_history_link", "files"]
    fieldsets = [
        (None, {"fields": ["test_set_id", "agent", "name", "description", "current_version", "version_history_link",
                           "files"]}),
        ("Publish", {"fields": ["changelog", "based_on_version"]}),
    ]
    version_model = TestSetVersion
    version_parent_field = "test_set"

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(item_total=Count("items"))

    @admin.display(description="items", ordering="item_total")
    def item_count(self, obj):
        return obj.item_total

    @admin.display(description="files")
    def files(self, obj):
        if obj is None or not obj.current_version:
            return "—"
        links = format_html_join(" · ", '<a href="{}">{}</a>', (
            (reverse("admin:testsets_testset_export", args=[obj.pk, fmt]), fmt.upper()) for fmt in transfer.FORMATS))
        return format_html('Export: {} — <a href="{}">Import a new version from a file</a>', links,
                           reverse("admin:testsets_testset_import_version", args=[obj.pk]))

    def get_urls(self):
        return [
            path("import/", self.admin_site.admin_view(self.import_view), name="testsets_testset_import"),
            path("<path:object_id>/export/<str:fmt>/", self.admin_site.admin_view(self.export_view),
                 name="testsets_testset_export"),
            path("<path:object_id>/import/", self.admin_site.admin_view(self.import_view),
                 name="testsets_testset_import_version"),
        ] + super().get_urls()

    def export_view(self, request, object_id, fmt):
        test_set = get_object_or_404(TestSet, pk=object_id)
        if not self.has_view_permission(request, test_set) or fmt not in transfer.FORMATS:
            raise PermissionDenied
        data = selectors.test_set_data(test_set)
        response = HttpResponse(transfer.export_test_set(data, fmt),
                                content_type=f"{transfer.FORMATS[fmt]}; charset=utf-8")
        response["Content-Disposition"] = (f'attachment; filename="test-set-{test_set.pk}-v{data["version"]}.{fmt}"')
        return response

    def import_view(self, request, object_id=None):
        test_set = get_object_or_404(TestSet, pk=object_id) if object_id else None
        allowed = self.has_change_permission(request, test_set) if test_set else self.has_add_permission(request)
        if not allowed:
            raise PermissionDenied
        form_class = ImportForm if test_set else NewTestSetImportForm
        form = form_class(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            agent = form.cleaned_data.get("agent")
            try:
                imported, published, warnings = services.test_set_import(
                    raw=form.cleaned_data["file"].read(), fmt=form.cleaned_data["format"], test_set=test_set,
                    agent_id=agent.agent_id if agent else None, name=form.cleaned_data.get("name") or None,
                    author=request.user.get_username())
            except PydanticValidationError as exc:
                form.add_error(None, pydantic_messages(exc))
            except DomainError as exc:
                form.add_error(None, exc.detail)
            else:
                for warning in warnings:
                    messages.warning(request, warning)
                if published:
                    messages.success(request, f"Imported as version {imported.current_version}.")
                else:
                    messages.info(request, "The file matches the current version; nothing was published.")
                return HttpResponseRedirect(reverse("admin:testsets_testset_change", args=[imported.pk]))
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "form": form,
                   "original": test_set,
                   "title": f"Import a new version of {test_set}" if test_set else "Import a test set"}
        return TemplateResponse(request, "admin/testsets/testset/import.html", context)

    def save_form(self, request, form, change):
        test_set = form.save(commit=False)
        test_set._based_on_version = form.cleaned_data.get("based_on_version") if change else None
        test_set._changelog = form.cleaned_data.get("changelog", "")
        return test_set

    def save_model(self, request, obj, form, change):
        """Nothing here: the head is written when the version is published, in save_related."""

    def save_related(self, request, form, formsets, change):
        content = next(fs.content for fs in formsets if isinstance(fs, TestItemFormSet))
        test_set = form.instance
        author = request.user.get_username()
        for warning in services.tool_warnings(content.agent_id, content.items):
            messages.warning(request, warning)
        try:
            if not change:
                services.test_set_create(content=content, changelog=test_set._changelog, author=author,
                                         test_set_id=test_set.pk)
                return
            _test_set, published = services.test_set_publish_version(
                test_set=test_set, content=content, changelog=test_set._changelog, author=author,
                expected_version=test_set._based_on_version)
        except DomainError as exc:
            self.publish_failed(request, exc.detail)
            return
        if not published:
            messages.info(request, "Nothing changed, so no new version was published.")

    def restore_version(self, obj, version, author):
        return services.test_set_restore_version(test_set=obj, version=version, author=author)


@admin.register(TestSetVersion)
class TestSetVersionAdmin(admin.ModelAdmin):
    list_display = ["test_set", "version", "author", "created_at"]
    list_select_related = ["test_set"]
    search_fields = ["test_set__name", "changelog"]
    readonly_fields = ["test_set", "version", "author", "changelog", "created_at", "snapshot_pretty"]
    exclude = ["snapshot"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="snapshot")
    def snapshot_pretty(self, obj):
        return pretty_json(obj.snapshot)


class DatasetQuestionInline(admin.TabularInline):
    model = DatasetQuestion
    extra = 1
    fields = ["position", "question", "expected_answer", "question_id"]
    readonly_fields = ["question_id"]
    ordering = ["position", "id"]


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "agent", "question_count", "updated_at"]
    list_select_related = ["agent"]
    search_fields = ["name", "questions__question"]
    readonly_fields = ["dataset_id"]
    inlines = [DatasetQuestionInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(question_total=Count("questions"))

    @admin.display(description="questions", ordering="question_total")
    def question_count(self, obj):
        return obj.question_total
