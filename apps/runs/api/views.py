from typing import Literal

from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import BaseModel, Field
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.validation import validate_body
from apps.core.schema import CONFLICT
from apps.runs import selectors, services

from .schemas import ResultDetailOut, ResultList, ReviewIn, ReviewList, ReviewOut, RunCreateIn, RunList, RunOut
from .serializers import result_data, result_detail_data, review_data, reviews_data, run_data

TAG = ["runs"]


class RunListQuery(BaseModel):
    agent_id: str | None = None
    status: Literal["pending", "running", "completed", "failed", "cancelled"] | None = None
    limit: int = Field(default=50, ge=1, le=500)


class ResultQuery(BaseModel):
    passed: bool | None = None
    item_type: Literal["single_turn", "scenario", "question"] | None = None


def _run_or_404(run_id):
    return services.run_get_recovered(run_id=run_id)


class RunsView(APIView):
    required_scopes = {"GET": "read", "POST": "evaluate"}

    @extend_schema(tags=TAG, request=RunCreateIn, responses={201: RunOut}, summary="Start an evaluation run")
    def post(self, request):
        body = validate_body(RunCreateIn, request.data)
        run = services.run_create(created_by=request.user if request.user.is_authenticated else None,
                                  **body.model_dump())
        return Response(run_data(run), status=status.HTTP_201_CREATED)

    @extend_schema(tags=TAG, responses={200: RunList},
                   parameters=[OpenApiParameter("agent_id", str), OpenApiParameter("status", str),
                               OpenApiParameter("limit", int)],
                   summary="List runs, newest first", operation_id="runs_list")
    def get(self, request):
        query = RunListQuery.model_validate(request.query_params.dict())
        return Response([run_data(r) for r in selectors.runs_list(**query.model_dump())])


class RunDetailView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: RunOut}, summary="Get a run")
    def get(self, request, run_id):
        return Response(run_data(_run_or_404(run_id)))


class RunResultsView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: ResultList},
                   parameters=[OpenApiParameter("passed", bool), OpenApiParameter("item_type", str)],
                   summary="Results of a run, one per finished test item")
    def get(self, request, run_id):
        run = _run_or_404(run_id)
        query = ResultQuery.model_validate(request.query_params.dict())
        return Response([result_data(r, run) for r in selectors.run_results(run=run, **query.model_dump())])


class RunCancelView(APIView):
    required_scopes = {"POST": "evaluate"}

    @extend_schema(tags=TAG, request=None, responses={200: RunOut, 409: CONFLICT}, summary="Cancel a pending or running run")
    def post(self, request, run_id):
        run = services.run_cancel(run=_run_or_404(run_id))
        return Response(run_data(run))


class ResultDetailView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: ResultDetailOut}, summary="Get a result with its human reviews")
    def get(self, request, result_id):
        result = selectors.result_get(result_id=result_id)
        return Response(result_detail_data(result, selectors.result_reviews(result=result)))


class ResultReviewsView(APIView):
    """Human overrides of a result's verdicts. Reviewing changes figures everyone else reads (human
    pass rates, judge agreement), so it needs `configure`, in the console as here."""

    required_scopes = {"GET": "read", "POST": "configure"}

    @extend_schema(tags=TAG, responses={200: ReviewList}, summary="Reviews of a result, oldest first",
                   operation_id="result_reviews_list")
    def get(self, request, result_id):
        result = selectors.result_get(result_id=result_id)
        return Response(reviews_data(selectors.result_reviews(result=result), result_id=result.result_id))

    @extend_schema(tags=TAG, request=ReviewIn, responses={201: ReviewOut, 409: CONFLICT},
                   summary="Override one criterion or rule verdict (the judge's verdict is kept)")
    def post(self, request, result_id):
        result = selectors.result_get(result_id=result_id)
        body = validate_body(ReviewIn, request.data)
        review = services.verdict_review_create(result=result, reviewer=request.user, **body.model_dump())
        return Response(review_data(review, result_id=result.result_id, current=True), status=status.HTTP_201_CREATED)
