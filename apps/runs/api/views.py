from functools import partial
from typing import Literal
from urllib.parse import urlencode

from django.http import StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from pydantic import BaseModel, Field
from rest_framework import status
from rest_framework.views import APIView

from apps.core.api.attributes import with_attributes
from apps.core.api.openapi import CONFLICT, ValidationErrorOut
from apps.core.api.query_params import query_of, query_parameters
from apps.core.api.renderers import OrjsonRenderer
from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.auth.permissions import scopes_of
from apps.core.llm.client import llm_configured
from apps.core.llm.quotas import HEURISTIC_JUDGES, llm_rate_check
from apps.core.models import SCOPE_ADMIN, ApiKey
from apps.core.projects.resolution import project_of
from apps.core.versioning.api import author_of
from apps.rubrics.selectors import rubric_get
from apps.runs import selectors, services
from apps.runs.alignment import selectors as alignment_selectors
from apps.runs.alignment import services as alignment_services
from apps.runs.alignment.metrics import metric_trial_create
from apps.runs.alignment.selectors import MIN_LABELS
from apps.runs.attempts import ItemAttempts
from apps.runs.comparison import REGRESSED
from apps.runs.judging.aggregate import PASSED
from apps.runs.models import EvaluationResult, EvaluationRun, iter_with_verdicts
from apps.runs.reviews import Review, human_passed, in_force
from apps.runs.schemas import AlignmentTrialIn, MetricTrialIn
from apps.scores.agreement import agreement_entry

from .schemas import (
    AlignmentTrialCreatedOut,
    AlignmentTrialList,
    AlignmentTrialOut,
    ComparisonOut,
    ResultDetailOut,
    ResultList,
    ReviewIn,
    ReviewList,
    ReviewOut,
    RubricAgreementOut,
    RunCreateIn,
    RunItemList,
    RunList,
    RunOut,
    RunResultOut,
    run_answer,
    trial_answer,
)

TAG = ["runs"]


# What an answer shows beyond the row, added on top of it for the Out model to read
# (apps.core.api.attributes.with_attributes): the row itself is left alone.


def _result_answer(result: EvaluationResult, run: EvaluationRun):
    """A results entry of a run without repeats. The run is the caller's: a page's rows are read
    without it, so result.run would be a query each. No nested attempts: the row's own `attempts`
    column counts executions, not the item's attempts, so it is hidden from the entry."""
    return with_attributes(result, run=run, flaky=None, attempts=None)


def _item_answer(item: ItemAttempts, run: EvaluationRun):
    """A repeated run's results entry: the contract's fields from the deciding attempt, its passed and
    outcome the item's verdict, its finished attempts nested."""
    return with_attributes(
        item.deciding,
        run=run,
        passed=item.outcome == PASSED,
        outcome=item.outcome,
        flaky=item.flaky,
        attempts=item.attempts,
    )


def _reviews_answer(reviews: list[Review], *, result_id) -> list:
    latest = {id(r) for r in in_force(reviews).values()}
    return [with_attributes(r, result_id=result_id, in_force=id(r) in latest) for r in reviews]


class RunListQuery(BaseModel):
    agent_id: str | None = None
    status: Literal["pending", "running", "completed", "failed", "cancelled"] | None = None
    limit: int = Field(default=50, ge=1, le=500)


RESULTS_PAGE_DEFAULT = 100
RESULTS_PAGE_MAX = 1000
RESULTS_OFFSET_MAX = 100_000_000
# A run with more results than this streams its whole list (no limit or offset given) from a
# database cursor, so the server's memory does not grow with the run; smaller ones answer at once.
RESULTS_INLINE_MAX = 1000
STREAM_CHUNK_BYTES = 256 * 1024


class MetricTrialListQuery(BaseModel):
    agent_name: str | None = Field(
        default=None, max_length=255, description="only the trials of this agent's evaluations (\"\": every agent's)"
    )


