from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import QuerySet, Sum
from django.utils import timezone

from apps.core.errors import NotFoundError
from apps.core.models import project_pk

from . import fastpath
from .costs import TraceCost
from .filters import TraceFilter
from .models import AgentTrace, ToolCall, TraceSpendDay
from .rows import from_rows, select_columns

_TOOL_CALLS_SQL = f"SELECT {select_columns(ToolCall)} FROM {ToolCall._meta.db_table} WHERE trace_id = %s ORDER BY seq"


_TABLE = ToolCall._meta.db_table
_TOOL_CALL_PAGE_SQL = (
    f"SELECT {select_columns(ToolCall)} FROM {_TABLE} WHERE trace_id = %s AND seq > %s ORDER BY seq LIMIT %s"
)
# Both counts in one pass over the trace's calls (its keys only, no JSON): the calls before the page,
# which gives the page's first position, and all of them. About 30 ms for 60,000 calls on PostgreSQL.
_TOOL_CALL_COUNTS_SQL = (
    f"SELECT COALESCE(SUM(CASE WHEN seq <= %s THEN 1 ELSE 0 END), 0), COUNT(*) FROM {_TABLE} WHERE trace_id = %s"
)
# The distinct agent names, at most %s of them, as a loose index scan written as a recursive query:
# one probe of the agent_name index per name, where SELECT DISTINCT would read every trace (about a
# millisecond at a million traces on PostgreSQL, against seconds). The ORM cannot say WITH RECURSIVE;
# the statement is plain SQL that SQLite runs too, so both databases answer it the same way.
_AGENT_NAMES_SQL = f"""
WITH RECURSIVE agents(name, n) AS (
    SELECT MIN(agent_name), 1 FROM {AgentTrace._meta.db_table} WHERE project_id = %s
    UNION ALL
    SELECT (
        SELECT MIN(agent_name) FROM {AgentTrace._meta.db_table} WHERE project_id = %s AND agent_name > agents.name
    ), n + 1
    FROM agents WHERE agents.name IS NOT NULL AND n < %s
)
SELECT name FROM agents WHERE name IS NOT NULL
"""
MAX_AGENT_CHOICES = 200
# Stored seqs are sort keys, not positions (OTLP leaves gaps to place a late earlier span without
# renumbering the others), and are never below 1: "after 0" is the first page.
FIRST_PAGE = 0


@dataclass(frozen=True)
class ToolCallPage:
    """Part of a trace's tool calls in seq order. Each call carries `position`, its 1-based place in
    the whole trace worked out at read time; `next_after` is the stored seq to page on from, None
    on the last page."""

    calls: list[ToolCall]
    total: int
    next_after: int | None

    @property
    def first_position(self) -> int | None:
        return self.calls[0].position if self.calls else None

    @property
    def last_position(self) -> int | None:
        return self.calls[-1].position if self.calls else None


def tool_call_page_size() -> int:
    return max(1, settings.EVALSITE_TRACE_TOOL_CALLS_PAGE)


def project_traces(project_id: int | None) -> QuerySet[AgentTrace]:
    """The traces of a project (`default` when None: callers without a request, such as the
    contract's in-process functions). Every read of traces starts here."""
    return AgentTrace.objects.filter(project_id=project_pk(project_id))


def trace_find(*, session_id: str, project_id: int | None = None) -> AgentTrace | None:
    """The project's trace of `session_id`, without its tool calls: a trace may hold tens of
    thousands, so readers page them (trace_tool_call_page) or load them on purpose
    (trace.tool_calls.all(), the judges)."""
    return project_traces(project_id).filter(session_id=session_id).first()


def trace_get(*, session_id: str, project_id: int | None = None) -> AgentTrace:
    """The project's trace of `session_id`; NotFoundError, worded the same, when it is another's."""
    trace = trace_find(session_id=session_id, project_id=project_id)
    if trace is None:
        raise NotFoundError(f"No trace found for session {session_id}")
    return trace


def trace_tool_call_list(*, trace: AgentTrace) -> list[ToolCall]:
    """The trace's tool calls in seq order, each with its `position`. A fixed statement instead of
    trace.tool_calls.all(), whose compilation cost more than the rows. Every call is loaded: an
    answer that may meet a big trace pages with trace_tool_call_page instead."""
    calls = from_rows(ToolCall, fastpath.fetch_all(_TOOL_CALLS_SQL, [trace.pk]))
    for position, call in enumerate(calls, start=1):
        call.position = position
    return calls


