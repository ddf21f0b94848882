import logging
from collections.abc import Callable
from contextlib import contextmanager
from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, transaction
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from rest_framework import exceptions as drf_exceptions
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.attributes import with_attributes
from apps.core.api.openapi import CONFLICT
from apps.core.api.query_params import query_parameters
from apps.core.api.responses import respond
from apps.core.api.validation import summarize_errors, validate_body
from apps.core.auth.permissions import scopes_of
from apps.core.errors import (
    ConflictError,
    DomainError,
    InvalidInputError,
    NotFoundError,
    ServiceUnavailableError,
)
from apps.core.models import SCOPE_ADMIN, SCOPE_READ
from apps.core.projects.resolution import project_of
from apps.traces import ledger, ledger_selectors, selectors, services
from apps.traces.costs import stored_cost
from apps.traces.ingestion.redaction import request_redaction

from .schemas import (
    LEDGER_DEFAULT_WINDOW_HOURS,
    MAX_TOOL_CALLS_PER_REQUEST,
    BatchIn,
    BatchOut,
    BatchTraceIn,
    CompleteIn,
    IntentIn,
    LedgerOut,
    LedgerQuery,
    ToolCallHeaders,
    ToolCallIn,
    ToolCallPageOut,
    ToolCallPageQuery,
    ToolCallsAnswer,
    ToolCallsOut,
    ToolCallsWrittenOut,
    TraceAnswer,
    TraceOut,
    TraceStartIn,
    TraceWrittenOut,
)

logger = logging.getLogger(__name__)

TAG = ["traces"]
_tool_calls_body = TypeAdapter(
    ToolCallIn | Annotated[list[ToolCallIn], Field(min_length=1, max_length=MAX_TOOL_CALLS_PER_REQUEST)]
)
_batch_item = TypeAdapter(BatchTraceIn)


def header_parameters(model: type[BaseModel]) -> list[OpenApiParameter]:
    """The OpenAPI header parameters of a header model: query_parameters' document of each field
    (name from its alias, schema, description), sent in a header instead of the query string."""
    parameters = query_parameters(model)
    for parameter in parameters:
        parameter.location = OpenApiParameter.HEADER
    return parameters


def _header_idempotency_key(request) -> str | None:
    # META rather than request.headers, which would build a dict of every header just for this one.
    raw = request.META.get("HTTP_IDEMPOTENCY_KEY")
    if raw is None:
        return None
    try:
        return ToolCallHeaders.model_validate({"Idempotency-Key": raw}).idempotency_key
    except ValidationError as exc:
        # Located in the header, as a body field's error is in the body.
        raise ValidationError.from_exception_data(
            exc.title,
            [
                {"type": err["type"], "loc": ("header", *err["loc"]), "input": raw, "ctx": err.get("ctx", {})}
                for err in exc.errors()
            ],
        ) from None


def _refusal_reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return ledger.validation_reason(exc)
    if isinstance(exc, ConflictError):
        return "conflict"
    if isinstance(exc, NotFoundError):
        return "not_found"
    if isinstance(exc, RequestDataTooBig):
        return "too_large"
    if isinstance(exc, ServiceUnavailableError):
        return "unavailable"
    if isinstance(exc, (InvalidInputError, DomainError, drf_exceptions.ParseError, drf_exceptions.ValidationError)):
        return "invalid"
    return "internal_error"


def _one(data) -> int:
    return 1


def _calls_in(data) -> int:
    return max(len(data), 1) if isinstance(data, list) else 1


def _traces_in(data) -> int:
    traces = data.get("traces") if isinstance(data, dict) else None
    return max(len(traces), 1) if isinstance(traces, list) else 1


@contextmanager
def _refusals_recorded(request, *, source: str = ledger.Source.REST, items: Callable[[Any], int] = _one):
    """Around a door's validation and storing: an item refused there (422, 404, 409, or a failure)
    rolled back with everything else, so it is counted as rejected here, in its own small
    transaction, before the error answers, in the ledger of the request's project (a key's own, as
    for what it stores). `items` counts the items of the body."""
    try:
        yield
    except Exception as exc:
        try:
            count = items(request.data)
        except Exception:  # an unparseable body is one item, refused
            count = 1
        reason = _refusal_reason(exc)
        try:
            with transaction.atomic():
                ledger.ingestion_record(
                    project=project_of(request), source=source, received=count, rejected={reason: count}
                )
        except DatabaseError:
            # The database that refused the item may refuse its ledger entry too; the answer still goes out.
            logger.warning(
                "ingestion ledger: could not record %s %s item(s) rejected (%s)", count, source, reason, exc_info=True
            )
        raise


def _tool_calls_next_url(
    trace, page: selectors.ToolCallPage, limit: int | None = None, absolute: Callable[[str], str] = str
) -> str | None:
    if page.next_after is None:
        return None
    query = {"after": page.next_after, **({"limit": limit} if limit else {})}
    return absolute(f"{reverse('trace-tool-call-page', args=[trace.session_id])}?{urlencode(query)}")


