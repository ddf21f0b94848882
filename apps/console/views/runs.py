"""The console's run pages: list, launch, run page with its results, result drill-down with human
review, comparison of two runs, and a rubric's judge agreement. Reads go through the selectors,
writes (launch, cancel, review) through the services, exactly as the API does."""

import uuid
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from apps.core.auth.permissions import scopes_of
from apps.core.charts import bar_chart
from apps.core.errors import DomainError, NotFoundError
from apps.core.models import SCOPE_ADMIN
from apps.core.projects.resolution import project_of
from apps.core.versioning.selectors import head_data
from apps.rubrics.selectors import rubric_get
from apps.runs import display, selectors, services, sources
from apps.runs.alignment.selectors import MIN_LABELS, trial_list
from apps.runs.attempts import DEFAULT_SORT, SORTS, sort_param
from apps.runs.forms import AlignmentTrialForm, RunLaunchForm
from apps.runs.judging.aggregate import FAILED, UNASSESSED
from apps.runs.models import EvaluationRun
from apps.runs.result_selectors import result_neighbours
from apps.runs.reviews import human_outcome, in_force, reviewed_verdicts
from apps.runs.stats import VERDICT_WORDS

from .. import selectors as console_selectors
from ..access import EDIT, REVIEW
from ..context import console_context
from ..selectors import run_filter_choices
from .common import found_or_404, role_required

RUNS_PER_PAGE = 50
# The worker command of docs/setup.md: what a run nobody picks up needs.
WORKER_COMMAND = ".venv/bin/celery -A evalsite worker --loglevel=INFO"


def _run_or_404(request, run_id) -> EvaluationRun:
    """The run of the session's project: another project's is the 404 page, as one that does not exist."""
    return found_or_404(services.run_recover, run_id=run_id, project=project_of(request))


def _bool_param(value: str | None) -> bool | None:
    return {"true": True, "false": False}.get((value or "").lower())


@login_required
@require_GET
def run_list(request):
    filters = {
        "agent_id": request.GET.get("agent_id") or "",
        "test_set_id": request.GET.get("test_set_id") or "",
        "status": request.GET.get("status") or "",
    }
    # An unknown ?sort is the default order (newest first); pages keep the sort and the filters.
    sort = console_selectors.run_sort(request.GET.get("sort"))
    # A test set id that is not a UUID names no run (runs.filters.filtered).
    runs = console_selectors.run_list_sorted(
        selectors.run_named_list(project=project_of(request), filters=filters), sort=sort
    )
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    sorted_query = {**filters, **({"sort": sort.param} if sort.param != console_selectors.RUN_DEFAULT_SORT else {})}
    return render(
        request,
        "console/run_list.html",
        console_context(
            request,
            title="Evaluation runs",
            page=page,
            filters=filters,
            filter_query=urlencode(sorted_query),
            sort_query=urlencode({k: v for k, v in filters.items() if v}),
            sort=sort,
            default_order=sort.param == console_selectors.RUN_DEFAULT_SORT,
            statuses=EvaluationRun.Status.values,
            **run_filter_choices(project=project_of(request)),
        ),
    )


@login_required
@role_required(EDIT)
def run_launch(request):
    form = RunLaunchForm(request.POST or None, initial=request.GET or None, project=project_of(request))
    if request.method == "POST" and form.is_valid():
        run = form.launch(user=request.user)
        if run is not None:
            repeats = f", repeats {run.repeats} ({run.total} attempts)" if run.repeats > 1 else ""
            messages.success(request, f"Run queued with {run.total // run.repeats} items{repeats}.")
            return redirect("console:run-detail", run_id=run.run_id)
    return render(request, "console/run_launch.html", console_context(request, title="Launch a run", form=form))


@login_required
@require_POST
@role_required(EDIT)
def run_rerun(request, run_id):
    """The same test set and rubric versions and settings again: the run to compare against."""
    run = _run_or_404(request, run_id)
    try:
        new = services.run_rerun(run=run, created_by=request.user)
    except DomainError as exc:
        messages.error(request, str(exc.detail))
        return redirect("console:run-detail", run_id=run.run_id)
    messages.success(request, "Run queued again with the same versions and settings.")
    return redirect("console:run-detail", run_id=new.run_id)