class ResultQuery(BaseModel):
    passed: bool | None = Field(
        default=None,
        description="the item's verdict: true, passed (every attempt passed); "
        "false, not passed, that is failed or unassessed (each entry's `outcome` tells them apart)",
    )
    item_type: Literal["single_turn", "scenario", "question"] | None = None
    limit: int | None = Field(
        default=None, ge=1, le=RESULTS_PAGE_MAX, description=f"1-{RESULTS_PAGE_MAX} items; pages the list"
    )
    offset: int | None = Field(
        default=None, ge=0, le=RESULTS_OFFSET_MAX, description="items to skip (0 and up); pages the list"
    )

    @property
    def paged(self) -> bool:
        return self.limit is not None or self.offset is not None


class CompareQuery(BaseModel):
    limit: int = Field(
        default=selectors.COMPARE_SHOWN,
        ge=1,
        le=selectors.COMPARE_KEEP,
        description="regressions listed; regressions_total counts them all",
    )


class ItemQuery(BaseModel):
    flaky: bool | None = None
    offset: int = Field(default=0, ge=0, le=1_000_000)
    limit: int = Field(default=100, ge=1, le=1000)


def _run_or_404(request, run_id):
    """The run of the request's project: another project's answers 404, as one that does not exist."""
    return services.run_recover(run_id=run_id, project=project_of(request))


class RunsView(APIView):
    required_scopes = {"GET": "read", "POST": "evaluate"}
    # Counted against the key's EVALSITE_LLM_RATE when it uses the platform's LLM (429 in the schema).
    llm_spending_methods = {"POST"}

    @extend_schema(tags=TAG, request=RunCreateIn, responses={201: RunOut}, summary="Start an evaluation run")
    def post(self, request):
        body = validate_body(RunCreateIn, request.data)
        if body.judge_model not in HEURISTIC_JUDGES and llm_configured():
            llm_rate_check(request, self)
        run = services.run_create(
            data=body,
            project=project_of(request),
            created_by=request.user if request.user.is_authenticated else None,
            api_key=request.auth if isinstance(request.auth, ApiKey) else None,
        )
        return respond(RunOut, run_answer(run), status=status.HTTP_201_CREATED)

    @extend_schema(
        tags=TAG,
        responses={200: RunList},
        parameters=query_parameters(RunListQuery),
        summary="List runs, newest first",
        operation_id="runs_list",
    )
    def get(self, request):
        query = query_of(RunListQuery, request)
        runs = list(
            selectors.run_list(
                project=project_of(request), filters=query.model_dump(exclude={"limit"}), limit=query.limit
            )
        )
        fingerprints = selectors.run_judge_fingerprints(runs=runs)
        return respond(RunList, [run_answer(r, fingerprints[r.pk]) for r in runs])


class RunDetailView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: RunOut}, summary="Get a run")
    def get(self, request, run_id):
        return respond(RunOut, run_answer(_run_or_404(request, run_id)))


# A message when the runs cannot be compared, the field errors when `limit` is invalid.
NOT_COMPARABLE = OpenApiResponse(
    ValidationErrorOut, description="`limit` is invalid, or the runs are not of the same test set (or question set)."
)


class RunCompareView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=TAG,
        responses={200: ComparisonOut, 422: NOT_COMPARABLE},
        parameters=query_parameters(CompareQuery),
        summary="Compare run b with run a: buckets, McNemar test, Tango interval, verdict, judge changes",
    )
    def get(self, request, run_id, other_run_id):
        base, head = _run_or_404(request, run_id), _run_or_404(request, other_run_id)
        query = query_of(CompareQuery, request)
        comparison = selectors.run_comparison(base=base, head=head, shown=query.limit, listed=(REGRESSED,))
        return respond(ComparisonOut, comparison)


