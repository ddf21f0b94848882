"""The test set editor. Like the rubric editor, every save publishes a version through
testsets.services; import and export use the same code as the API."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from pydantic import ValidationError as PydanticValidationError

from apps.bots.models import Bot
from apps.core.admin.fields import LinesField, pydantic_messages
from apps.core.admin.scoping import ProjectScopedAdmin, ScopedHeadViews, scoped_version_admin
from apps.core.admin.utils import show_for
from apps.core.errors import DomainError
from apps.core.projects.resolution import project_of
from apps.core.versioning.admin import ContentFormSet, ContentInline, VersionedHeadAdmin
from apps.core.versioning.selectors import head_data

from . import services, transfer
from .models import Dataset, DatasetQuestion, TestItem, TestSet, TestSetVersion
from .schemas import TestSetContent


class TestItemForm(forms.ModelForm):
    scripted_turns = LinesField(
        widget=show_for(forms.Textarea(attrs={"rows": 3, "cols": 60}), "scenario"),
        help_text="Scenario only: user turns sent in order, one per line.",
    )
    success_criteria = LinesField(help_text="One criterion per line.")
    should_use_tools = LinesField(rows=2, help_text="Tool names, one per line.")
    should_not_use_tools = LinesField(rows=2, help_text="Tool names, one per line.")
    tags = LinesField(rows=2, help_text="One tag per line.")

    class Meta:
        model = TestItem
        fields = [
            "position",
            "type",
            "name",
            "priority",
            "message",
            "persona",
            "initial_message",
            "max_turns",
            "scripted_turns",
            "success_criteria",
            "should_use_tools",
            "should_not_use_tools",
            "expected_outcome",
            "tags",
        ]
        widgets = {
            "message": show_for(forms.Textarea(attrs={"rows": 2, "cols": 60}), "single_turn"),
            "persona": show_for(forms.Textarea(attrs={"rows": 2, "cols": 60}), "scenario"),
            "initial_message": show_for(forms.Textarea(attrs={"rows": 2, "cols": 60}), "scenario"),
            "max_turns": show_for(forms.NumberInput(), "scenario"),
            "expected_outcome": forms.Textarea(attrs={"rows": 2, "cols": 60}),
        }


def item_data(form) -> dict:
    cleaned = form.cleaned_data
    data = {
        "type": cleaned.get("type"),
        "name": cleaned.get("name", ""),
        "inputs": {
            "message": cleaned.get("message", ""),
            "persona": cleaned.get("persona", ""),
            "initial_message": cleaned.get("initial_message", ""),
            "max_turns": cleaned.get("max_turns"),
            "scripted_turns": cleaned.get("scripted_turns", []),
        },
        "expected": {
            "success_criteria": cleaned.get("success_criteria", []),
            "should_use_tools": cleaned.get("should_use_tools", []),
            "should_not_use_tools": cleaned.get("should_not_use_tools", []),
            "expected_outcome": cleaned.get("expected_outcome", ""),
        },
        "tags": cleaned.get("tags", []),
        "priority": cleaned.get("priority") or "medium",
    }
    if form.instance.pk:
        data["item_id"] = str(form.instance.item_id)
        # Where the item came from is not edited here, and a save keeps it.
        data["source_session_id"] = form.instance.source_session_id
        data["source_result_id"] = form.instance.source_result_id
    return data


class TestItemFormSet(ContentFormSet):
    content_schema = TestSetContent

    def content_data(self, head, rows):
        return {
            "agent_id": head.bot.agent_id if head.bot_id else "",
            "name": head.name,
            "description": head.description,
            "items": [item_data(f) for f in rows],
        }


class TestItemInline(ContentInline):
    model = TestItem
    form = TestItemForm
    formset = TestItemFormSet
    readonly_fields = ["item_id", "source"]

    @admin.display(description="Made from")
    def source(self, item):
        """The trace or run result the item came from, linked to its console page."""
        if item.source_session_id:
            url = reverse("console:trace", args=[item.source_session_id])
            return format_html('trace <a href="{}">{}</a>', url, item.source_session_id)
        if item.source_result_id:
            url = reverse("console:result-detail", args=[item.source_result_id])
            return format_html('run result <a href="{}">{}</a>', url, item.source_result_id)
        return "—"


class ImportForm(forms.Form):
    file = forms.FileField()
    format = forms.ChoiceField(choices=[(f, f.upper()) for f in transfer.FORMATS])


class NewTestSetImportForm(ImportForm):
    bot = forms.ModelChoiceField(
        label="Bot",
        queryset=Bot.objects.all(),
        required=False,
        help_text="Needed unless the JSON file names the bot (its agent_id).",
    )
    name = forms.CharField(required=False, help_text="Needed unless the JSON file names it.")


@admin.register(TestSet)
class TestSetAdmin(ScopedHeadViews, ProjectScopedAdmin, VersionedHeadAdmin):
    inlines = [TestItemInline]
    rows = "items"
    more_fields = ["files"]
    change_list_template = "admin/testsets/testset/change_list.html"
    search_fields = ["name", "description", "bot__name", "bot__agent_id", "items__name"]

    @admin.display(description="files")
    def files(self, obj):
        if obj is None or not obj.current_version:
            return "—"
        links = format_html_join(
            " · ",
            '<a href="{}">{}</a>',
            ((reverse("admin:testsets_testset_export", args=[obj.pk, fmt]), fmt.upper()) for fmt in transfer.FORMATS),
        )
        return format_html(
            'Export: {} — <a href="{}">Import a new version from a file</a>',
            links,
            reverse("admin:testsets_testset_import_version", args=[obj.pk]),
        )

    def get_urls(self):
        return [
            path("import/", self.admin_site.admin_view(self.import_view), name="testsets_testset_import"),
            path(
                "<path:object_id>/export/<str:fmt>/",
                self.admin_site.admin_view(self.export_view),
                name="testsets_testset_export",
            ),
            path(
                "<path:object_id>/import/",
                self.admin_site.admin_view(self.import_view),
                name="testsets_testset_import_version",
            ),
        ] + super().get_urls()

    def export_view(self, request, object_id, fmt):
        test_set = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not self.has_view_permission(request, test_set) or fmt not in transfer.FORMATS:
            raise PermissionDenied
        data = head_data(test_set)
        response = HttpResponse(
            transfer.export_test_set(data, fmt), content_type=f"{transfer.FORMATS[fmt]}; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="test-set-{test_set.pk}-v{data["version"]}.{fmt}"'
        return response

    def import_view(self, request, object_id=None):
        test_set = get_object_or_404(self.get_queryset(request), pk=object_id) if object_id else None
        allowed = self.has_change_permission(request, test_set) if test_set else self.has_add_permission(request)
        if not allowed:
            raise PermissionDenied
        form_class = ImportForm if test_set else NewTestSetImportForm
        form = form_class(request.POST or None, request.FILES or None)
        if "bot" in form.fields:
            # Only the session's project's bots: the new test set is of that project.
            form.fields["bot"].queryset = Bot.objects.of_project(project_of(request))
        if request.method == "POST" and form.is_valid():
            bot = form.cleaned_data.get("bot")
            try:
                imported, published, warnings = services.testset_import(
                    raw=form.cleaned_data["file"].read(),
                    fmt=form.cleaned_data["format"],
                    project=project_of(request),
                    test_set=test_set,
                    agent_id=bot.agent_id if bot else None,
                    name=form.cleaned_data.get("name") or None,
                    author=request.user.get_username(),
                )
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
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "form": form,
            "original": test_set,
            "title": f"Import a new version of {test_set}" if test_set else "Import a test set",
        }
        return TemplateResponse(request, "admin/testsets/testset/import.html", context)

    def before_publish(self, request, content):
        warnings = services.testset_tool_warnings(
            agent_id=content.agent_id, items=content.items, project=project_of(request)
        )
        for warning in warnings:
            messages.warning(request, warning)

    def create_head(self, *, head, content, changelog, author):
        # A test set is of its bot's project.
        return services.testset_create(
            content=content, project=head.bot.project_id, changelog=changelog, author=author, test_set_id=head.pk
        )

    def publish_head(self, *, head, content, changelog, author, expected_version=None):
        return services.testset_publish_version(
            test_set=head, content=content, changelog=changelog, author=author, expected_version=expected_version
        )


class DatasetQuestionInline(admin.TabularInline):
    model = DatasetQuestion
    extra = 1
    fields = ["position", "question", "expected_answer", "question_id"]
    readonly_fields = ["question_id"]
    ordering = ["position", "id"]


@admin.register(Dataset)
class DatasetAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    list_display = ["name", "bot", "question_count", "updated_at"]
    list_select_related = ["bot"]
    search_fields = ["name", "questions__question"]
    readonly_fields = ["dataset_id"]
    inlines = [DatasetQuestionInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(question_total=Count("questions"))

    @admin.display(description="questions", ordering="question_total")
    def question_count(self, obj):
        return obj.question_total


scoped_version_admin(TestSetVersion, "test_set")