@login_required
@require_POST
@role_required(EDIT)
def run_cancel(request, run_id):
    try:
        services.run_cancel(
            run=_run_or_404(request, run_id), requested_by=request.user, admin=SCOPE_ADMIN in scopes_of(request)
        )
    except DomainError as exc:
        messages.warning(request, str(exc.detail))
    else:
        messages.success(request, "Run cancelled.")
    return redirect("console:run-detail", run_id=run_id)


@login_required
@require_GET
def run_progress(request, run_id):
    """A run's progress in a few numbers (the run page itself polls run_live, which adds cards and rows)."""
    run = _run_or_404(request, run_id)
    return JsonResponse(
        {
            "status": run.status,
            "total": run.total,
            "completed": run.completed,
            "passed": run.passed,
            "failed": run.failed,
            "unassessed": run.unassessed,
            "coverage": run.coverage,
            "finished": run.is_finished,
        }
    )


FILTER_NAMES = ("item_type", "q", "tag", "priority", "failed_severity")
MAX_SEARCH_LENGTH = 200


def _row_filters(request) -> dict:
    """The results table's filters from the query string. `passed` is the verdict select: true,
    false (failed: never the unassessed, which have their own choice), or unassessed."""
    verdict = (request.GET.get("passed") or "").lower()
    filters = {name: (request.GET.get(name) or "").strip() or None for name in FILTER_NAMES}
    if filters["q"]:
        filters["q"] = filters["q"][:MAX_SEARCH_LENGTH]
    passed = _bool_param(verdict)
    outcome = UNASSESSED if verdict == UNASSESSED else FAILED if passed is False else None
    return {"passed": True if passed else None, "outcome": outcome, **filters}


@login_required
@require_GET
def run_detail(request, run_id):
    run = selectors.run_named_get(run=_run_or_404(request, run_id))
    digest = selectors.run_digest(run)
    reviews = selectors.run_reviews(runs=[run])
    figures = selectors.run_review_figures(digest=digest, reviews=reviews)
    filters = _row_filters(request)
    sort = sort_param(request.GET.get("sort"))
    page = selectors.result_table_page(
        run=run, digest=digest, reviews=reviews, number=request.GET.get("page"), sort=sort, **filters
    )
    scores = selectors.run_live_component_scores(run=run, digest=digest) or {}
    chart = bar_chart(
        [(scope, v["score"], f"({v['passed']}/{v['total']})") for scope, v in scores.items()],
        title="Rubric pass rate per component scope",
    )
    query = request.GET.copy()
    query.pop("page", None)
    # A finished run is not polled, so it needs no cursor.
    cursor = None if run.is_finished else digest.newest
    return render(
        request,
        "console/run_detail.html",
        console_context(
            request,
            title=f"Run {run.label or run.run_id}",
            run=run,
            figures=figures,
            trials=selectors.run_trial_figures(run=run),
            detectable=selectors.run_detectable_drop(run=run) if run.is_finished else None,
            judge_fingerprints=digest.judge_fingerprints(),
            page=page,
            shown_count=page.paginator.count,
            filters=filters,
            filter_query=query.urlencode(),
            sort=sort,
            sorts=_sort_links(query, sort),
            default_sort=sort == DEFAULT_SORT,
            live_cursor=cursor.isoformat() if cursor else "",
            unclaimed=selectors.run_unclaimed(run=run),
            worker_command=WORKER_COMMAND,
            **digest.filter_choices(),
            component_chart=mark_safe(chart),  # every text in it is escaped by apps.core.charts
            previous=selectors.run_previous_find(run=run),
            comparable=selectors.run_comparable_list(run=run),
            admin_url=reverse("admin:runs_evaluationrun_change", args=[run.pk]),
        ),
    )


def _sort_links(query, sort: str) -> dict[str, dict]:
    """Per sortable column of the results table: the link that sorts by it (ascending, or the other
    way when it is the sort already, keeping the filters) and its aria-sort."""
    links = {}
    for key in SORTS:
        following = query.copy()
        following["sort"] = f"-{key}" if sort == key else key
        direction = {key: "ascending", f"-{key}": "descending"}.get(sort, "none")
        links[key] = {"url": f"?{following.urlencode()}#results", "aria": direction}
    return links


