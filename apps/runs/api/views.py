from typing import Literal

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from pydantic import BaseModel, Field
from rest_framework import status
from rest_framework.views import APIView

from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.schema import CONFLICT, ErrorOut
from apps.runs import selectors, services

from .schemas import (ComparisonOut, ResultDetailOut, ResultList, ReviewIn, ReviewList, ReviewOut, RunCreateIn,
                      RunItemList, RunList, RunOut)
from .serializers import comparison_data, result_data, result_detail_data, review_data, reviews_data, run_data

TAG = ["runs"]


class RunListQuery(BaseModel):
    agent_id: str | None = None
    status: Literal["pending", "running", "completed", "failed", "cancelled"] | None = None
    limit: int = Field(default=50, ge=1, le=500)


class ResultQuery(BaseModel):
    passed: bool | None = None
    item_type: Literal["single_turn", "scenario", "question"] | None = None


class ItemQuery(BaseModel):
    flaky: bool | None = None
    offset: int = Field(default=0, ge=0, le=1_000_000)
    limit: int = Field(default=100, ge=1, le=1000)


def _run_or_404(run_id):
    return services.run_recover(run_id=run_id)


class RunsView(APIView):
    required_scopes = {"GET": "read", "POST": "evaluate"}

    @extend_schema(tags=TAG, request=RunCreateIn, responses={201: RunOut}, summary="Start an evaluation run")
    def post(self, request):
        body = validate_body(RunCreateIn, request.data)
        run = services.run_create(created_by=request.user if request.user.is_authenticated else None,
                                  **body.model_dump())
        return respond(RunOut, run_data(run), status=status.HTTP_201_CREATED)

    @extend_schema(tags=TAG, responses={200: RunList},
                   parameters=[OpenApiParameter("agent_id", str), OpenApiParameter("status", str),
                               OpenApiParameter("limit", int)],
                   summary="List runs, newest first", operation_id="runs_list")
    def get(self, request):
        query = RunListQuery.model_validate(request.query_params.dict())
        runs = list(selectors.run_list(**query.model_dump()))
        fingerprints = selectors.run_judge_fingerprints(runs=runs)
        return respond(RunList, [run_data(r, fingerprints[r.pk]) for r in runs])


class RunDetailView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: RunOut}, summary="Get a run")
    def get(self, request, run_id):
        return respond(RunOut, run_data(_run_or_404(run_id)))


NOT_COMPARABLE = OpenApiResponse(ErrorOut, description="The runs are not of the same test set (or question set).")


class RunCompareView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: ComparisonOut, 422: NOT_COMPARABLE},
                   summary="Compare run b with run a: paired changes, McNemar test, verdict, judge changes")
    def get(self, request, run_id, other_run_id):
        comparison = selectors.run_comparison(base=_run_or_404(run_id), head=_run_or_404(other_run_id))
        return respond(ComparisonOut, comparison_data(comparison))


class RunResultsView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: ResultList},
                   parameters=[OpenApiParameter("passed", bool), OpenApiParameter("item_type", str)],
                   summary="Results of a run, one per finished test item")
    def get(self, request, run_id):
        run = _run_or_404(run_id)
        query = ResultQuery.model_validate(request.query_params.dict())
        return respond(ResultList, [result_data(r, run) for r in selectors.result_list(run=run, **query.model_dump())])


class RunItemsView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: RunItemList},
                   parameters=[OpenApiParameter("flaky", bool), OpenApiParameter("offset", int),
                               OpenApiParameter("limit", int)],
                   summary="Items of a run with their attempts: canonical verdict, pass rate, pass^k, pass@k, flaky")
    def get(self, request, run_id):
        run = _run_or_404(run_id)
        query = ItemQuery.model_validate(request.query_params.dict())
        return respond(RunItemList, selectors.run_item_list(run=run, **query.model_dump()))


class RunCancelView(APIView):
    required_scopes = {"POST": "evaluate"}

    @extend_schema(tags=TAG, request=None, responses={200: RunOut, 409: CONFLICT}, summary="Cancel a pending or running run")
    def post(self, request, run_id):
        run = services.run_cancel(run=_run_or_404(run_id))
        return respond(RunOut, run_data(run))


class ResultDetailView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: ResultDetailOut}, summary="Get a result with its human reviews")
    def get(self, request, result_id):
        result = selectors.result_get(result_id=result_id)
        return respond(ResultDetailOut, result_detail_data(result, selectors.verdict_review_list(result=result)))


class ResultReviewsView(APIView):
    """Human overrides of a result's verdicts. Reviewing changes figures everyone else reads (human
    pass rates, judge agreement), so it needs `configure`, in the console as here."""

    required_scopes = {"GET": "read", "POST": "configure"}

    @extend_schema(tags=TAG, responses={200: ReviewList}, summary="Reviews of a result, oldest first",
                   operation_id="result_reviews_list")
    def get(self, request, result_id):
        result = selectors.result_get(result_id=result_id)
        return respond(ReviewList,
                       reviews_data(selectors.verdict_review_list(result=result), result_id=result.result_id))

    @extend_schema(tags=TAG, request=ReviewIn, responses={201: ReviewOut, 409: CONFLICT},
                   summary="Override one criterion or rule verdict (the judge's verdict is kept)")
    def post(self, request, result_id):
        result = selectors.result_get(result_id=result_id)
        body = validate_body(ReviewIn, request.data)
        review = services.verdict_review_create(result=result, reviewer=request.user, **body.model_dump())
        return respond(ReviewOut, review_data(review, result_id=result.result_id, current=True),
                       status=status.HTTP_201_CREATED)
