"""The trace list's filters as one FilterSet (HackSoft style: selectors.trace_list applies it to a
queryset). A value that does not validate (an unknown agent, a date that is not one) is left out
of `cleaned_data`, so the bound form shows its error and the filter is simply not applied, rather
than answering with no traces.

The text search `q` matches any part of an agent name in any case, any part of a session id, and
(three characters or more) any part of the query text in any case. On PostgreSQL the trigram
indexes of migrations traces.0004 and 0005 serve the substring matches at any depth; elsewhere
(SQLite, or PostgreSQL without pg_trgm) they are searched among the newest
TRACE_TEXT_SEARCH_WINDOW traces only, so a search costs the same at a thousand traces as at a
million, while a session id is still matched exactly and by its beginning on its unique index.
"""

from datetime import UTC, date, datetime, time, timedelta

import django_filters
from django import forms
from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from . import fastpath
from .models import TRACE_QUERY_TRGM_INDEX, TRACE_SESSION_TRGM_INDEX, AgentTrace

# Without the trigram indexes the query text, and any part of a session id, are searched in this
# many newest traces only (see the module docstring).
TRACE_TEXT_SEARCH_WINDOW = 20_000
# Trigram indexes cannot serve shorter needles; the query text is searched for three characters or more.
TRIGRAM_MIN_LENGTH = 3
TRIGRAM_INDEXES = (TRACE_QUERY_TRGM_INDEX, TRACE_SESSION_TRGM_INDEX)
ANY = "any"  # the label of a filter's empty choice

_PG_INDEXES_SQL = "SELECT count(*) FROM pg_indexes WHERE indexname = ANY(%s)"
_trigram_index: dict[str, bool] = {}


def trace_text_search_indexed() -> bool:
    """Whether the query text and the session id have the trigram indexes of migrations traces.0004
    and 0005 (PostgreSQL with pg_trgm); asked once per process and database. The probe of
    pg_indexes is one of fastpath's fenced statements, behind its one vendor check."""
    alias = connection.alias
    if alias not in _trigram_index:
        found = False
        if fastpath.enabled():
            found = fastpath.fetch_one(_PG_INDEXES_SQL, [list(TRIGRAM_INDEXES)])[0] == len(TRIGRAM_INDEXES)
        _trigram_index[alias] = found
    return _trigram_index[alias]


def text_search(q: str, agent_names: list[str]) -> tuple[Q, str]:
    """The condition for traces whose session id contains `q`, whose agent name contains it in any
    case, or (three characters or more) whose query text contains it in any case; and how it
    searches: "trigram" (the indexes, at any depth) or "window" (the newest traces)."""
    needle = q.casefold()
    agents = [name for name in agent_names if needle in name.casefold()]
    matched = Q(agent_name__in=agents) if agents else Q(pk__in=[])
    found = Q(session_id__icontains=q)
    if len(q) >= TRIGRAM_MIN_LENGTH:
        found |= Q(user_query__icontains=q)
    if trace_text_search_indexed():
        return matched | found, "trigram"
    matched |= Q(session_id=q) | Q(session_id__startswith=q)
    window = AgentTrace.objects.order_by("-start_time", "-id").values("pk")[:TRACE_TEXT_SEARCH_WINDOW]
    return matched | (found & Q(pk__in=window)), "window"


def day_start(day: date) -> datetime:
    """Dates filter whole UTC days."""
    return timezone.make_aware(datetime.combine(day, time.min), UTC)


class TraceFilter(django_filters.FilterSet):
    """The trace list's filters. `agent_names` are the agents to choose among and the names the
    search matches agents among (selectors.trace_agent_names()). After `.qs`, `text_search` says
    how `q` was searched ("" when it was not)."""

    q = django_filters.CharFilter(method="filter_q", label="Search", max_length=255)
    agent = django_filters.ChoiceFilter(field_name="agent_name", empty_label=ANY)
    status = django_filters.ChoiceFilter(choices=AgentTrace.Status.choices, empty_label=ANY)
    source = django_filters.ChoiceFilter(choices=AgentTrace.Source.choices, empty_label=ANY)
    date_from = django_filters.DateFilter(
        method="filter_date_from", label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    date_to = django_filters.DateFilter(
        method="filter_date_to", label="To", widget=forms.DateInput(attrs={"type": "date"})
    )

    class Meta:
        model = AgentTrace
        fields: list[str] = []  # only the filters declared above

    def __init__(self, data=None, queryset=None, *, agent_names: list[str], **kwargs):
        super().__init__(data, queryset, **kwargs)
        self.agent_names = agent_names
        self.text_search = ""
        self.filters["agent"].extra["choices"] = [(name, name or "(unnamed)") for name in agent_names]

    def filter_q(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        condition, self.text_search = text_search(value, self.agent_names)
        return queryset.filter(condition)

    def filter_date_from(self, queryset: QuerySet, name: str, value: date) -> QuerySet:
        return queryset.filter(start_time__gte=day_start(value))

    def filter_date_to(self, queryset: QuerySet, name: str, value: date) -> QuerySet:
        return queryset.filter(start_time__lt=day_start(value + timedelta(days=1)))

    @property
    def filtered(self) -> bool:
        """Whether any filter that validated has a value (the page offers to clear them)."""
        if not self.is_bound:
            return False
        self.form.is_valid()  # cleaned_data holds only the values that validated
        return any(value not in (None, "") for value in self.form.cleaned_data.values())
