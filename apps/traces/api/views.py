from typing import Annotated

from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import Field, TypeAdapter, ValidationError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.responses import respond
from apps.core.api.validation import summarize_errors, validate_body
from apps.core.models import SCOPE_READ
from apps.core.permissions import scopes_of
from apps.core.schema import CONFLICT
from apps.traces import selectors, services

from .schemas import (
    BatchIn,
    BatchOut,
    BatchTraceIn,
    CompleteIn,
    IdempotencyKey,
    IntentIn,
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_TOOL_CALLS_PER_REQUEST,
    ToolCallIn,
    ToolCallsAnswer,
    ToolCallsOut,
    ToolCallsWrittenOut,
    TraceAnswer,
    TraceOut,
    TraceStartIn,
    TraceWrittenOut,
)
from .serializers import tool_call_data, trace_data

TAG = ["traces"]
_tool_calls_body = TypeAdapter(
    ToolCallIn | Annotated[list[ToolCallIn], Field(min_length=1, max_length=MAX_TOOL_CALLS_PER_REQUEST)]
)
_batch_item = TypeAdapter(BatchTraceIn)
_idempotency_key = TypeAdapter(IdempotencyKey)


def _header_idempotency_key(request) -> str | None:
    # META rather than request.headers, which would build a dict of every header just for this one.
    raw = request.META.get("HTTP_IDEMPOTENCY_KEY")
    if raw is None:
        return None
    try:
        return _idempotency_key.validate_python(raw)
    except ValidationError as exc:
        raise ValidationError.from_exception_data(exc.title, [
            {"type": err["type"], "loc": ("header", "Idempotency-Key"), "input": raw, "ctx": err.get("ctx", {})}
            for err in exc.errors()
        ]) from None


def _written(request, trace, *, status=200, tool_calls=None):
    """The answer to a trace write: the trace for a caller who may read it, else an acknowledgement
    (TraceWrittenOut), which holds nothing the request did not send. The calls are read only when shown."""
    if SCOPE_READ not in scopes_of(request):
        return respond(TraceWrittenOut, {"session_id": trace.session_id, "status": trace.status}, status=status)
    calls = tool_calls if tool_calls is not None else selectors.trace_tool_call_list(trace=trace)
    return respond(TraceOut, trace_data(trace, tool_calls=calls), status=status)


def _tool_call_input(call: ToolCallIn, call_id: str | None = None) -> services.ToolCallInput:
    return services.ToolCallInput(
        tool_name=call.tool_name,
        tool_args=call.tool_args,
        tool_result=call.tool_result,
        success=call.success,
        error=call.error,
        duration_ms=call.duration_ms,
        call_id=call.call_id or call_id,
        timestamp=call.timestamp,
    )


class TraceStartView(APIView):
    required_scopes = {"POST": "ingest"}

    @extend_schema(tags=TAG, request=TraceStartIn, responses={201: TraceAnswer, 200: TraceAnswer, 409: CONFLICT},
                   summary="Start a trace (idempotent on session_id)")
    def post(self, request):
        body = validate_body(TraceStartIn, request.data)
        trace, created = services.trace_start(session_id=body.session_id, user_query=body.user_query,
                                              agent_name=body.agent_name, metadata=body.metadata)
        return _written(request, trace, tool_calls=[] if created else None,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class TraceIntentView(APIView):
    required_scopes = {"POST": "ingest"}

    @extend_schema(tags=TAG, request=IntentIn, responses={200: TraceAnswer, 409: CONFLICT}, summary="Record the detected intent")
    def post(self, request, session_id):
        body = validate_body(IntentIn, request.data)
        trace = services.trace_intent_record(session_id=session_id, intent=body.intent,
                                             resource_type=body.resource_type, operation=body.operation)
        return _written(request, trace)


class TraceToolCallsView(APIView):
    required_scopes = {"POST": "ingest"}

    @extend_schema(
        tags=TAG,
        request=ToolCallIn,
        responses={201: ToolCallsAnswer, 200: ToolCallsAnswer, 409: CONFLICT},
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
                                     description="Makes a retried request safe for calls sent without call_id "
                                     f"(1 to {MAX_IDEMPOTENCY_KEY_LENGTH} characters).")],
        summary="Record one tool call, or a list of them in order",
        description="The body is one tool call object or a JSON array of them. Calls carrying a call_id "
        "(or sent with an Idempotency-Key header) are recorded once however often the request is retried.",
    )
    def post(self, request, session_id):
        body = _tool_calls_body.validate_python(request.data)
        calls = body if isinstance(body, list) else [body]
        idempotency_key = _header_idempotency_key(request)
        inputs = [
            _tool_call_input(call, f"idem:{idempotency_key}:{i}" if idempotency_key else None)
            for i, call in enumerate(calls)
        ]
        recorded = services.trace_tool_calls_record(session_id=session_id, calls=inputs)
        any_created = any(created for _, created in recorded)
        if SCOPE_READ not in scopes_of(request):
            # A call already recorded under the same call_id may be another agent's: only its place.
            return respond(ToolCallsWrittenOut, {"session_id": session_id, "tool_calls": [
                {"seq": call.seq, "call_id": call.call_id, "created": created} for call, created in recorded]},
                status=status.HTTP_201_CREATED if any_created else status.HTTP_200_OK)
        return respond(
            ToolCallsOut,
            {"session_id": session_id,
             "tool_calls": [{**tool_call_data(call), "created": created} for call, created in recorded]},
            status=status.HTTP_201_CREATED if any_created else status.HTTP_200_OK,
        )