class RunResultsView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=TAG,
        responses={200: ResultList},
        summary="Results of a run, one per finished test item",
        description="In test set order, one entry per test item with a finished attempt. For a run with repeats "
        "(each item run several times), an entry carries the item's verdict (`passed` only if every attempt "
        "passed), the contract's other fields from its deciding attempt (its first failed attempt, else its first "
        "unassessed one, else attempt 1), `flaky`, and its finished `attempts`; `passed=` filters on the item's "
        "verdict and `limit`/`offset` count items. Without `limit` or `offset`, every finished item (the "
        "contract's answer; a large run's is streamed). With either, one page of that list: `limit` items "
        f"(default {RESULTS_PAGE_DEFAULT}) from `offset` (default 0), and the `X-Has-More` header says whether "
        "more follow (then `Link` names the next page).",
        parameters=[
            *query_parameters(ResultQuery),
            # Response headers, not query parameters: written here as drf-spectacular takes them.
            OpenApiParameter(
                "X-Has-More",
                str,
                location=OpenApiParameter.HEADER,
                response=[200],
                enum=["true", "false"],
                description="with limit or offset: whether items follow this page",
            ),
            OpenApiParameter(
                "Link",
                str,
                location=OpenApiParameter.HEADER,
                response=[200],
                description='with limit or offset, when more follow: <the next page>; rel="next"',
            ),
        ],
    )
    def get(self, request, run_id):
        run = _run_or_404(request, run_id)
        query = query_of(ResultQuery, request)
        filters = {"passed": query.passed, "item_type": query.item_type}
        entry = _result_entry(run)
        if query.paged:
            limit, offset = query.limit or RESULTS_PAGE_DEFAULT, query.offset or 0
            if run.repeats > 1:
                results, has_more = selectors.item_result_page(run=run, limit=limit, offset=offset, **filters)
            else:
                results, has_more = selectors.result_page(run=run, limit=limit, offset=offset, filters=filters)
            headers = {"X-Has-More": "true" if has_more else "false"}
            if has_more:
                following = {**request.query_params.dict(), "limit": limit, "offset": offset + limit}
                headers["Link"] = f'<{request.build_absolute_uri(request.path)}?{urlencode(following)}>; rel="next"'
            return respond(ResultList, [entry(r, run) for r in results], headers=headers)
        if run.repeats > 1:
            results = selectors.item_result_list(run=run, **filters)
        else:
            results = selectors.result_list(run=run, filters=filters)
        if run.total > RESULTS_INLINE_MAX:
            if run.repeats == 1:
                results = iter_with_verdicts(results, chunk_size=500)
            return StreamingHttpResponse(_stream_results(results, run, entry), content_type="application/json")
        return respond(ResultList, [entry(r, run) for r in (results.with_verdicts() if run.repeats == 1 else results)])


def _result_entry(run):
    """How a results entry is built: one result per item, or a repeated run's item with its attempts."""
    return _item_answer if run.repeats > 1 else _result_answer


def _stream_results(results, run, entry):
    """The whole list as the renderer writes it, a row at a time through the same RunResultOut
    model, sent in chunks of about STREAM_CHUNK_BYTES."""
    renderer = OrjsonRenderer()
    chunk, separator = [b"["], b""
    size = 1
    for result in results:
        row = separator + renderer.render(RunResultOut.model_validate(entry(result, run)).model_dump())
        chunk.append(row)
        size += len(row)
        separator = b","
        if size >= STREAM_CHUNK_BYTES:
            yield b"".join(chunk)
            chunk, size = [], 0
    chunk.append(b"]")
    yield b"".join(chunk)


class RunItemsView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=TAG,
        responses={200: RunItemList},
        parameters=query_parameters(ItemQuery),
        summary="Items of a run with their attempts: canonical verdict, pass rate, pass^k, pass@k, flaky",
    )
    def get(self, request, run_id):
        run = _run_or_404(request, run_id)
        query = query_of(ItemQuery, request)
        return respond(RunItemList, selectors.run_item_list(run=run, **query.model_dump()))


class RunCancelView(APIView):
    required_scopes = {"POST": "evaluate"}

    @extend_schema(
        tags=TAG,
        request=None,
        responses={200: RunOut, 409: CONFLICT},
        summary="Cancel a pending or running run (its creator, or the admin scope)",
    )
    def post(self, request, run_id):
        run = services.run_cancel(
            run=_run_or_404(request, run_id),
            requested_by=request.user if request.user.is_authenticated else None,
            admin=SCOPE_ADMIN in scopes_of(request),
        )
        return respond(RunOut, run_answer(run))


class ResultDetailView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: ResultDetailOut}, summary="Get a result with its human reviews")
    def get(self, request, result_id):
        result = selectors.result_get(result_id=result_id, project=project_of(request))
        reviews = selectors.verdict_review_list(result=result)
        detail = with_attributes(
            result,
            human_passed=human_passed(
                criteria=result.criteria_scores, rules=result.rubric_scores, latest=in_force(reviews)
            ),
            reviews=_reviews_answer(reviews, result_id=result.result_id),
        )
        return respond(ResultDetailOut, detail)


