"""Review queue pages: the list with progress, a queue's page (reviewers, what is left, judge-human
agreement, its items), and the reviewing page that shows one item's answer and evidence beside its
verdicts and moves on to the next item when saved. Writes go through apps.queues.services."""

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from apps.agentic.judges.base import AGENTIC_METRICS
from apps.core.errors import DomainError
from apps.core.projects.resolution import project_of
from apps.queues import selectors, services
from apps.queues.models import QueueKind, rate_from_per_cent
from apps.queues.scoring import AGENTIC_PASS, RAG_PASS
from apps.scores.selectors import human_in_force
from apps.scores.vocabulary import ScoreKind
from apps.traces.selectors import trace_tool_call_page

from ..access import REVIEW, may
from ..context import console_context
from .common import found_or_404, role_required

ITEMS_PER_PAGE = 50


class QueueForm(forms.Form):
    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=QueueKind.choices)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    include_unassessed = forms.BooleanField(required=False, label="Judge errors and skipped verdicts")
    score_below = forms.FloatField(required=False, min_value=0, max_value=1, label="Overall score below (0..1)")
    disagreement_prone = forms.BooleanField(required=False, label="Disagreement-prone rules and metrics")
    sample_percent = forms.FloatField(min_value=0, max_value=100, initial=0, label="Random sample (%)")

    def rule(self) -> dict:
        """The queue's fields as the services take them: people type per cent, queues keep a 0..1 rate."""
        fields = dict(self.cleaned_data)
        fields["sample_rate"] = rate_from_per_cent(fields.pop("sample_percent"))
        return fields


def _queue_or_404(request, queue_id):
    """The queue of the session's project: another project's is the 404 page, as one that does not exist."""
    return found_or_404(selectors.queue_get, queue_id=queue_id, project=project_of(request))


@login_required
@role_required(REVIEW, methods=("POST",))
def queue_list(request):
    form = QueueForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            try:
                queue = services.queue_create(project=project_of(request), created_by=request.user, **form.rule())
            except DomainError as exc:
                form.add_error("name", str(exc.detail))
            else:
                entered = services.queue_fill(queue=queue)
                messages.success(request, f"Queue created; {entered} item(s) entered by its rule.")
                return redirect("console:queue", queue_id=queue.pk)
    return render(
        request,
        "console/queue_list.html",
        console_context(
            request, title="Review queues", queues=list(selectors.queue_list(project=project_of(request))), form=form
        ),
    )