def tool_call_first_page(calls) -> ToolCallPage:
    """The first page of a list of all of a trace's calls in order (the write answers hand them
    over), each given its `position`, as trace_tool_call_page would read it."""
    calls = list(calls)
    size = tool_call_page_size()
    for position, call in enumerate(calls, start=1):
        call.position = position
    shown = calls[:size]
    return ToolCallPage(calls=shown, total=len(calls), next_after=shown[-1].seq if len(calls) > size else None)


def trace_tool_call_page(*, trace: AgentTrace, after: int = FIRST_PAGE, limit: int | None = None) -> ToolCallPage:
    """At most `limit` (default EVALSITE_TRACE_TOOL_CALLS_PAGE) calls with a stored seq above
    `after`, a keyset on the (trace, seq) unique index, so any page costs the same and memory stays
    at one page whatever the trace holds. A trace that fits in one page costs one statement; a
    paged one a second, which counts. A call stored between two reads (a late span)
    moves the positions after it, as it should: the numbering is the trace's as it is now."""
    limit = limit or tool_call_page_size()
    rows = fastpath.fetch_all(_TOOL_CALL_PAGE_SQL, [trace.pk, after, limit + 1])
    more = len(rows) > limit
    if more:
        rows = rows[:limit]
    if after == FIRST_PAGE and not more:
        before, total = 0, len(rows)
    else:
        before, total = fastpath.fetch_one(_TOOL_CALL_COUNTS_SQL, [after, trace.pk])
    calls = from_rows(ToolCall, rows)
    for position, call in enumerate(calls, start=before + 1):
        call.position = position
    return ToolCallPage(calls=calls, total=total, next_after=calls[-1].seq if more else None)


def trace_agent_names(*, limit: int = MAX_AGENT_CHOICES, project_id: int | None = None) -> list[str]:
    """The distinct agent names of the project's traces in order, at most `limit` (see _AGENT_NAMES_SQL)."""
    project_id = project_pk(project_id)
    return [row[0] for row in fastpath.fetch_all(_AGENT_NAMES_SQL, [project_id, project_id, limit])]


def trace_filter(
    *,
    filters=None,
    queryset: QuerySet | None = None,
    filterset=TraceFilter,
    agent_names: list[str] | None = None,
    project_id: int | None = None,
) -> TraceFilter:
    """The bound FilterSet (`filterset`, TraceFilter or a subclass a higher layer extends, the
    console with the latest rating) over `queryset` (the project's traces by default): its `.qs`
    are the traces, its `.form` the filters with their errors. `agent_names` default to the
    project's (trace_agent_names)."""
    filters = filters or {}
    queryset = project_traces(project_id) if queryset is None else queryset
    if agent_names is None:
        agent_names = trace_agent_names(project_id=project_id)
    return filterset(filters, queryset, agent_names=agent_names)


def trace_list(*, filters=None, project_id: int | None = None) -> QuerySet[AgentTrace]:
    """The project's traces the filters choose (TraceFilter: q, agent, status, source, date_from,
    date_to); a value that does not validate is not applied."""
    return trace_filter(filters=filters, project_id=project_id).qs


def traces_expired_count(project, before) -> int:
    """How many of the project's traces a retention pass would delete now."""
    return AgentTrace.objects.filter(project=project, created_at__lt=before).count()


def trace_spend_per_day(*, project, days: int = 14) -> dict[date, TraceCost]:
    """What `project`'s traces cost per day (the day each started, as it was priced) over the last
    `days` days, from TraceSpendDay: a record of spend that retention does not shrink."""
    since = (timezone.now() - timedelta(days=days)).date()
    rows = TraceSpendDay.objects.filter(project=project, day__gte=since).values_list("day", "amount", "unpriced_calls")
    return {day: TraceCost(amount=amount, unpriced_calls=unpriced) for day, amount, unpriced in rows}


def trace_spend_by_project() -> list[tuple[str, Decimal]]:
    """USD every project's traces' priced calls cost, by project slug (projects with a priced call)."""
    rows = (
        TraceSpendDay.objects.filter(amount__isnull=False)
        .order_by()
        .values("project__slug")
        .annotate(amount=Sum("amount"))
        .order_by("project__slug")
    )
    return [(row["project__slug"], row["amount"]) for row in rows]
