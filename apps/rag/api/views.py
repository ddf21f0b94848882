import orjson
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.openapi import BAD_REQUEST
from apps.core.api.pagination import LimitOffset
from apps.core.api.query_params import query_of, query_parameters
from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.llm.client import llm_configured
from apps.core.llm.quotas import llm_rate_check
from apps.core.projects.resolution import project_of
from apps.traces.ingestion.redaction import Redaction, request_redaction

from .. import selectors, services
from ..query_object import QueryParseError
from .schemas import (
    LimitOffsetQuery,
    TraceAnswerOut,
    TraceEvaluationOut,
    TraceHistoryOut,
    TraceHistoryQuery,
    TraceQuery,
    TraceQueryIn,
)

TAG = ["trace"]


def _redacted_query(redaction: Redaction, query: str | dict) -> str | dict:
    """A JSON query is redacted value by value (its keys and structure stay, so it still parses) and
    written back only if something was replaced; natural language is redacted as text."""
    if redaction.redactor is None or isinstance(query, dict):
        return redaction.value(query)
    try:
        parsed = orjson.loads(query)
    except orjson.JSONDecodeError:
        return redaction.value(query)
    if not isinstance(parsed, dict):
        return redaction.value(query)
    replaced_before = sum(redaction.counts.values())
    redacted = redaction.value(parsed)
    return orjson.dumps(redacted).decode() if sum(redaction.counts.values()) > replaced_before else query


class TraceView(APIView):
    required_scopes = {"POST": "evaluate"}
    # Counted against the key's EVALSITE_LLM_RATE when it uses the platform's LLM (429 in the schema).
    llm_spending_methods = {"POST"}

    @extend_schema(
        tags=TAG,
        request=TraceQueryIn,
        responses={200: TraceAnswerOut, 400: BAD_REQUEST},
        parameters=query_parameters(TraceQuery),
        summary="Evaluate a RAG answer with TRACE metrics",
        description="Parses `query` (a JSON payload or natural language), flags missing parameters per test and "
        "scores the requested metrics (answer_accuracy, context_recall, context_precision, faithfulness, "
        "answer_relevancy, context_utilisation). When any test misses a parameter nothing is scored unless "
        "?partial=true. A query that is neither JSON nor understandable text is 400; a body without query, or "
        "a field past its size limit (docs/rag.md), is 422. The stored evaluation's id is in the "
        "X-Trace-Evaluation-Id header.",
    )
    def post(self, request):
        body = validate_body(TraceQueryIn, request.data)
        if llm_configured():  # the query is parsed, and LLM metrics scored, by the platform's LLM
            llm_rate_check(request, self)
        params = query_of(TraceQuery, request)
        # PII redaction before anything is stored or sent to a judge (issue 23): question, contexts,
        # answer and ground truth are the query's content, so the whole query is redacted.
        redaction = request_redaction(request)
        query = _redacted_query(redaction, body.query)
        try:
            evaluation = services.trace_evaluation_create(
                query=query,
                partial=params.partial,
                user=request.user,
                project_id=project_of(request).pk,
                on_stored=redaction.record,
            )
        except QueryParseError as exc:
            return Response(exc.response_body(), status=exc.status_code)
        return respond(TraceAnswerOut, evaluation, headers={"X-Trace-Evaluation-Id": str(evaluation.pk)})


class TraceHistoryView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=TAG,
        operation_id="trace_history_list",
        responses={200: TraceHistoryOut},
        parameters=query_parameters(TraceHistoryQuery) + query_parameters(LimitOffsetQuery),
        summary="Stored TRACE evaluations, newest first",
    )
    def get(self, request):
        params = query_of(TraceHistoryQuery, request)
        queryset = selectors.trace_evaluation_list(
            filters=params.model_dump(mode="json", exclude_none=True), project_id=project_of(request).pk
        )
        paginator = LimitOffset()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return respond(
            TraceHistoryOut,
            {
                "count": paginator.count,
                "next": paginator.get_next_link(),
                "previous": paginator.get_previous_link(),
                "results": selectors.trace_evaluations_with_scores(page),
            },
        )


class TraceEvaluationDetailView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=TAG,
        operation_id="trace_history_retrieve",
        responses={200: TraceEvaluationOut},
        summary="One stored TRACE evaluation",
    )
    def get(self, request, evaluation_id: int):
        return respond(
            TraceEvaluationOut,
            selectors.trace_evaluation_get(evaluation_id=evaluation_id, project_id=project_of(request).pk),
        )