@login_required
@require_GET
def queue_page(request, queue_id):
    queue = _queue_or_404(request, queue_id)
    state = request.GET.get("state") or ""
    items = selectors.queue_item_list(queue=queue, filters={"state": state})
    page = Paginator(items, ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    threshold = {QueueKind.AGENTIC_EVALUATION: AGENTIC_PASS, QueueKind.RAG_EVALUATION: RAG_PASS}.get(queue.kind)
    # Who items can be assigned to: the people who may review in the queue's project, one query.
    reviewers = selectors.queue_reviewer_names(project=queue.project) if may(request, REVIEW) else []
    return render(
        request,
        "console/queue_detail.html",
        console_context(
            request,
            title=f"Queue: {queue.name}",
            queue=queue,
            page=page,
            state=state,
            query=f"state={state}",
            assignable=reviewers,
            left=selectors.queue_left(queue=queue),
            reviewers=selectors.queue_reviewer_progress(queue=queue),
            agreement=selectors.queue_agreement(queue=queue),
            threshold=threshold,
        ),
    )


@login_required
@require_POST
@role_required(REVIEW)
def queue_fill(request, queue_id):
    queue = _queue_or_404(request, queue_id)
    messages.success(request, f"{services.queue_fill(queue=queue)} item(s) entered by the queue's rule.")
    return redirect("console:queue", queue_id=queue.pk)


@login_required
@require_POST
@role_required(REVIEW)
def queue_item_add(request):
    """ "Add to queue" from any list: a queue and a target id; back to where the form was."""
    queue = _queue_or_404(request, request.POST.get("queue") or "")
    # The list forms say what kind of object they send; the queue page's "Add by hand" box does not
    # need to (its queue is the one the id is meant for).
    kind = request.POST.get("kind") or None
    target_ids = [value.strip() for value in request.POST.getlist("target_id") if value.strip()]
    try:
        if len(target_ids) == 1:
            _, created = services.queue_item_add(queue=queue, target_id=target_ids[0], kind=kind)
            entered, already = int(created), int(not created)
        else:
            entered, already = services.queue_items_add(queue=queue, target_ids=target_ids, kind=kind)
    except DomainError as exc:
        messages.error(request, str(exc.detail))
    else:
        if len(target_ids) == 1:
            messages.success(
                request,
                f"Added to {queue.name}." if entered else f"Already in the queue {queue.name}; not added twice.",
            )
        else:
            messages.success(
                request,
                f"Added {entered} to {queue.name}"
                + (f"; {already} already in the queue, not added twice." if already else "."),
            )
    return _back(request, queue)


def _back(request, queue):
    """To the page the form was on (a path of this site only), else the queue's page."""
    back = request.POST.get("next") or ""
    if url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return redirect(back)
    return redirect("console:queue", queue_id=queue.pk)


def _item_or_404(queue, item_id):
    return found_or_404(selectors.queue_item_get, queue=queue, item_id=item_id)


@login_required
@require_POST
@role_required(REVIEW)
def queue_item_assign(request, queue_id, item_id):
    queue = _queue_or_404(request, queue_id)
    item = _item_or_404(queue, item_id)
    username = request.POST.get("username", "")
    user = None
    if username and username in selectors.queue_reviewer_names(project=queue.project):
        user = get_user_model().objects.filter(username=username, is_active=True).first()
    if username and user is None:
        messages.error(request, f"No active user {username!r}.")
    else:
        services.queue_item_assign(item=item, user=user)
        messages.success(request, f"Item {item.pk} assigned to {username}." if user else f"Item {item.pk} unassigned.")
    return _back(request, queue)


@login_required
@require_POST
@role_required(REVIEW)
def queue_item_claim(request, queue_id, item_id):
    queue = _queue_or_404(request, queue_id)
    try:
        services.queue_item_claim(item=_item_or_404(queue, item_id), user=request.user)
    except DomainError as exc:
        messages.error(request, str(exc.detail))
    else:
        messages.success(request, "Claimed: this item is yours to review.")
    return redirect("console:queue-item", queue_id=queue.pk, item_id=item_id)


@login_required
@require_GET
def queue_review_next(request, queue_id):
    """Start (or go on) reviewing: the first item left that is the user's or nobody's."""
    queue = _queue_or_404(request, queue_id)
    item_id = selectors.queue_item_next(queue=queue, user=request.user)
    if item_id is None:
        messages.info(request, "Nothing left to review in this queue for you.")
        return redirect("console:queue", queue_id=queue.pk)
    return redirect("console:queue-item", queue_id=queue.pk, item_id=item_id)


def _verdict_rows(item, kinds) -> list[dict]:
    """The judge's verdicts on the item's subject beside the human score in force on each: both are
    Score rows of the subject, joined on (kind, key)."""
    judged = selectors.judge_scores(subject_kind=item.subject_kind, subject_id=item.subject_id, kinds=kinds)
    reviews = {
        (row.kind, row.key): row for row in human_in_force(item.subject_kind, [item.subject_id]).filter(kind__in=kinds)
    }
    rows = []
    for (kind, key), judge in judged.items():
        label = key
        if kind == ScoreKind.RULE:
            label = f"{(judge.detail or {}).get('rule_name') or key} ({judge.severity})"
        rows.append(
            {
                "kind": kind,
                "key": key,
                "label": label,
                "judge_passed": judge.passed,
                "judge_score": judge.value,
                "status": judge.status,
                "reasoning": judge.reasoning,
                "review": reviews.get((kind, key)),
            }
        )
    return rows


def _run_result_context(item) -> dict:
    result = item.subject
    item_def = result.item or {}
    messages_ = (result.output or {}).get("messages") or []
    answer = next((m.get("content") for m in reversed(messages_) if m.get("role") == "assistant"), None)
    return {
        "rows": _verdict_rows(item, (ScoreKind.CRITERION, ScoreKind.RULE)),
        "result": result,
        "run": result.run,
        "transcript": messages_,
        "answer": answer,
        "question": (result.input or {}).get("message") or (item_def.get("inputs") or {}).get("message"),
        "expected": (item_def.get("expected") or {}).get("success_criteria") or [],
    }


def _agentic_context(item) -> dict:
    evaluation = item.subject
    judged = selectors.judge_scores(subject_kind=item.subject_kind, subject_id=evaluation.pk)
    latest = selectors.metric_reviews_in_force(subject_kind=item.subject_kind, subject_id=evaluation.pk)
    # Every metric can be reviewed, whether or not the judge scored it.
    rows = []
    for metric in AGENTIC_METRICS:
        judge = judged.get((ScoreKind.METRIC, metric))
        rows.append(
            {
                "kind": ScoreKind.METRIC,
                "key": metric,
                "label": metric.replace("_", " "),
                "judge_score": judge.value if judge else None,
                "status": judge.status if judge else "not judged",
                "reasoning": judge.reasoning if judge else "",
                "review": latest.get(metric),
                "scored": True,
            }
        )
    trace = evaluation.trace
    manual = evaluation.manual_input or {}
    # The first page only: a trace may hold tens of thousands of calls; the trace page has the rest.
    calls = trace_tool_call_page(trace=trace) if trace is not None else None
    return {
        "rows": rows,
        "evaluation": evaluation,
        "trace": trace,
        "calls": calls.calls if calls else [],
        "calls_total": calls.total if calls else 0,
        "question": trace.user_query if trace is not None else manual.get("user_query"),
        "answer": trace.final_response if trace is not None else manual.get("agent_response"),
        "threshold": AGENTIC_PASS,
    }


def _rag_context(item) -> dict:
    evaluation = item.subject
    judged = selectors.judge_scores(subject_kind=item.subject_kind, subject_id=evaluation.pk)
    latest = selectors.metric_reviews_in_force(subject_kind=item.subject_kind, subject_id=evaluation.pk)
    rows = [
        {
            "kind": ScoreKind.METRIC,
            "key": judge.key,
            "label": judge.key.replace("_", " "),
            "judge_score": judge.value,
            "judge_passed": None if judge.value is None else judge.value >= RAG_PASS,
            # The reason says more than "skipped" where there is one (input missing, not run).
            "status": judge.reason or judge.status,
            "reasoning": (judge.detail or {}).get("method") or judge.reasoning,
            "review": latest.get(judge.key),
        }
        for judge in judged.values()
    ]
    payload = evaluation.payload or {}
    return {
        "rows": rows,
        "evaluation": evaluation,
        "question": payload.get("question"),
        "answer": payload.get("answer"),
        "ground_truth": payload.get("ground_truth"),
        "contexts": payload.get("contexts") or [],
        "threshold": RAG_PASS,
    }


CONTEXTS = {
    QueueKind.RUN_RESULT: _run_result_context,
    QueueKind.AGENTIC_EVALUATION: _agentic_context,
    QueueKind.RAG_EVALUATION: _rag_context,
}


def _posted_verdicts(post) -> list[dict]:
    """The rows the reviewer marked; unmarked rows are left as the judge gave them."""
    verdicts = []
    for n in range(int(post.get("rows") or 0)):
        kind, key = post.get(f"v-{n}-kind", ""), post.get(f"v-{n}-key", "")
        passed = {"pass": True, "fail": False}.get(post.get(f"v-{n}-passed", ""))
        score = post.get(f"v-{n}-score", "").strip()
        if score:
            try:
                verdicts.append({"kind": kind, "key": key, "score": float(score)})
            except ValueError:
                raise DomainError(f"{key}: the score must be a number between 0 and 1") from None
        elif passed is not None:
            verdicts.append({"kind": kind, "key": key, "passed": passed})
    return verdicts


@login_required
@role_required(REVIEW, methods=("POST",))
def queue_item_page(request, queue_id, item_id):
    queue = _queue_or_404(request, queue_id)
    item = _item_or_404(queue, item_id)
    if request.method == "POST":
        try:
            services.queue_item_review(
                item=item,
                reviewer=request.user,
                verdicts=_posted_verdicts(request.POST),
                note=request.POST.get("note", ""),
            )
        except DomainError as exc:
            messages.error(request, str(exc.detail))
            return redirect("console:queue-item", queue_id=queue.pk, item_id=item.pk)
        following = selectors.queue_item_next(queue=queue, user=request.user, after=item.pk)
        if following is None:
            messages.success(request, "Saved. That was the last item left for you in this queue.")
            return redirect("console:queue", queue_id=queue.pk)
        messages.success(request, "Saved; here is the next item.")
        return redirect("console:queue-item", queue_id=queue.pk, item_id=following)
    previous, following = selectors.queue_item_neighbours(item=item)
    left = selectors.queue_left(queue=queue)
    return render(
        request,
        "console/queue_review.html",
        console_context(
            request,
            title=f"{queue.name}: item {item.pk}",
            queue=queue,
            item=item,
            previous=previous,
            following=following,
            left=left,
            **CONTEXTS[queue.kind](item),
        ),
    )
