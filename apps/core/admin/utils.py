import json
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin
from django.utils.html import format_html

from apps.core.errors import DomainError
from apps.core.llm.quotas import judge_model_check

if TYPE_CHECKING:
    # For the checker a mixin is a ModelAdmin (it calls ModelAdmin's methods through super());
    # at run time it stays a plain class, mixed in before admin.ModelAdmin.
    ModelAdminMixinBase = admin.ModelAdmin[Any]
else:
    ModelAdminMixinBase = object


def pretty_json(value) -> str:
    """Read-only JSON for the admin: indented, unicode kept readable, escaped by format_html."""
    if value is None:
        return "—"
    return format_html(
        '<pre style="white-space: pre-wrap; margin: 0">{}</pre>',
        json.dumps(value, indent=2, ensure_ascii=False, default=str),
    )


class ViewOnlyAdminMixin(ModelAdminMixinBase):
    """Rows that only services write (runs, results, reviews): the admin shows them, with their
    links and actions, but has no add form and never saves one. The change page stays reachable
    for GET, as the read-only drill-down page."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return request.method in ("GET", "HEAD") and super().has_view_permission(request, obj)


class CollapsibleStackedInline(admin.StackedInline):
    """A stacked inline whose rows collapse to their heading and, past twenty rows, show a page at a
    time (static/evalsite_admin/admin.js, loaded by templates/admin/base_site.html). Every row stays
    in the form, so a save still sees them all: versioned heads publish their whole content."""

    classes = ["evalsite-collapsible"]


def show_for(widget, *types: str):
    """Marks a field as applying only to rows whose `type` select has one of `types`: admin.js hides
    its row for any other type. Returns the widget."""
    widget.attrs["data-evalsite-show-for"] = " ".join(types)
    return widget


def judge_model_clean(model: str) -> str:
    """A form's judge model ("" keeps the judge in force, "heuristic", or an LLM model): the same
    allowance as a run's or a trial's judge, since every judge call is billed to the platform's LLM
    account, so an editor cannot name a model the operator does not allow."""
    model = model.strip()
    if model and model not in ("heuristic", "heuristic:v1"):
        try:
            judge_model_check(model=model)
        except DomainError as exc:
            raise forms.ValidationError(str(exc.detail)) from exc
    return model
