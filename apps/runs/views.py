"""The console's run pages: list, launch, run page with its results, result drill-down with human
review, comparison of two runs, and a rubric's judge agreement. Reads go through the selectors,
writes (launch, cancel, review) through the services, exactly as the API does."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponseForbidden, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from apps.console.context import console_context
from apps.core.charts import bar_chart
from apps.core.errors import DomainError, NotFoundError
from apps.core.permissions import scopes_of

from . import selectors, services, sources
from .forms import RunLaunchForm
from .judging.aggregate import SCOPES
from .models import EvaluationRun
from .reviews import human_passed, in_force, reviewed_verdicts

RESULTS_PER_PAGE = 50
RUNS_PER_PAGE = 50


def _run_or_404(run_id) -> EvaluationRun:
    try:
        return services.run_get_recovered(run_id=run_id)
    except NotFoundError as exc:
        raise Http404(exc.detail) from exc


def _lacks_scope(request, scope: str):
    """The console refuses what the API would refuse the same user (apps.core.permissions)."""
    if scope in scopes_of(request):
        return None
    return HttpResponseForbidden(f"Your account lacks the '{scope}' scope.")


def _bool_param(value: str | None) -> bool | None:
    return {"true": True, "false": False}.get((value or "").lower())


@login_required
@require_GET
def run_list(request):
    runs = selectors.runs_with_bot_names()
    agent_id = request.GET.get("agent_id") or ""
    status = request.GET.get("status") or ""
    if agent_id:
        runs = runs.filter(agent_id=agent_id)
    if status:
        runs = runs.filter(status=status)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "console/run_list.html", console_context(
        request, title="Evaluation runs", page=page, agent_id=agent_id, status=status,
        statuses=EvaluationRun.Status.values))


class LaunchForm(RunLaunchForm):
    agent_id = forms.ChoiceField(label="Bot")
    test_set_id = forms.ChoiceField(label="Test set")
    rubric_id = forms.ChoiceField(label="Rubric", required=False)
    concurrency = forms.IntegerField(min_value=1, max_value=services.MAX_CONCURRENCY, initial=3)
    component_scope_filter = forms.ChoiceField(label="Component scope", required=False,
                                               choices=[("", "all scopes")] + [(s, s) for s in SCOPES])

    def __init__(self, *args, **kwargs):
        from apps.bots.models import Bot
        from apps.rubrics.models import Rubric
        from apps.testsets.models import TestSet

        super().__init__(*args, **kwargs)
        self.fields["agent_id"].choices = [(b.agent_id, f"{b.name} ({b.adapter})")
                                           for b in Bot.objects.order_by("name")]
        self.fields["test_set_id"].choices = [(str(t.pk), f"{t.name} (v{t.current_version})")
                                              for t in TestSet.objects.order_by("name")]
        self.fields["rubric_id"].choices = [("", "no rubric")] + [
            (str(r.pk), f"{r.name} (v{r.current_version})") for r in Rubric.objects.order_by("name")]


@login_required
def run_launch(request):
    if denied := _lacks_scope(request, "evaluate"):
        return denied
    form = LaunchForm(request.POST or None, initial=request.GET or None)
    if request.method == "POST" and form.is_valid():
        run = form.launch(user=request.user)
        if run is not None:
            messages.success(request, f"Run started with {run.total} items.")
            return redirect("console:run-detail", run_id=run.run_id)
    return render(request, "console/run_launch.html", console_context(request, title="Launch a run", form=form))


@login_required
@require_POST
def run_rerun(request, run_id):
    """The same test set and rubric versions and settings again: the run to compare against."""
    if denied := _lacks_scope(request, "evaluate"):
        return denied
    run = _run_or_404(run_id)
    try:
        new = services.run_create(
            agent_id=run.agent_id, test_set_id=run.test_set_id, test_set_version=run.test_set_version,
            dataset_id=run.dataset_id, rubric_id=run.rubric_id, rubric_version=run.rubric_version,
            concurrency=run.concurrency, component_scope_filter=run.component_scope_filter,
            component_ids_filter=run.component_ids_filter or None,
            judge_model="heuristic" if run.judge == "heuristic:v1" else run.judge.split(":", 1)[-1],
            created_by=request.user)
    except DomainError as exc:
        messages.error(request, str(exc.detail))
        return redirect("console:run-detail", run_id=run.run_id)
    messages.success(request, "Run started again with the same versions and settings.")
    return redirect("console:run-detail", run_id=new.run_id)


@login_required
@require_POST
def run_cancel(request, run_id):
    if denied := _lacks_scope(request, "evaluate"):
        return denied
    try:
        services.run_cancel(run=_run_or_404(run_id))
    except DomainError as exc:
        messages.warning(request, str(exc.detail))
    else:
        messages.success(request, "Run cancelled.")
    return redirect("console:run-detail", run_id=run_id)


@login_required
@require_GET
def run_progress(request, run_id):
    """What the run page's progress bar polls while the run is going."""
    run = _run_or_404(run_id)
    return JsonResponse({"status": run.status, "total": run.total, "completed": run.completed,
                         "passed": run.passed, "failed": run.failed, "finished": run.is_finished})


def _bot_name(agent_id: str) -> str:
    from apps.bots.models import Bot

    return Bot.objects.filter(agent_id=agent_id).values_list("name", flat=True).first() or "(deleted bot)"