class RubricAgreementView(APIView):
    """How the judge agrees with the reviewers on a rubric's rules (and the criteria of the runs that
    used it): per key, Cohen's kappa with its 95% interval, raw agreement, the confusion matrix, n
    and the disagreeing results. The rubric is the caller's project's; another's is 404."""

    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=["rubrics"],
        responses={200: RubricAgreementOut},
        summary="Judge-human agreement per rule of a rubric",
        operation_id="rubric_agreement",
    )
    def get(self, request, rubric_id):
        rubric = rubric_get(rubric_id, project=project_of(request))
        agreement = selectors.rubric_agreement(rubric_id=rubric.pk)
        rows = agreement["rules"] + agreement["criteria"]
        disagreeing = {s for row in rows for s in row.disagreements}
        links = {
            pk: {"id": str(result_id), "url": reverse("console:result-detail", args=[result_id])}
            for pk, result_id in selectors.result_ids_of(disagreeing).items()
        }
        return respond(
            RubricAgreementOut,
            {
                "rubric_id": str(rubric.pk),
                "reviews": agreement["reviews"],
                "rules": [agreement_entry(row, links) for row in agreement["rules"]],
                "criteria": [agreement_entry(row, links) for row in agreement["criteria"]],
                "flip_rates": [
                    {"key": key, **flips}
                    for key, flips in sorted(selectors.rubric_flip_rates(rubric_id=rubric.pk).items())
                ],
            },
        )


class ResultReviewsView(APIView):
    """Human overrides of a result's verdicts. Reviewing changes figures everyone else reads (human
    pass rates, judge agreement), so it needs `review` (a reviewer's, editor's or admin's), in the
    console as here."""

    required_scopes = {"GET": "read", "POST": "review"}

    @extend_schema(
        tags=TAG,
        responses={200: ReviewList},
        summary="Reviews of a result, oldest first",
        operation_id="result_reviews_list",
    )
    def get(self, request, result_id):
        result = selectors.result_get(result_id=result_id, project=project_of(request))
        return respond(
            ReviewList, _reviews_answer(selectors.verdict_review_list(result=result), result_id=result.result_id)
        )

    @extend_schema(
        tags=TAG,
        request=ReviewIn,
        responses={201: ReviewOut, 409: CONFLICT},
        summary="Override one criterion or rule verdict (the judge's verdict is kept)",
    )
    def post(self, request, result_id):
        result = selectors.result_get(result_id=result_id, project=project_of(request))
        body = validate_body(ReviewIn, request.data)
        review = services.verdict_review_create(result=result, reviewer=request.user, **body.model_dump())
        return respond(
            ReviewOut,
            with_attributes(
                selectors.review_view(review=review, result=result), result_id=result.result_id, in_force=True
            ),
            status=status.HTTP_201_CREATED,
        )


def _trial_started(request, view, body, create):
    """202 with the trial `create` queued for `body`, billed to the request's key. The heuristic judge
    spends nothing; any other candidate, or the items' own LLM judge, does."""
    if llm_configured() and body.candidate.judge_model not in HEURISTIC_JUDGES:
        llm_rate_check(request, view)
    trial = create(
        data=body,
        created_by=request.user if request.user.is_authenticated else None,
        api_key=request.auth if isinstance(request.auth, ApiKey) else None,
    )
    return respond(AlignmentTrialCreatedOut, trial, status=status.HTTP_202_ACCEPTED)


