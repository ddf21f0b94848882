"""The console's RAG evaluation pages (what POST /api/v1/trace stores; "trace" in the console is an
agent session): the list with search and filters, and one evaluation with its question, answer,
contexts, scores, human reviews and the review queues it is in."""

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from apps.core.projects.resolution import project_of
from apps.queues import selectors as queue_selectors
from apps.queues.models import QueueKind
from apps.queues.scoring import RAG_PASS
from apps.rag import selectors
from apps.rag.models import TraceEvaluation
from apps.rag.payload import SUPPORTED_TESTS
from apps.rag.scoring import TestStatus

from ..context import console_context
from .common import found_or_404

EVALUATIONS_PER_PAGE = 50
# The status filter's extra choice: a metric the judge scored under the pass mark (a failure).
BELOW_PASS = "below"


class RagFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=255, strip=True, label="Search")
    test = forms.ChoiceField(
        required=False,
        label="Metric",
        choices=[("", "any")] + [(name, name.replace("_", " ")) for name in SUPPORTED_TESTS],
    )
    status = forms.ChoiceField(
        required=False,
        label="Metric status",
        choices=([("", "any"), (BELOW_PASS, f"scored below {RAG_PASS} (fails)")] + TestStatus.choices),
    )
    outcome = forms.ChoiceField(required=False, choices=[("", "any")] + TraceEvaluation.Outcome.choices)


@login_required
@require_GET
def rag_list(request):
    """RAG evaluations newest first, 50 a page. Filters that do not validate are shown with their
    error and left out, as on the trace list."""
    form = RagFilterForm(request.GET)
    form.is_valid()
    filters = {name: value for name, value in form.cleaned_data.items() if value}
    status = filters.get("status", "")
    evaluations = selectors.trace_evaluation_search(
        q=filters.get("q", ""),
        test=filters.get("test", ""),
        outcome=filters.get("outcome", ""),
        status="" if status == BELOW_PASS else status,
        score_below=RAG_PASS if status == BELOW_PASS else None,
        project_id=project_of(request).pk,
    )
    page = Paginator(evaluations, EVALUATIONS_PER_PAGE).get_page(request.GET.get("page"))
    page.object_list = selectors.trace_evaluations_with_scores(page.object_list)
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "console/rag_list.html",
        console_context(
            request,
            title="RAG evaluations",
            form=form,
            page=page,
            query=query.urlencode(),
            filtered=bool(filters),
            threshold=RAG_PASS,
        ),
    )


@login_required
@require_GET
def rag_detail(request, evaluation_id):
    evaluation = found_or_404(
        selectors.trace_evaluation_get, evaluation_id=evaluation_id, project_id=project_of(request).pk
    )
    reviews = queue_selectors.metric_reviews_in_force(subject_kind=QueueKind.RAG_EVALUATION, subject_id=evaluation.pk)
    rows = [
        {
            "test": row,
            "passed": None if row.score is None else row.score >= RAG_PASS,
            "reason": row.reasoning,
            "review": reviews.get(row.name),
        }
        for row in evaluation.test_results
    ]
    payload = evaluation.payload or {}
    truth = payload.get("ground_truth")
    return render(
        request,
        "console/rag_detail.html",
        console_context(
            request,
            title=f"RAG evaluation #{evaluation.pk}",
            evaluation=evaluation,
            rows=rows,
            question=payload.get("question"),
            answer=payload.get("answer"),
            ground_truths=[truth] if isinstance(truth, str) else [t for t in truth or [] if isinstance(t, str)],
            contexts=[c for c in payload.get("contexts") or [] if isinstance(c, dict)],
            relevant=set(payload.get("relevant_context_ids") or []),
            notes=(payload.get("parsing") or {}).get("notes") or [],
            queue_items=queue_selectors.target_queue_items(
                kind=QueueKind.RAG_EVALUATION, target_pk=evaluation.pk, project=project_of(request)
            ),
            threshold=RAG_PASS,
            admin_url=reverse("admin:rag_traceevaluation_change", args=[evaluation.pk]),
        ),
    )
