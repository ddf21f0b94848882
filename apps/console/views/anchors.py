"""The console's judge anchors: the project's anchor sets with their newest drift check, a page per
check (the drift report), marking a run's test-set version as anchors from the run page (editors),
and starting a check now (reviewers)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.core.errors import DomainError
from apps.core.projects.resolution import project_of
from apps.runs import services as run_services
from apps.runs.anchors import selectors, services
from apps.testsets.selectors import testset_get

from ..access import CONFIGURE, REVIEW
from ..context import console_context
from .common import found_or_404, role_required


@login_required
def anchor_list(request):
    project = project_of(request)
    rows = selectors.anchor_sets_of(project=project)
    names = selectors.test_set_names(project=project, ids={a.test_set_id for a, _ in rows})
    return render(
        request,
        "console/anchors.html",
        console_context(
            request,
            title="Judge anchors",
            rows=[(anchor_set, check, names.get(anchor_set.test_set_id)) for anchor_set, check in rows],
        ),
    )


@login_required
@require_POST
@role_required(CONFIGURE)
def anchor_mark(request, run_id):
    run = found_or_404(run_services.run_recover, run_id=run_id, project=project_of(request))
    try:
        test_set = testset_get(run.test_set_id, project=project_of(request))
        services.anchor_set_mark(
            test_set=test_set, version=run.test_set_version, run_id=run.run_id, created_by=request.user
        )
    except DomainError as exc:
        messages.error(request, str(exc.detail))
        return redirect("console:run-detail", run.run_id)
    messages.success(
        request,
        f"Version {run.test_set_version} of {test_set.name} is anchors: this run's transcripts are judged "
        "again whenever the judge changes.",
    )
    return redirect("console:anchors")


@login_required
@require_POST
@role_required(REVIEW)
def anchor_check_now(request, anchor_id):
    anchor_set = found_or_404(selectors.anchor_set_get, anchor_id, project=project_of(request))
    try:
        check = services.anchor_check_start(anchor_set=anchor_set, created_by=request.user)
    except DomainError as exc:
        messages.error(request, str(exc.detail))
        return redirect("console:anchors")
    return redirect("console:anchor-check", check.check_id)


@login_required
def anchor_check_page(request, check_id):
    check = found_or_404(selectors.check_get, check_id, project=project_of(request))
    return render(
        request,
        "console/anchor_check.html",
        console_context(
            request,
            title="Judge drift check",
            check=check,
            anchor_set=check.anchor_set,
            report=check.report,
            changed=selectors.changed_verdicts(check),
            running=check.in_flight,
        ),
    )


@login_required
@require_POST
@role_required(CONFIGURE)
def anchor_unmark(request, anchor_id):
    anchor_set = found_or_404(selectors.anchor_set_get, anchor_id, project=project_of(request))
    try:
        services.anchor_set_unmark(anchor_set=anchor_set)
    except DomainError as exc:
        messages.error(request, str(exc.detail))
    else:
        messages.success(request, f"Version {anchor_set.test_set_version} is no longer anchors.")
    return redirect("console:anchors")