class TraceCompleteView(APIView):
    required_scopes = {"POST": "ingest"}

    @extend_schema(tags=TAG, request=CompleteIn, responses={200: TraceAnswer, 409: CONFLICT}, summary="Complete a trace")
    def post(self, request, session_id):
        body = validate_body(CompleteIn, request.data)
        trace = services.trace_complete(session_id=session_id, final_response=body.final_response,
                                        success=body.success, error=body.error)
        return _written(request, trace)


class TraceBatchView(APIView):
    required_scopes = {"POST": "ingest"}
    # A NUL in one trace rejects that trace in the answer, not the whole batch (see OrjsonParser).
    body_items_validated_alone = True

    @extend_schema(
        tags=TAG,
        request=BatchIn,
        responses={200: BatchOut},
        summary="Ingest whole traces",
        description="Each item is validated and stored on its own: the answer lists accepted items "
        "(created, or unchanged for an identical retry) and rejected items with their index and reason.",
    )
    def post(self, request):
        body = validate_body(BatchIn, request.data)
        valid: list[tuple[int, services.BatchTrace]] = []
        rejected: list[dict] = []
        for index, raw in enumerate(body.traces):
            try:
                item = _batch_item.validate_python(raw)
            except ValidationError as exc:
                session_id = raw.get("session_id") if isinstance(raw, dict) else None
                rejected.append({"index": index, "session_id": session_id if isinstance(session_id, str) else None,
                                 "reason": summarize_errors(exc)})
                continue
            valid.append((index, services.BatchTrace(
                session_id=item.session_id,
                user_query=item.user_query,
                agent_name=item.agent_name,
                final_response=item.final_response,
                success=item.success,
                intent_detected=item.intent_detected,
                resource_type=item.resource_type,
                operation=item.operation,
                error=item.error,
                tool_calls=[_tool_call_input(c) for c in item.tool_calls],
                start_time=item.start_time,
                end_time=item.end_time,
                metadata=item.metadata,
                canonical=raw,
            )))
        outcome = services.traces_ingest_batch(items=valid)
        rejected = sorted(rejected + outcome.rejected, key=lambda entry: entry["index"])
        return respond(BatchOut, {
            "accepted_count": len(outcome.accepted),
            "rejected_count": len(rejected),
            "accepted": outcome.accepted,
            "rejected": rejected,
        })


class TraceDetailView(APIView):
    required_scopes = {"GET": "read", "DELETE": "admin"}

    @extend_schema(tags=TAG, responses={200: TraceOut}, summary="Get the trace of a session")
    def get(self, request, session_id):
        return respond(TraceOut, trace_data(selectors.trace_get(session_id=session_id)))

    @extend_schema(tags=TAG, responses={204: None}, summary="Delete the trace of a session (admin scope)")
    def delete(self, request, session_id):
        services.trace_delete(session_id=session_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
