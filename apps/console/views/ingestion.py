"""The console's ingestion page: the session's project's ledger per day and source, so its admins can
see where every span, trace and lifecycle record went, and whether each day balances."""

from datetime import datetime, time, timedelta

from django import forms
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from apps.core.projects.resolution import project_of
from apps.core.redaction import COUNT_KINDS, PLACEHOLDERS, RedactionConfig
from apps.traces.ledger_selectors import DOORS, ingestion_ledger, ingestion_ledger_days, redaction_counts_by_day
from apps.traces.models import IngestionEntry

from ..access import ADMINISTER, may
from ..context import console_context

DEFAULT_DAYS = 14
# The longest window one page shows: a year of days is still a short table.
MAX_DAYS = 366


class LedgerFilterForm(forms.Form):
    since = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
    )
    until = forms.DateField(
        required=False, label="To (included)", widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
    )

    def clean(self):
        data = super().clean()
        for name in ("since", "until"):
            if data.get(name) and not 1970 <= data[name].year < 9000:
                self.add_error(name, "must be between 1970 and 9000")
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            self.add_error("until", "must not be before From")
        elif since and until and (until - since).days >= MAX_DAYS:
            self.add_error("since", f"at most {MAX_DAYS} days at once")
        return data


def _start_of(day) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


@login_required
@require_GET
def ingestion_page(request):
    """Every door's items per day: received, and what became of them (stored, duplicate, rejected
    and dropped with their reasons), with a check mark where they add up. Dates that do not
    validate are shown with their error, and the default window (the last 14 days) is used."""
    form = LedgerFilterForm(request.GET)
    valid = form.is_valid()
    today = timezone.localdate()
    until_day = (form.cleaned_data.get("until") if valid else None) or today
    since_day = (form.cleaned_data.get("since") if valid else None) or until_day - timedelta(days=DEFAULT_DAYS - 1)
    since_day = max(since_day, until_day - timedelta(days=MAX_DAYS - 1))
    since, until = _start_of(since_day), _start_of(until_day + timedelta(days=1))
    project = project_of(request)
    # The project's ledger, to those who administer it (as GET /api/v1/ingestion/ledger, which needs
    # the admin scope); every member sees the project's redaction counts.
    ledger_visible = may(request, ADMINISTER)
    days = ingestion_ledger_days(project=project, since=since, until=until) if ledger_visible else []
    totals = ingestion_ledger(project=project, since=since, until=until) if ledger_visible else {}
    rows = []
    for day in days:
        doors = [day.sources[source] for source in DOORS if not day.sources[source].is_empty]
        rows.append(
            {
                "day": day.day,
                "balanced": day.balanced,
                "doors": doors,
                "online": day.sources[IngestionEntry.Source.ONLINE_EVALUATION],
            }
        )
    # PII redaction (issue 23): the project's setting, and what it replaced per day in this window.
    redaction = RedactionConfig.from_json(project.redaction, strict=False)
    redaction_days = redaction_counts_by_day(project=project, since=since_day, until=until_day)
    if valid:
        # The inputs show the window on screen, the default one included.
        form = LedgerFilterForm(initial={"since": since_day, "until": until_day})
    return render(
        request,
        "console/ingestion.html",
        console_context(
            request,
            title="Ingestion",
            form=form,
            since_day=since_day,
            until_day=until_day,
            rows=rows,
            ledger_visible=ledger_visible,
            totals=[totals[source] for source in DOORS] if ledger_visible else [],
            online=totals.get(IngestionEntry.Source.ONLINE_EVALUATION),
            unbalanced_days=[row["day"] for row in rows if not row["balanced"]],
            filtered=bool(request.GET.get("since") or request.GET.get("until")),
            project=project,
            redaction=redaction,
            redaction_kinds=[(kind, PLACEHOLDERS[kind]) for kind in COUNT_KINDS],
            redaction_days=[{**day, "counts": [day[kind] for kind in COUNT_KINDS]} for day in redaction_days],
        ),
    )