@login_required
@require_GET
def run_live(request, run_id):
    """What the run page polls while the run goes: its cards, and the table rows (under the page's
    filters) finished since `after`, the cursor the page was last given: at most a page of them,
    those first in the table's order. Rendered by the templates the page itself uses, so a polled
    row is the row a reload would show. A bounded number of queries and rows whatever the run's size."""
    run = _run_or_404(request, run_id)
    after = _datetime_param(request.GET.get("after"))
    digest = selectors.run_digest(run)
    reviews = selectors.run_reviews(runs=[run])
    figures = selectors.run_review_figures(digest=digest, reviews=reviews)
    fresh = selectors.results_finished_since(run=run, reviews=reviews, after=after, **_row_filters(request))
    cursor = digest.newest
    # The rows' "add to queue" forms lead back to the run page under the same filters, not to here.
    query = request.GET.copy()
    query.pop("after", None)
    row_back = reverse("console:run-detail", args=[run.run_id]) + (f"?{query.urlencode()}" if query else "")
    return JsonResponse(
        {
            "status": run.status,
            "total": run.total,
            "completed": run.completed,
            "passed": run.passed,
            "failed": run.failed,
            "unassessed": run.unassessed,
            "finished": run.is_finished,
            "unclaimed": selectors.run_unclaimed(run=run),
            "cursor": cursor.isoformat() if cursor else (after.isoformat() if after else ""),
            "cards": render_to_string(
                "console/_run_cards.html",
                {"run": run, "figures": figures, "trials": selectors.run_trial_figures(run=run)},
                request=request,
            ),
            "rows": [
                render_to_string("console/_result_row.html", {"row": row, "row_back": row_back}, request=request)
                for row in fresh
            ],
        }
    )


def _datetime_param(value: str | None):
    try:
        parsed = parse_datetime(value or "")
    except ValueError:  # well formed but no such time: as if none was given
        return None
    if parsed is not None and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed)
    return parsed


def _rule_definitions(run: EvaluationRun) -> dict[str, dict]:
    """The rules as they stood in the rubric version the run used, by id (for their conditions)."""
    if not run.rubric_id:
        return {}
    try:
        _, snapshot = sources.rubric_snapshot(run.rubric_id, run.rubric_version, project=run.project_id)
    except NotFoundError:
        return {}  # the rubric was deleted since; the verdicts still stand on their own
    return {rule["id"]: rule for rule in snapshot.get("rules") or []}


@login_required
@role_required(REVIEW, methods=("POST",))
def result_detail(request, result_id):
    result = found_or_404(selectors.result_get, result_id=result_id, project=project_of(request))
    if request.method == "POST":
        return _review(request, result)
    run = result.run
    reviews = selectors.verdict_review_list(result=result)
    latest = in_force(reviews)
    criteria, rules = reviewed_verdicts(result.criteria_scores, result.rubric_scores, latest)
    definitions = _rule_definitions(run)
    failures, warnings = display.reviewed_failures(result.criteria_scores, result.rubric_scores, latest)
    flagged = {anchor for anchor, _ in failures + warnings}
    for n, criterion in enumerate(criteria):
        criterion["anchor"] = f"criterion-{n}"
        criterion["flagged"] = criterion["anchor"] in flagged
    for rule in rules:
        rule["anchor"] = f"rule-{rule['rule_id']}"
        rule["definition"] = definitions.get(rule["rule_id"])
        rule["flagged"] = rule["anchor"] in flagged
    conversation = (result.output or {}).get("messages") or []
    previous_result, next_result = result_neighbours(result=result)
    return render(
        request,
        "console/result_detail.html",
        console_context(
            request,
            title=result.item_name or str(result.test_case_id),
            result=result,
            run=run,
            item=display.result_item_view(result=result),
            final_answer=display.final_answer(result.output),
            attempts=selectors.result_attempt_list(result=result),
            messages_=conversation,
            tool_calls=[call for m in conversation for call in m.get("tool_calls") or []],
            criteria=criteria,
            rules=rules,
            reviews=reviews,
            failures=failures,
            warnings=warnings,
            human_outcome=human_outcome(criteria=result.criteria_scores, rules=result.rubric_scores, latest=latest),
            correctness=(result.scores or {}).get("correctness"),
            previous_result=previous_result,
            next_result=next_result,
            admin_url=reverse("admin:runs_evaluationresult_change", args=[result.pk]),
        ),
    )


