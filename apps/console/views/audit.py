"""The console's audit page: the project's audit trail, newest first, filtered and paged (the
project's admins and superusers only, as GET /api/v1/audit)."""

import json
from datetime import UTC, datetime, time, timedelta

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.core.audit import selectors
from apps.core.models import SCOPE_ADMIN
from apps.core.projects.resolution import project_of

from ..context import console_context
from .common import scope_required

EVENTS_PER_PAGE = 50
ANY = [("", "any")]


class AuditFilterForm(forms.Form):
    action = forms.ChoiceField(required=False)
    object_type = forms.ChoiceField(required=False, label="Object type")
    object_id = forms.CharField(required=False, max_length=255, label="Object id")
    actor = forms.CharField(required=False, max_length=200, help_text="a username, or key:<prefix>")
    since = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="To (included)", widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, actions: list[str], object_types: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        # Only what this project's trail holds: no other project's vocabulary leaks through a choice.
        self.fields["action"].choices = ANY + [(a, a) for a in actions]
        self.fields["object_type"].choices = ANY + [(t, t) for t in object_types]

    def filters(self) -> dict:
        """The selector's filters from the fields that validated (days are whole UTC days)."""
        data = {k: v for k, v in self.cleaned_data.items() if v not in (None, "")}
        if "since" in data:
            data["since"] = datetime.combine(data["since"], time.min, UTC)
        if "until" in data:
            data["until"] = datetime.combine(data["until"] + timedelta(days=1), time.min, UTC)
        return data


# A value longer than this is cut on the page (the API answers it whole).
VALUE_CHARS = 160


def _shown(value) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def change_rows(changes: dict) -> list[tuple[str, str | None, str | None]]:
    """(field, before, after) as the page shows them: JSON for what is not text. A list, not the
    dict, for the template: a field named "items" (a test set's) would shadow dict.items there."""
    return [(name, _shown(pair[0]), _shown(pair[1])) for name, pair in changes.items()]


@login_required
@scope_required(SCOPE_ADMIN)
@require_GET
def audit_page(request):
    project = project_of(request)
    form = AuditFilterForm(
        request.GET,
        actions=selectors.audit_actions(project=project),
        object_types=selectors.audit_object_types(project=project),
    )
    filters = form.filters() if form.is_valid() else {}
    events = selectors.audit_events_filtered(project=project, filters=filters)
    page = Paginator(events, EVENTS_PER_PAGE).get_page(request.GET.get("page"))
    rows = [(event, change_rows(event.changes)) for event in page.object_list]
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "console/audit.html",
        console_context(
            request,
            title="Audit trail",
            project=project,
            form=form,
            page=page,
            rows=rows,
            query=query.urlencode(),
            filtered=any(request.GET.get(name) for name in form.fields),
        ),
    )
