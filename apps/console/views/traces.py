"""The console's trace pages: the list (search, filters, keyset pages) and one session's timeline."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from apps.agentic.selectors import evaluation_links, evaluation_list, metric_agreement
from apps.agentic.services import evaluation_create_for_session
from apps.core.errors import DomainError
from apps.core.projects.resolution import project_of
from apps.runs.alignment.selectors import MIN_LABELS, metric_trial_list
from apps.runs.forms import MetricTrialForm
from apps.traces import filters as trace_filters
from apps.traces.costs import stored_cost
from apps.traces.selectors import FIRST_PAGE, trace_agent_names, trace_find, trace_tool_call_page

from .. import selectors
from ..context import console_context
from .common import scope_required


@login_required
@require_GET
def trace_list(request):
    """Agent sessions newest first, or sorted by a column (?sort=agent, ?sort=-duration). The filters
    that do not validate (an unknown agent, a date that is not one) are shown with their error and
    left out, rather than answering with no traces; an unknown sort is the default order."""
    sort = selectors.trace_sort(request.GET.get("sort"))
    page = selectors.trace_list_page(
        filters=request.GET,
        sort=sort,
        after=selectors.TraceCursor.decode(request.GET.get("after", ""), sort=sort),
        before=selectors.TraceCursor.decode(request.GET.get("before", ""), sort=sort),
        project_id=project_of(request).pk,
    )
    for trace in page.traces:
        # The cost as the run tables' `usd` filter reads one: "—" when nothing priced, never $0.
        trace.spend = stored_cost(trace)
    # Pages keep the filters and the sort; a sort link keeps the filters and starts at the first page.
    query = request.GET.copy()
    for key in ("after", "before", "sort"):
        query.pop(key, None)
    sort_query = query.urlencode()
    if sort.param != selectors.TRACE_DEFAULT_SORT:
        query["sort"] = sort.param
    return render(
        request,
        "console/trace_list.html",
        console_context(
            request,
            title="Traces",
            form=page.filterset.form,
            page=page,
            filter_query=query.urlencode(),
            sort_query=sort_query,
            sort=sort,
            default_order=sort.param == selectors.TRACE_DEFAULT_SORT,
            filtered=page.filterset.filtered,
            text_window=trace_filters.TRACE_TEXT_SEARCH_WINDOW,
        ),
    )


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
@scope_required("evaluate", methods=("POST",))
def trace_page(request, session_id):
    """The session as a timeline (query, intent, each tool call with its timing, final answer) and
    the evaluations of it. A POST is "Evaluate now": the page's own address, because a session id
    may hold slashes and so could swallow any path put after it."""
    trace = trace_find(session_id=session_id, project_id=project_of(request).pk)
    if trace is None:
        raise Http404(f"No trace found for session {session_id}")
    if request.method == "POST":
        return _evaluate_now(request, trace)
    page = trace_tool_call_page(trace=trace, after=_after(request))
    for call in page.calls:
        call.offset_ms = (call.timestamp - trace.start_time).total_seconds() * 1000 if call.timestamp else None
    return render(
        request,
        "console/trace.html",
        console_context(
            request,
            title=f"Trace {trace.session_id}",
            trace=trace,
            calls=page.calls,
            page=page,
            later_page=page.first_position is not None and page.first_position > 1,
            remaining=page.total - (page.last_position or 0),
            page_size=len(page.calls),
            dropped=_dropped(trace),
            cost=stored_cost(trace),
            evaluations=evaluation_list(session_id=trace.session_id, project_id=trace.project_id),
            admin_url=reverse("admin:traces_agenttrace_change", args=[trace.pk]),
        ),
    )


# The order the truncated banner names what was dropped in (jsonb keeps its own key order).
DROPPED_ORDER = ("tool_calls", "spans", "attribute_bytes")


def _dropped(trace) -> list[tuple[str, int]]:
    dropped = trace.dropped or {}
    kinds = sorted(dropped, key=lambda k: (DROPPED_ORDER.index(k) if k in DROPPED_ORDER else len(DROPPED_ORDER), k))
    return [(kind.replace("_", " "), dropped[kind]) for kind in kinds if dropped[kind]]


def _after(request) -> int:
    """The tool-call cursor of "show more" (a stored seq); anything else is the first page."""
    raw = request.GET.get("after", "")
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 18 else FIRST_PAGE


def _evaluate_now(request, trace):
    """The agentic evaluation the API's evaluate/session runs, with the configured judge. An
    identical earlier verdict (same judge, same trace content) is kept rather than stored twice."""
    try:
        outcome = evaluation_create_for_session(session_id=trace.session_id, project_id=trace.project_id)
    except DomainError as exc:
        messages.error(request, f"Not evaluated: {exc.detail}")
    else:
        evaluation = outcome.evaluation
        if outcome.reused:
            messages.info(
                request,
                f"Already evaluated by {evaluation.judge} with this trace as it is now: that "
                f"evaluation stands ({evaluation.rating or 'not rated'}).",
            )
        else:
            overall = "—" if evaluation.overall_score is None else f"{evaluation.overall_score:.2f}"
            messages.success(
                request, f"Evaluated by {evaluation.judge}: {evaluation.rating or 'not rated'}, overall {overall}."
            )
    return redirect(reverse("console:trace", args=[trace.session_id]) + "#evaluations")


@login_required
@require_GET
def agent_agreement(request):
    """How each judge agrees with the reviewers on each agentic metric, for one agent (?agent=) or
    all of the project's: kappa with its interval, the confusion, the disagreeing evaluations."""
    project_id = project_of(request).pk
    agents = trace_agent_names(project_id=project_id)
    agent = request.GET.get("agent") or None
    if agent not in agents:
        agent = None
    rows = metric_agreement(project_id=project_id, agent_name=agent)
    links = evaluation_links({s for _judge, row in rows for s in row.disagreements})
    for _judge, row in rows:
        row.links = [links[s] for s in row.disagreements if s in links][:10]
    return render(
        request,
        "console/agent_agreement.html",
        console_context(
            request,
            title="Judge agreement",
            agents=agents,
            agent=agent,
            rows=rows,
            trial_form=MetricTrialForm(project=project_of(request), initial={"agent_name": agent or ""}),
            trials=metric_trial_list(project=project_of(request), agent_name=agent),
            min_labels=MIN_LABELS,
        ),
    )
