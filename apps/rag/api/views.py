from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.errors import InvalidInputError
from apps.core.llm.client import llm_configured
from apps.core.llm.quotas import llm_rate_check
from apps.core.api.pagination import LimitOffset
from apps.core.api.openapi import BAD_REQUEST

from .. import selectors, services
from ..models import TraceEvaluation
from ..query_object import QueryParseError
from .schemas import TraceAnswerOut, TraceEvaluationOut, TraceHistoryOut, TraceQueryIn

TAG = ["trace"]
_TRUE = {"1", "true", "yes", "on"}


class TraceView(APIView):
    required_scopes = {"POST": "evaluate"}
    # Counted against the key's EVALSITE_LLM_RATE when it uses the platform's LLM (429 in the schema).
    llm_spending_methods = {"POST"}

    @extend_schema(
        tags=TAG,
        request=TraceQueryIn,
        responses={200: TraceAnswerOut, 400: BAD_REQUEST},
        parameters=[OpenApiParameter("partial", bool, OpenApiParameter.QUERY, required=False,
                                     description="Score the complete tests even when others miss parameters.")],
        summary="Evaluate a RAG answer with TRACE metrics",
        description="Parses `query` (a JSON payload or natural language), flags missing parameters per test and "
        "scores the requested metrics (answer_accuracy, context_recall, context_precision, faithfulness, "
        "answer_relevancy, context_utilisation). When any test misses a parameter nothing is scored unless "
        "?partial=true. A query that is neither JSON nor understandable text is 400; a body without query, or "
        "a field past its size limit (docs/rag.md), is 422. The stored evaluation's id is in the X-Trace-Evaluation-Id header.",
    )
    def post(self, request):
        body = validate_body(TraceQueryIn, request.data)
        if llm_configured():  # the query is parsed, and LLM metrics scored, by the platform's LLM
            llm_rate_check(request, self)
        partial = request.query_params.get("partial", "").strip().lower() in _TRUE
        try:
            answer = services.trace_evaluation_create(query=body.query, partial=partial, user=request.user)
        except QueryParseError as exc:
            return Response(exc.response_body(), status=exc.status_code)
        return respond(TraceAnswerOut, answer.body, headers={"X-Trace-Evaluation-Id": str(answer.evaluation.pk)})


def evaluation_data(evaluation: TraceEvaluation) -> dict:
    return {
        "id": evaluation.pk,
        "created_at": evaluation.created_at,
        "source": evaluation.source,
        "outcome": evaluation.outcome,
        "partial": evaluation.partial,
        "judge": evaluation.judge,
        "tests": evaluation.tests,
        "missing": evaluation.missing,
        "evaluation_scores": evaluation.scores,
        "details": evaluation.details,
        "provided_parameters": evaluation.payload,
        "llm_usage": evaluation.llm_usage,
        "duration_ms": evaluation.duration_ms,
        "test_results": [{"name": row.name, "status": row.status, "score": row.score, "method": row.method,
                          "judge": row.judge, "missing": row.missing} for row in evaluation.test_rows.all()],
    }


class TraceHistoryView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=TAG,
        operation_id="trace_history_list",
        responses={200: TraceHistoryOut},
        parameters=[
            OpenApiParameter("test", str, OpenApiParameter.QUERY, required=False,
                             description="Only evaluations that requested this test (either spelling)."),
            OpenApiParameter("outcome", str, OpenApiParameter.QUERY, required=False, enum=TraceEvaluation.Outcome.values),
            OpenApiParameter("limit", int, OpenApiParameter.QUERY, required=False),
            OpenApiParameter("offset", int, OpenApiParameter.QUERY, required=False),
        ],
        summary="Stored TRACE evaluations, newest first",
    )
    def get(self, request):
        outcome = request.query_params.get("outcome") or None
        if outcome is not None and outcome not in TraceEvaluation.Outcome.values:
            raise InvalidInputError(f"outcome must be one of {', '.join(TraceEvaluation.Outcome.values)}")
        queryset = selectors.trace_evaluation_list(test=request.query_params.get("test") or None, outcome=outcome)
        paginator = LimitOffset()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return respond(TraceHistoryOut, {"count": paginator.count, "next": paginator.get_next_link(),
                                         "previous": paginator.get_previous_link(),
                                         "results": [evaluation_data(e) for e in page]})


class TraceEvaluationDetailView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, operation_id="trace_history_retrieve", responses={200: TraceEvaluationOut},
                   summary="One stored TRACE evaluation")
    def get(self, request, evaluation_id: int):
        evaluation = selectors.trace_evaluation_get(evaluation_id=evaluation_id)
        return respond(TraceEvaluationOut, evaluation_data(evaluation))
