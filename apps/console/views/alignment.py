"""The console's alignment loop: a reviewer starts a trial of a candidate judge for one rubric rule
from the rubric page, follows it on the trial's page (progress, kappa before and after, the items
whose verdict changed), and an editor publishes it when it is better at 95%."""

from urllib.parse import quote

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.core.errors import ConflictError
from apps.core.projects.resolution import project_of
from apps.core.versioning.api import author_of
from apps.core.versioning.selectors import head_data
from apps.rubrics.selectors import rubric_get
from apps.runs.alignment.selectors import MIN_LABELS, changed_items, train_disagreements, trial_get
from apps.runs.alignment.services import trial_publish
from apps.runs.forms import AlignmentTrialForm, MetricTrialForm

from ..access import CONFIGURE, REVIEW
from ..context import console_context
from .common import found_or_404, role_required


@login_required
@require_POST
@role_required(REVIEW)
def trial_start(request, rubric_id):
    rubric = found_or_404(rubric_get, rubric_id, project=project_of(request))
    form = AlignmentTrialForm(request.POST, rubric=rubric, rules=head_data(rubric).get("rules") or [])
    trial = form.start(user=request.user) if form.is_valid() else None
    if trial is None:
        for error in form.refusals():
            messages.error(request, error)
        return redirect(reverse("console:rubric", args=[rubric.pk]) + "#alignment")
    return redirect("console:alignment-trial", trial.trial_id)


@login_required
@require_POST
@role_required(REVIEW)
def metric_trial_start(request):
    form = MetricTrialForm(request.POST, project=project_of(request))
    trial = form.start(user=request.user) if form.is_valid() else None
    if trial is None:
        for error in form.refusals():
            messages.error(request, error)
        agent = request.POST.get("agent_name") or ""
        return redirect(reverse("console:agent-agreement") + (f"?agent={quote(agent)}" if agent else "") + "#alignment")
    return redirect("console:alignment-trial", trial.trial_id)


@login_required
def trial_page(request, trial_id):
    trial = found_or_404(trial_get, trial_id, project=project_of(request))
    return render(
        request,
        "console/alignment_trial.html",
        console_context(
            request,
            title=f"Alignment trial: {trial.rule_id or trial.metric}",
            trial=trial,
            report=trial.report,
            changed=changed_items(trial),
            train=train_disagreements(trial),
            running=trial.in_flight,
            n_labelled=len(trial.train) + len(trial.test),
            min_labels=MIN_LABELS,
        ),
    )


@login_required
@require_POST
@role_required(CONFIGURE)
def trial_publish_view(request, trial_id):
    trial = found_or_404(trial_get, trial_id, project=project_of(request))
    try:
        trial = trial_publish(trial=trial, author=author_of(request))
    except ConflictError as exc:
        messages.error(request, str(exc.detail))
    else:
        published = trial.published or {}
        if "metric_judge" in published:
            whose = trial.agent_name or "every agent without its own"
            messages.success(request, f"The {trial.metric} of {whose} is now graded with the candidate from now on.")
        elif "rule_judge" in published:
            messages.success(
                request, f"Rule {trial.rule_id} is now judged with the candidate in runs created from now on."
            )
        elif published.get("new_version"):
            messages.success(
                request, f"Published version {published['rubric_version']} of the rubric with the new rule text."
            )
        else:
            messages.success(
                request, f"Version {published['rubric_version']} of the rubric already has this rule text."
            )
    return redirect("console:alignment-trial", trial.trial_id)