@login_required
@require_GET
def run_detail(request, run_id):
    run = _run_or_404(run_id)
    rows = selectors.run_result_rows(run=run)
    figures = selectors.run_review_figures(rows=rows)
    filters = {
        "passed": _bool_param(request.GET.get("passed")),
        "item_type": request.GET.get("item_type") or None,
        "tag": request.GET.get("tag") or None,
        "priority": request.GET.get("priority") or None,
        "failed_severity": request.GET.get("failed_severity") or None,
    }
    shown = selectors.filter_result_rows(rows, **filters)
    page = Paginator(shown, RESULTS_PER_PAGE).get_page(request.GET.get("page"))
    scores = selectors.run_live_component_scores(run=run) or {}
    chart = bar_chart([(scope, v["score"], f"({v['passed']}/{v['total']})") for scope, v in scores.items()],
                      title="Rubric pass rate per component scope")
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "console/run_detail.html", console_context(
        request, title=f"Run {run.run_id}", run=run, bot_name=_bot_name(run.agent_id), figures=figures,
        page=page, shown_count=len(shown), filters=filters, filter_query=query.urlencode(),
        tags=sorted({t for r in rows for t in r["tags"]}),
        priorities=sorted({r["priority"] for r in rows if r["priority"]}),
        item_types=sorted({r["item_type"] for r in rows}),
        component_chart=mark_safe(chart),  # every text in it is escaped by apps.core.charts
        previous=selectors.run_previous(run=run), comparable=selectors.runs_comparable(run=run),
        admin_url=reverse("admin:runs_evaluationrun_change", args=[run.pk])))


def _rule_definitions(run: EvaluationRun) -> dict[str, dict]:
    """The rules as they stood in the rubric version the run used, by id (for their conditions)."""
    if not run.rubric_id:
        return {}
    try:
        _, snapshot = sources.rubric_snapshot(run.rubric_id, run.rubric_version)
    except NotFoundError:
        return {}  # the rubric was deleted since; the verdicts still stand on their own
    return {rule["id"]: rule for rule in snapshot.get("rules") or []}


@login_required
def result_detail(request, result_id):
    try:
        result = selectors.result_get(result_id=result_id)
    except NotFoundError as exc:
        raise Http404(exc.detail) from exc
    if request.method == "POST":
        if denied := _lacks_scope(request, "configure"):
            return denied
        return _review(request, result)
    run = result.run
    reviews = selectors.result_reviews(result=result)
    latest = in_force(reviews)
    criteria, rules = reviewed_verdicts(result.criteria_scores, result.rubric_scores, latest)
    definitions = _rule_definitions(run)
    for n, criterion in enumerate(criteria):
        criterion["anchor"] = f"criterion-{n}"
    for rule in rules:
        rule["anchor"] = f"rule-{rule['rule_id']}"
        rule["definition"] = definitions.get(rule["rule_id"])
    return render(request, "console/result_detail.html", console_context(
        request, title=result.item_name or str(result.test_case_id), result=result, run=run,
        messages_=(result.output or {}).get("messages") or [], criteria=criteria, rules=rules, reviews=reviews,
        human_passed=human_passed(judge_passed=result.passed, criteria=result.criteria_scores,
                                            rules=result.rubric_scores, latest=latest),
        correctness=(result.scores or {}).get("correctness"),
        admin_url=reverse("admin:runs_evaluationresult_change", args=[result.pk])))


def _review(request, result):
    passed = _bool_param(request.POST.get("passed"))
    if passed is None:
        messages.error(request, "Choose pass or fail.")
    else:
        try:
            services.verdict_review_create(result=result, kind=request.POST.get("kind", ""),
                                           key=request.POST.get("key", ""), passed=passed,
                                           note=request.POST.get("note", ""), reviewer=request.user)
        except DomainError as exc:
            messages.error(request, str(exc.detail))
        else:
            messages.success(request, "Review saved; the judge's verdict is kept beside it.")
    anchor = request.POST.get("anchor", "")
    return redirect(reverse("console:result-detail", args=[result.result_id]) + (f"#{anchor}" if anchor else ""))


@login_required
@require_GET
def run_compare(request):
    base_id, head_id = request.GET.get("base"), request.GET.get("head")
    if not base_id or not head_id:
        raise Http404("Give two runs: ?base=<run_id>&head=<run_id>")
    base, head = _run_or_404(base_id), _run_or_404(head_id)
    try:
        comparison = selectors.runs_compare(base=base, head=head)
    except DomainError as exc:
        return render(request, "console/run_compare.html", console_context(
            request, title="Compare runs", base=base, head=head, problem=exc.detail), status=422)
    return render(request, "console/run_compare.html", console_context(
        request, title="Compare runs", **comparison))


@login_required
@require_GET
def rubric_page(request, rubric_id):
    from apps.rubrics.selectors import rubric_data, rubric_get

    try:
        rubric = rubric_get(rubric_id)
    except NotFoundError as exc:
        raise Http404(exc.detail) from exc
    current = rubric_data(rubric)
    agreement = selectors.rubric_agreement(rubric_id=rubric.pk)
    by_rule = {row.key: row for row in agreement["rules"]}
    rules = [{**rule, "agreement": by_rule.get(rule["id"])} for rule in current.get("rules") or []]
    return render(request, "console/rubric.html", console_context(
        request, title=f"Rubric: {rubric.name}", rubric=current, rules=rules, agreement=agreement,
        # Rules reviewed in runs of older versions that the current version no longer has.
        retired=[row for row in agreement["rules"] if row.key not in {r["id"] for r in rules}],
        admin_url=reverse("admin:rubrics_rubric_change", args=[rubric.pk])))