def _with_page(trace, page: selectors.ToolCallPage, *, limit: int | None = None, absolute: Callable[[str], str] = str):
    """The trace as TraceOut and ToolCallPageOut read it: with one page of its calls, their total
    and the next page's URL (`absolute` makes it a full URL)."""
    return with_attributes(
        trace,
        tool_calls=page.calls,
        tool_calls_total=page.total,
        tool_calls_next=_tool_calls_next_url(trace, page, limit=limit, absolute=absolute),
        cost=stored_cost(trace),
    )


def _written(request, trace, *, status=200, tool_calls=None):
    """The answer to a trace write: the trace for a caller who may read it, else an acknowledgement
    (TraceWrittenOut), which holds nothing the request did not send. The calls are read only when
    shown: `tool_calls` when the write has them all at hand, else the first page is read, so a big
    trace's answer stays one page."""
    if SCOPE_READ not in scopes_of(request):
        return respond(TraceWrittenOut, trace, status=status)
    page = (
        selectors.tool_call_first_page(tool_calls)
        if tool_calls is not None
        else selectors.trace_tool_call_page(trace=trace)
    )
    return respond(TraceOut, _with_page(trace, page), status=status)


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

    @extend_schema(
        tags=TAG,
        request=TraceStartIn,
        responses={201: TraceAnswer, 200: TraceAnswer, 409: CONFLICT},
        summary="Start a trace (idempotent on session_id)",
    )
    def post(self, request):
        with _refusals_recorded(request):
            redaction = request_redaction(request)  # PII redaction before anything is stored (issue 23)
            body = validate_body(TraceStartIn, redaction.fields(request.data))
            with redaction.storing():
                trace, created = services.trace_start(
                    session_id=body.session_id,
                    user_query=body.user_query,
                    agent_name=body.agent_name,
                    metadata=body.metadata,
                    project_id=project_of(request).pk,
                )
        return _written(
            request,
            trace,
            tool_calls=[] if created else None,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class TraceIntentView(APIView):
    required_scopes = {"POST": "ingest"}

    @extend_schema(
        tags=TAG, request=IntentIn, responses={200: TraceAnswer, 409: CONFLICT}, summary="Record the detected intent"
    )
    def post(self, request, session_id):
        with _refusals_recorded(request):
            redaction = request_redaction(request)  # PII redaction before anything is stored (issue 23)
            body = validate_body(IntentIn, redaction.fields(request.data))
            with redaction.storing():
                trace = services.trace_intent_record(
                    session_id=session_id,
                    intent=body.intent,
                    resource_type=body.resource_type,
                    operation=body.operation,
                    project_id=project_of(request).pk,
                )
        return _written(request, trace)


class TraceToolCallsView(APIView):
    required_scopes = {"POST": "ingest"}

    @extend_schema(
        tags=TAG,
        request=ToolCallIn,
        responses={201: ToolCallsAnswer, 200: ToolCallsAnswer, 409: CONFLICT},
        parameters=header_parameters(ToolCallHeaders),
        summary="Record one tool call, or a list of them in order",
        description="The body is one tool call object or a JSON array of them. Calls carrying a call_id "
        "(or sent with an Idempotency-Key header) are recorded once however often the request is retried.",
    )
    def post(self, request, session_id):
        with _refusals_recorded(request, items=_calls_in):
            redaction = request_redaction(request)  # PII redaction before anything is stored (issue 23)
            body = _tool_calls_body.validate_python(redaction.tool_calls(request.data))
            calls = body if isinstance(body, list) else [body]
            idempotency_key = _header_idempotency_key(request)
            inputs = [
                _tool_call_input(call, f"idem:{idempotency_key}:{i}" if idempotency_key else None)
                for i, call in enumerate(calls)
            ]
            with redaction.storing():
                recorded = services.trace_tool_calls_record(
                    session_id=session_id, calls=inputs, project_id=project_of(request).pk
                )
        any_created = any(created for _, created in recorded)
        # Without the read scope only each call's place: a call already recorded under the same
        # call_id may be another agent's.
        schema = ToolCallsOut if SCOPE_READ in scopes_of(request) else ToolCallsWrittenOut
        return respond(
            schema,
            {
                "session_id": session_id,
                "tool_calls": [with_attributes(call, created=created) for call, created in recorded],
            },
            status=status.HTTP_201_CREATED if any_created else status.HTTP_200_OK,
        )


class TraceCompleteView(APIView):
    required_scopes = {"POST": "ingest"}

    @extend_schema(
        tags=TAG, request=CompleteIn, responses={200: TraceAnswer, 409: CONFLICT}, summary="Complete a trace"
    )
    def post(self, request, session_id):
        with _refusals_recorded(request):
            redaction = request_redaction(request)  # PII redaction before anything is stored (issue 23)
            body = validate_body(CompleteIn, redaction.fields(request.data))
            with redaction.storing():
                trace = services.trace_complete(
                    session_id=session_id,
                    final_response=body.final_response,
                    success=body.success,
                    error=body.error,
                    project_id=project_of(request).pk,
                )
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
        with _refusals_recorded(request, source=ledger.Source.BATCH, items=_traces_in):
            body = validate_body(BatchIn, request.data)
            redaction = request_redaction(request)  # PII redaction before anything is stored (issue 23)
            valid: list[tuple[int, services.BatchTrace]] = []
            # Items that fail validation are answered and counted with the rest (one ledger entry per request).
            refused = services.BatchOutcome()
            for index, raw in enumerate(body.traces):
                raw = redaction.trace(raw)  # the redacted item is the one validated, stored and hashed
                try:
                    item = _batch_item.validate_python(raw)
                except ValidationError as exc:
                    session_id = raw.get("session_id") if isinstance(raw, dict) else None
                    refused.reject(
                        index,
                        session_id if isinstance(session_id, str) else None,
                        summarize_errors(exc),
                        code=ledger.validation_reason(exc),
                    )
                    continue
                valid.append(
                    (
                        index,
                        services.BatchTrace(
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
                        ),
                    )
                )
            with redaction.storing():
                outcome = services.traces_ingest_batch(items=valid, refused=refused, project_id=project_of(request).pk)
        return respond(
            BatchOut,
            {
                "accepted_count": len(outcome.accepted),
                "rejected_count": len(outcome.rejected),
                "accepted": outcome.accepted,
                "rejected": outcome.rejected,
            },
        )


class TraceDetailView(APIView):
    required_scopes = {"GET": "read", "DELETE": "admin"}

    @extend_schema(
        tags=TAG,
        responses={200: TraceOut},
        summary="Get the trace of a session",
        description="The trace with its tool calls, at most EVALSITE_TRACE_TOOL_CALLS_PAGE (default 500) "
        "of them: `tool_calls_total` says how many there are and `tool_calls_next` links the next page "
        "(GET /trace/{session_id}/tool-calls). A call's `seq` is its position in the trace, 1 to n.",
    )
    def get(self, request, session_id):
        trace = selectors.trace_get(session_id=session_id, project_id=project_of(request).pk)
        page = selectors.trace_tool_call_page(trace=trace)
        return respond(TraceOut, _with_page(trace, page, absolute=request.build_absolute_uri))

    @extend_schema(tags=TAG, responses={204: None}, summary="Delete the trace of a session (admin scope)")
    def delete(self, request, session_id):
        services.trace_delete(session_id=session_id, project_id=project_of(request).pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TraceToolCallPageView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=TAG,
        responses={200: ToolCallPageOut},
        summary="Page through the tool calls of a trace",
        parameters=query_parameters(ToolCallPageQuery),
        description="The calls after the cursor in order, each `seq` its position in the whole trace; follow "
        "`tool_calls_next` until it is null. A keyset on the stored order: every page costs the same.",
    )
    def get(self, request, session_id):
        query = ToolCallPageQuery.model_validate(request.query_params.dict())
        trace = selectors.trace_get(session_id=session_id, project_id=project_of(request).pk)
        limit = min(query.limit or selectors.tool_call_page_size(), selectors.tool_call_page_size())
        page = selectors.trace_tool_call_page(trace=trace, after=query.after, limit=limit)
        return respond(
            ToolCallPageOut, _with_page(trace, page, limit=query.limit and limit, absolute=request.build_absolute_uri)
        )


class IngestionLedgerView(APIView):
    # The admin scope, as the audit trail: a project admin's session, a superuser's, or a key of an
    # admin that holds it. Each reads its own project's ledger only (the key's, or the session's
    # chosen project): a superuser reads another project's by choosing it, as everywhere else.
    required_scopes = {"GET": SCOPE_ADMIN}

    @extend_schema(
        tags=["ingestion"],
        responses={200: LedgerOut},
        parameters=query_parameters(LedgerQuery),
        summary="What came in and what became of it: the project's ingestion ledger over a time window (project "
        "admins)",
        description="Per door, the items the request's project (its key's, or the session's chosen project) received "
        "in [since, until) and what became of each: stored, duplicate "
        "(an identical retry), rejected or dropped, with their reasons; `received = stored + duplicate + rejected + "
        "dropped` holds for every entry, so `balanced` is false only if something was lost. Items: lifecycle "
        "records for rest (a start, an intent, each tool call, a completion), traces for batch, spans for otlp. "
        "Online evaluation counts (rule, trace) evaluations of the project's rules: sampled, then evaluated, "
        "skipped or errored. Needs the admin scope.",
    )
    def get(self, request):
        query = LedgerQuery.model_validate(request.query_params.dict())
        until = query.until or timezone.now()
        since = query.since or until - timedelta(hours=LEDGER_DEFAULT_WINDOW_HOURS)
        if since > until:
            raise InvalidInputError("since must not be later than until")
        sources = [query.source] if query.source else None
        counts = ledger_selectors.ingestion_ledger(
            project=project_of(request), since=since, until=until, sources=sources
        )
        online = counts.pop(ledger.Source.ONLINE_EVALUATION, None)
        return respond(LedgerOut, {"since": since, "until": until, "sources": counts, "online_evaluation": online})