def _review(request, result):
    passed = _bool_param(request.POST.get("passed"))
    if passed is None:
        messages.error(request, "Choose pass or fail.")
    else:
        try:
            services.verdict_review_create(
                result=result,
                kind=request.POST.get("kind", ""),
                key=request.POST.get("key", ""),
                passed=passed,
                note=request.POST.get("note", ""),
                reviewer=request.user,
            )
        except DomainError as exc:
            messages.error(request, str(exc.detail))
        else:
            messages.success(request, "Review saved; the judge's verdict is kept beside it.")
    anchor = request.POST.get("anchor", "")
    return redirect(reverse("console:result-detail", args=[result.result_id]) + (f"#{anchor}" if anchor else ""))


def _run_id_param(request, name: str) -> uuid.UUID | None:
    """A run id from the query string; None when absent, 404 when it is not a run id at all (a
    typed-over link is a page that does not exist, not a server error)."""
    value = (request.GET.get(name) or "").strip()
    if not value:
        return None
    try:
        return uuid.UUID(value)
    except ValueError as exc:
        raise Http404(f"{name}={value!r} is not a run id") from exc


@login_required
@require_GET
def run_compare(request):
    """Two runs side by side; without both (or with one) a page to pick them."""
    base_id, head_id = _run_id_param(request, "base"), _run_id_param(request, "head")
    if base_id is None or head_id is None:
        return render(
            request,
            "console/run_compare_pick.html",
            console_context(
                request,
                title="Compare runs",
                runs=console_selectors.compare_choices(project=project_of(request)),
                base_id=base_id,
                head_id=head_id,
            ),
        )
    base, head = _run_or_404(request, base_id), _run_or_404(request, head_id)
    try:
        comparison = selectors.run_comparison(base=base, head=head)
    except DomainError as exc:
        return render(
            request,
            "console/run_compare.html",
            console_context(
                request,
                title="Compare runs",
                base=selectors.run_named_get(run=base),
                head=selectors.run_named_get(run=head),
                problem=exc.detail,
            ),
            status=422,
        )
    interval = comparison["statistics"]["pass_rate_diff_ci"]
    return render(
        request,
        "console/run_compare.html",
        console_context(
            request,
            title="Compare runs",
            **comparison,
            verdict_text=VERDICT_WORDS[comparison["statistics"]["verdict"]],
            diff_ci_text=f"[{interval[0]:+.1%}, {interval[1]:+.1%}]" if interval else "",
        ),
    )


@login_required
@require_GET
def rubric_page(request, rubric_id):
    rubric = found_or_404(rubric_get, rubric_id, project=project_of(request))
    current = head_data(rubric)
    agreement = selectors.rubric_agreement(rubric_id=rubric.pk)
    result_ids = selectors.result_ids_of(
        {s for row in agreement["rules"] + agreement["criteria"] for s in row.disagreements}
    )
    for row in agreement["rules"] + agreement["criteria"]:
        row.links = [result_ids[s] for s in row.disagreements if s in result_ids][:10]
    by_rule = {row.key: row for row in agreement["rules"]}
    flips = selectors.rubric_flip_rates(rubric_id=rubric.pk)
    rules = [
        {**rule, "agreement": by_rule.get(rule["id"]), "flips": flips.get(rule["id"])}
        for rule in current.get("rules") or []
    ]
    return render(
        request,
        "console/rubric.html",
        console_context(
            request,
            title=f"Rubric: {rubric.name}",
            rubric=current,
            rules=rules,
            agreement=agreement,
            # Rules reviewed in runs of older versions that the current version no longer has.
            retired=[row for row in agreement["rules"] if row.key not in {r["id"] for r in rules}],
            admin_url=reverse("admin:rubrics_rubric_change", args=[rubric.pk]),
            trials=trial_list(rubric=rubric, limit=20),
            trial_form=AlignmentTrialForm(rubric=rubric, rules=current.get("rules") or []),
            min_labels=MIN_LABELS,
        ),
    )
