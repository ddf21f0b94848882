from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from apps.console.context import console_context

from .selectors import trace_evaluations, trace_get


@login_required
@require_GET
def trace_page(request, session_id):
    """The session as a timeline (query, intent, each tool call with its timing, final answer) and
    the evaluations of it."""
    trace = trace_get(session_id=session_id)
    if trace is None:
        raise Http404(f"No trace found for session {session_id}")
    calls = list(trace.tool_calls.all())
    for call in calls:
        call.offset_ms = (call.timestamp - trace.start_time).total_seconds() * 1000 if call.timestamp else None
    return render(request, "console/trace.html", console_context(
        request, title=f"Trace {trace.session_id}", trace=trace, calls=calls,
        evaluations=trace_evaluations(session_id=trace.session_id),
        admin_url=reverse("admin:traces_agenttrace_change", args=[trace.pk])))