class RubricAlignmentTrialsView(APIView):
    """Alignment trials of a rubric's rules. Starting one needs `review` (reviewers measure judges)
    and spends the platform's LLM, as a run does: its judge calls are billed to the key."""

    required_scopes = {"GET": "read", "POST": "review"}
    llm_spending_methods = {"POST"}

    @extend_schema(
        tags=["rubrics"],
        request=AlignmentTrialIn,
        responses={202: AlignmentTrialCreatedOut},
        summary="Try a candidate judge for one rule on the held-out half of the items reviewers labelled",
        description=f"The candidate is one of a rubric version (the rule's text), a judge model, or a prompt "
        f"template. Refused with 422 when the rule has fewer than {MIN_LABELS} labelled items. A Celery job judges "
        "the held-out items; GET /api/v1/alignment-trials/{id} shows its progress and figures.",
        operation_id="rubric_alignment_trial_create",
    )
    def post(self, request, rubric_id):
        rubric = rubric_get(rubric_id, project=project_of(request))
        body = validate_body(AlignmentTrialIn, request.data)
        return _trial_started(request, self, body, partial(alignment_services.trial_create, rubric=rubric))

    @extend_schema(
        tags=["rubrics"],
        responses={200: AlignmentTrialList},
        summary="A rubric's alignment trials, newest first (at most 50; figures without the item lists)",
        operation_id="rubric_alignment_trial_list",
    )
    def get(self, request, rubric_id):
        rubric = rubric_get(rubric_id, project=project_of(request))
        trials = alignment_selectors.trial_list(rubric=rubric)
        return respond(AlignmentTrialList, [trial_answer(t, listed=True) for t in trials])


class MetricAlignmentTrialsView(APIView):
    """Alignment trials of agentic metrics: a rule's trial for a metric of the project's evaluations
    (of one agent, or every agent's). Same scopes and billing as a rule's."""

    required_scopes = {"GET": "read", "POST": "review"}
    llm_spending_methods = {"POST"}

    @extend_schema(
        tags=["agentic metrics"],
        request=MetricTrialIn,
        responses={202: AlignmentTrialCreatedOut},
        summary="Try a candidate judge for one agentic metric on the held-out half of the evaluations reviewers "
        "labelled",
        description=f"The candidate is a judge model or a prompt template (in place of the metric's rubric; the "
        f"session stays data). A reviewer's score counts as a pass from 0.6, as the judge's does. Refused with 422 "
        f"when fewer than {MIN_LABELS} evaluations are labelled. GET /api/v1/alignment-trials/{{id}} shows its "
        "progress and figures; publishing makes it the metric's judge for the agent's evaluations from then on.",
        operation_id="metric_alignment_trial_create",
    )
    def post(self, request):
        body = validate_body(MetricTrialIn, request.data)
        return _trial_started(request, self, body, partial(metric_trial_create, project=project_of(request)))

    @extend_schema(
        tags=["agentic metrics"],
        parameters=query_parameters(MetricTrialListQuery),
        responses={200: AlignmentTrialList},
        summary="The project's trials of agentic metrics, newest first (at most 50; figures without the item lists)",
        operation_id="metric_alignment_trial_list",
    )
    def get(self, request):
        query = query_of(MetricTrialListQuery, request)
        trials = alignment_selectors.metric_trial_list(project=project_of(request), agent_name=query.agent_name)
        return respond(AlignmentTrialList, [trial_answer(t, listed=True) for t in trials])


class AlignmentTrialView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=["rubrics"],
        responses={200: AlignmentTrialOut},
        summary="An alignment trial: progress, kappa before and after with intervals, the items that changed",
        operation_id="alignment_trial_get",
    )
    def get(self, request, trial_id):
        trial = alignment_selectors.trial_get(trial_id, project=project_of(request))
        return respond(AlignmentTrialOut, trial_answer(trial))


class AlignmentTrialPublishView(APIView):
    """Publishing changes how every later run judges the rule: `configure`, as editing the rubric."""

    required_scopes = {"POST": "configure"}

    @extend_schema(
        tags=["rubrics"],
        request=None,
        responses={201: AlignmentTrialOut, 409: CONFLICT},
        summary="Put a trial's candidate in force (a new rubric version, or the rule's judge model or prompt)",
        description="409 when the trial is not done, is published already, or did not find the candidate "
        "better at 95%, or when the rule has left the rubric since.",
        operation_id="alignment_trial_publish",
    )
    def post(self, request, trial_id):
        trial = alignment_selectors.trial_get(trial_id, project=project_of(request))
        trial = alignment_services.trial_publish(trial=trial, author=author_of(request))
        return respond(AlignmentTrialOut, trial_answer(trial), status=status.HTTP_201_CREATED)
