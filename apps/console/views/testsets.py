"""The console's "Add to test set": traces chosen on the trace list (several at once), a trace page
or a queue review become items of a new version of one of the project's test sets."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.core.projects.resolution import project_of
from apps.testsets.forms import FromTracesForm
from apps.testsets.schemas import MAX_FROM_TRACES
from apps.traces.selectors import project_traces

from ..access import CONFIGURE
from ..context import console_context
from .common import role_required


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
@role_required(CONFIGURE)
def items_from_traces(request):
    """GET ?session_id=…&session_id=… shows the chosen traces with a field each for what the agent
    should have done; POST publishes them as the next version of the chosen test set and goes to it."""
    project = project_of(request)
    source = request.POST if request.method == "POST" else request.GET
    wanted = list(dict.fromkeys(s for s in source.getlist("session_id") if s.strip()))[:MAX_FROM_TRACES]
    found = {t.session_id: t for t in project_traces(project.pk).filter(session_id__in=wanted)}
    traces = [found[s] for s in wanted if s in found]
    missing = [s for s in wanted if s not in found]
    form = FromTracesForm(
        request.POST if request.method == "POST" else None,
        project=project,
        traces=traces,
        initial_test_set=request.GET.get("test_set"),
    )
    if request.method == "POST" and traces and not missing:
        test_set = form.publish(author=request.user.get_username())
        if test_set is not None:
            messages.success(
                request,
                f"Published version {test_set.current_version} of {test_set.name} with "
                f"{len(traces)} item{'' if len(traces) == 1 else 's'} from traces.",
            )
            return redirect(reverse("admin:testsets_testset_change", args=[test_set.pk]))
    return render(
        request,
        "console/testset_from_traces.html",
        console_context(
            request,
            title="Add to a test set",
            form=form,
            missing=missing,
            no_test_sets=not form.fields["test_set"].queryset.exists(),
        ),
    )
