import logging

import orjson
from django.db import DatabaseError
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.validation import validate_body
from apps.core.errors import InvalidInputError, NotFoundError
from apps.core.permissions import IsStaff

from .. import selectors, services
from ..services import JudgeToolCall
from .schemas import (
    BatchEvaluateIn,
    BatchEvaluationOut,
    ClearOut,
    ExportOut,
    ExportQuery,
    FlatEvaluationOut,
    HealthOut,
    HistoryOut,
    HistoryQuery,
    ManualEvaluateIn,
    ManualEvaluationOut,
    SessionEvaluateIn,
    SessionEvaluationOut,
    SummaryOut,
)
from .serializers import batch_result_data, manual_evaluation_data, session_evaluation_data

logger = logging.getLogger(__name__)

TAG = ["agentic metrics"]
SERVICE_NAME = "agentic_metrics"
# Above this many rows the inline {"format", "data"} export refuses and points at the streamed one,
# rather than building a string the size of the table in the server's memory.
INLINE_EXPORT_MAX_ROWS = 100_000


def _query(model, request):
    return validate_body(model, request.query_params.dict())


class HealthView(APIView):
    @extend_schema(tags=TAG, responses={200: HealthOut, 503: HealthOut}, summary="Service and database health")
    def get(self, request):
        try:
            evaluations = selectors.evaluation_count()
            traces = selectors.trace_count()
        except DatabaseError as exc:
            logger.warning("health check: database unavailable: %s", exc)
            return Response({
                "status": "unhealthy", "service": SERVICE_NAME, "evaluations_count": None,
                "database": {"status": "disconnected", "error": type(exc).__name__},
            }, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        return Response({
            "status": "healthy", "service": SERVICE_NAME, "evaluations_count": evaluations,
            "database": {"status": "connected", "evaluations_stored": evaluations, "traces_stored": traces},
        })


class EvaluateSessionView(APIView):
    @extend_schema(tags=TAG, request=SessionEvaluateIn,
                   responses={200: SessionEvaluationOut, 404: OpenApiResponse(description="No trace for the session"),
                              409: OpenApiResponse(description="The trace is still active")},
                   summary="Evaluate a traced session",
                   description="An unchanged trace already judged by the same judge returns the stored evaluation "
                               "(reused: true) without judging again, unless force is true.")
    def post(self, request):
        body = validate_body(SessionEvaluateIn, request.data)
        result = services.evaluate_session(session_id=body.session_id, judge=body.judge, force=body.force)
        return Response(session_evaluation_data(result.evaluation, reused=result.reused))


class EvaluateManualView(APIView):
    @extend_schema(tags=TAG, request=ManualEvaluateIn, responses={200: ManualEvaluationOut},
                   summary="Evaluate an interaction without a trace",
                   description="Stored under a generated session id (returned) so history finds it.")
    def post(self, request):
        body = validate_body(ManualEvaluateIn, request.data)
        evaluation = services.evaluate_manual(
            user_query=body.user_query,
            agent_response=body.agent_response,
            tool_calls=[JudgeToolCall(tool_name=c.tool_name, tool_args=c.tool_args, tool_result=c.tool_result,
                                      success=c.success, error=c.error) for c in body.tool_calls],
            detected_intent=body.detected_intent,
            resource_type=body.resource_type,
            operation=body.operation,
            agent_name=body.agent_name,
            judge=body.judge,
            submitted=body.model_dump(mode="json", exclude={"judge"}),
        )
        return Response(manual_evaluation_data(evaluation))


class EvaluateBatchView(APIView):
    @extend_schema(tags=TAG, request=BatchEvaluateIn, responses={200: BatchEvaluationOut},
                   summary="Evaluate up to 500 traced sessions",
                   description="Unknown sessions are listed in missing_sessions, active ones in skipped_sessions. "
                               "LLM judging runs concurrently with a bound (EVALSITE_AGENTIC_CONCURRENCY).")
    def post(self, request):
        body = validate_body(BatchEvaluateIn, request.data)
        outcome = services.evaluate_sessions(session_ids=body.session_ids, judge=body.judge, force=body.force)
        return Response({
            "evaluated": len(outcome.evaluated),
            "not_found": len(outcome.missing),
            "results": [batch_result_data(r.evaluation, reused=r.reused) for r in outcome.evaluated],
            "missing_sessions": outcome.missing,
            "skipped_sessions": outcome.skipped,
        })


class SummaryView(APIView):
    @extend_schema(tags=TAG, responses={200: SummaryOut}, summary="Aggregate statistics over every evaluation")
    def get(self, request):
        return Response(selectors.evaluation_summary())


class _IgnoreFormatParameter(DefaultContentNegotiation):
    """`?format=` is the contract's export format (json|jsonl), not DRF's renderer override."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def _jsonl_chunks():
    buffer = []
    for row in selectors.evaluations_for_export():
        buffer.append(orjson.dumps(row, default=str))
        if len(buffer) >= 500:
            yield b"\n".join(buffer) + b"\n"
            buffer = []
    if buffer:
        yield b"\n".join(buffer) + b"\n"


def _json_array_chunks():
    yield b"["
    first = True
    buffer = []
    for row in selectors.evaluations_for_export():
        buffer.append((b"" if first else b",") + orjson.dumps(row, default=str))
        first = False
        if len(buffer) >= 500:
            yield b"".join(buffer)
            buffer = []
    buffer.append(b"]")
    yield b"".join(buffer)


class ExportView(APIView):
    content_negotiation_class = _IgnoreFormatParameter

    @extend_schema(
        tags=TAG,
        parameters=[
            OpenApiParameter("format", str, enum=["json", "jsonl"], default="json"),
            OpenApiParameter("stream", bool, default=False,
                             description="Stream a file download (a JSON array, or one JSON object per line) "
                                         "instead of the {format, data} envelope; memory stays flat at any size."),
        ],
        responses={200: ExportOut, (200, "application/x-ndjson"): OpenApiTypes.STR},
        summary="Export every evaluation as JSON or JSONL",
    )
    def get(self, request):
        query = _query(ExportQuery, request)
        if query.stream:
            chunks = _jsonl_chunks() if query.format == "jsonl" else _json_array_chunks()
            content_type = "application/x-ndjson" if query.format == "jsonl" else "application/json"
            response = StreamingHttpResponse(chunks, content_type=content_type)
            response["Content-Disposition"] = f'attachment; filename="agentic-evaluations.{query.format}"'
            return response
        total = selectors.evaluation_count()
        if total > INLINE_EXPORT_MAX_ROWS:
            raise InvalidInputError(
                f"{total} evaluations are too many for an inline export (limit {INLINE_EXPORT_MAX_ROWS}); "
                f"download them with GET /api/v1/metrics/export?format={query.format}&stream=1")
        rows = list(selectors.evaluations_for_export())
        if query.format == "jsonl":
            data = "\n".join(orjson.dumps(row, default=str).decode() for row in rows)
        else:
            data = orjson.dumps(rows, default=str).decode()
        return Response({"format": query.format, "data": data})


class HistoryView(APIView):
    @extend_schema(
        tags=TAG,
        parameters=[
            OpenApiParameter("limit", int, default=50, description="1-500"),
            OpenApiParameter("offset", int, default=0),
            OpenApiParameter("agent_name", str),
            OpenApiParameter("operation", str),
            OpenApiParameter("min_score", float, description="Minimum overall score (0-1)"),
        ],
        responses={200: HistoryOut},
        summary="Stored evaluations, newest first",
    )
    def get(self, request):
        query = _query(HistoryQuery, request)
        rows, has_more = selectors.evaluation_history(
            limit=query.limit, offset=query.offset, agent_name=query.agent_name, operation=query.operation,
            min_score=query.min_score)
        return Response({"count": len(rows), "limit": query.limit, "offset": query.offset, "has_more": has_more,
                         "evaluations": rows})


class HistoryDetailView(APIView):
    @extend_schema(tags=TAG, responses={200: FlatEvaluationOut, 404: OpenApiResponse(description="Never evaluated")},
                   summary="The latest evaluation of a session", operation_id="v1_metrics_history_session_retrieve")
    def get(self, request, session_id):
        evaluation = selectors.evaluation_latest(session_id=session_id)
        if evaluation is None:
            raise NotFoundError(f"No evaluation found for session {session_id}")
        return Response(selectors.evaluation_flat(evaluation))


class ClearView(APIView):
    permission_classes = [IsStaff]

    @extend_schema(tags=TAG, responses={200: ClearOut}, summary="Delete every trace and evaluation (staff only)")
    def delete(self, request):
        evaluations, traces = services.evaluations_and_traces_clear()
        return Response({"message": "All traces and evaluation results cleared",
                         "evaluations_deleted": evaluations, "traces_deleted": traces})
