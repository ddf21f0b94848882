import logging
from itertools import islice

import orjson
from django.conf import settings
from django.db import DatabaseError
from django.http import StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.agentic import fastpath, selectors, services
from apps.agentic.judges import JudgeInput, JudgeToolCall
from apps.core.api.query_params import query_of, query_parameters
from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.audit.services import audit_record
from apps.core.errors import InvalidInputError
from apps.core.llm.client import llm_configured
from apps.core.llm.quotas import llm_evaluations_check, llm_rate_check
from apps.core.projects.resolution import project_of
from apps.scores.agreement import agreement_entry

from .schemas import (
    AgreementQuery,
    BatchEvaluateIn,
    BatchEvaluationOut,
    ClearOut,
    ExportJsonOut,
    ExportQuery,
    HealthOut,
    HistoryOut,
    HistoryQuery,
    HistoryRecordOut,
    ManualEvaluateIn,
    ManualEvaluationOut,
    MetricAgreementOut,
    SessionEvaluateIn,
    SessionEvaluationOut,
    SummaryOut,
)

logger = logging.getLogger(__name__)
TAG = ["agentic metrics"]
# Rows per chunk written to a streamed export: big enough that per-chunk overhead vanishes,
# small enough that the server holds only a few hundred kilobytes at a time.
EXPORT_CHUNK_ROWS = 1000


def _spends_llm(judge: str | None) -> bool:
    """Whether the judge a body names (None: the default) is the platform's LLM judge."""
    return judge != "heuristic" and llm_configured()


def _unhealthy() -> Response:
    # The driver's message can name hosts and users; it goes to the log, not to the client.
    logger.warning("agentic health check: database unavailable", exc_info=True)
    return respond(
        HealthOut,
        {
            "status": "unhealthy",
            "service": "agentic_metrics",
            "evaluations_count": None,
            "database": {"status": "disconnected"},
        },
        status=status.HTTP_503_SERVICE_UNAVAILABLE,
    )


class HealthView(APIView):
    required_scopes = {"GET": "read"}

    def handle_exception(self, exc):
        # API keys are looked up in the same database, so an outage first surfaces while authenticating
        # the request, before get() runs: it must still be the contract's 503 "unhealthy", not a 500.
        if isinstance(exc, DatabaseError):
            return _unhealthy()
        return super().handle_exception(exc)

    @extend_schema(tags=TAG, responses={200: HealthOut, 503: HealthOut}, summary="Service and database health")
    def get(self, request):
        try:
            project_id = project_of(request).pk
            evaluations = selectors.evaluation_count(project_id=project_id)
            traces = selectors.trace_count(project_id=project_id)
        except DatabaseError:
            return _unhealthy()
        return respond(
            HealthOut,
            {
                "status": "healthy",
                "service": "agentic_metrics",
                "evaluations_count": evaluations,
                "database": {"status": "connected", "evaluations_stored": evaluations, "traces_stored": traces},
            },
        )


class EvaluateSessionView(APIView):
    required_scopes = {"POST": "evaluate"}
    # Counted against the key's EVALSITE_LLM_RATE when it uses the platform's LLM (429 in the schema).
    llm_spending_methods = {"POST"}

    @extend_schema(
        tags=TAG, request=SessionEvaluateIn, responses={200: SessionEvaluationOut}, summary="Evaluate a traced session"
    )
    def post(self, request):
        body = validate_body(SessionEvaluateIn, request.data)
        if _spends_llm(body.judge):
            llm_rate_check(request, self)
        outcome = services.evaluation_create_for_session(
            session_id=body.session_id, judge_name=body.judge, force=body.force, project_id=project_of(request).pk
        )
        return respond(SessionEvaluationOut, outcome)


class EvaluateManualView(APIView):
    required_scopes = {"POST": "evaluate"}
    # Counted against the key's EVALSITE_LLM_RATE when it uses the platform's LLM (429 in the schema).
    llm_spending_methods = {"POST"}

    @extend_schema(
        tags=TAG,
        request=ManualEvaluateIn,
        responses={200: ManualEvaluationOut},
        summary="Evaluate an interaction that was not traced",
    )
    def post(self, request):
        body = validate_body(ManualEvaluateIn, request.data)
        if _spends_llm(body.judge):
            llm_rate_check(request, self)
        data = JudgeInput(
            query=body.user_query,
            final_response=body.agent_response,
            tool_calls=tuple(
                JudgeToolCall(c.tool_name, c.tool_args, c.tool_result, c.success, c.error) for c in body.tool_calls
            ),
            intent=body.detected_intent,
            resource_type=body.resource_type,
            operation=body.operation,
            success=body.success,
        )
        evaluation = services.evaluation_create_manual(
            data=data,
            agent_name=body.agent_name,
            judge_name=body.judge,
            manual_input=body.model_dump(mode="json", exclude={"judge"}),
            project_id=project_of(request).pk,
        )
        return respond(ManualEvaluationOut, evaluation)


class EvaluateBatchView(APIView):
    required_scopes = {"POST": "evaluate"}
    # Counted against the key's EVALSITE_LLM_RATE when it uses the platform's LLM (429 in the schema).
    llm_spending_methods = {"POST"}

    @extend_schema(
        tags=TAG,
        request=BatchEvaluateIn,
        responses={200: BatchEvaluationOut},
        summary="Evaluate up to 500 traced sessions",
    )
    def post(self, request):
        body = validate_body(BatchEvaluateIn, request.data)
        if _spends_llm(body.judge):
            # Counted before any reuse of stored verdicts: the bound holds whatever `force` says.
            llm_evaluations_check(count=len(set(body.session_ids)))
            llm_rate_check(request, self)
        batch = services.evaluations_create_for_sessions(
            session_ids=body.session_ids, judge_name=body.judge, force=body.force, project_id=project_of(request).pk
        )
        return respond(BatchEvaluationOut, batch)


class SummaryView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: SummaryOut}, summary="Aggregate statistics over all evaluations")
    def get(self, request):
        return respond(SummaryOut, selectors.evaluation_summary(project_id=project_of(request).pk))


class AgreementView(APIView):
    """How each judge agrees with the reviewers on each agentic metric: Cohen's kappa with its 95%
    interval, raw agreement, the confusion matrix, n and the disagreeing evaluations (a score of
    METRIC_PASS or more is a pass, for the judge as for the reviewer)."""

    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=TAG,
        responses={200: MetricAgreementOut},
        summary="Judge-human agreement per agentic metric and judge",
        operation_id="v1_metrics_agreement",
        parameters=query_parameters(AgreementQuery),
    )
    def get(self, request):
        query = query_of(AgreementQuery, request)
        rows = selectors.metric_agreement(project_id=project_of(request).pk, agent_name=query.agent_name)
        links = selectors.evaluation_links({s for _judge, row in rows for s in row.disagreements})
        for link in links.values():
            link["url"] = reverse("console:trace", args=[link["session_id"]])
        return respond(
            MetricAgreementOut,
            {
                "reviews": sum(row.reviewed + row.judge_unassessed for _judge, row in rows),
                "metrics": [agreement_entry(row, links, judge=judge) for judge, row in rows],
            },
        )


class HistoryView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=TAG,
        responses={200: HistoryOut},
        summary="Stored evaluations, newest first",
        operation_id="v1_metrics_history_list",
        parameters=query_parameters(HistoryQuery),
    )
    def get(self, request):
        query = query_of(HistoryQuery, request)
        page = selectors.evaluation_history(
            limit=query.limit,
            offset=query.offset,
            filters=query.model_dump(include={"agent_name", "operation", "min_score"}, exclude_none=True),
            project_id=project_of(request).pk,
        )
        return respond(
            HistoryOut,
            {
                "count": len(page.evaluations),
                "limit": query.limit,
                "offset": query.offset,
                "has_more": page.has_more,
                "evaluations": page.evaluations,
            },
        )


class HistoryDetailView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: HistoryRecordOut}, summary="Latest evaluation of a session")
    def get(self, request, session_id):
        return respond(
            HistoryRecordOut,
            selectors.evaluation_latest_get(session_id=session_id, project_id=project_of(request).pk),
        )


def _chunks(rows):
    while chunk := list(islice(rows, EXPORT_CHUNK_ROWS)):
        yield chunk


def _stream(fmt: str, project_id: int):
    # Fenced fast path (issue 22 item 3 allows one for bulk export; fastpath.enabled() is agentic's
    # one vendor check, for this and the batch's Score COPY, and its only cursor()s are
    # selectors.evaluation_export_jsonl_postgres and fastpath.scores_copy): on PostgreSQL the
    # database writes the JSON Lines itself with COPY, several times the rows/s of the ORM path a
    # million-row export would otherwise take. The ORM path below gives the same records, in the
    # same order, on every database; the contract tests compare the two.
    if fastpath.enabled():
        yield from _stream_lines(fmt, selectors.evaluation_export_jsonl_postgres(project_id=project_id))
        return
    rows = (
        orjson.dumps(selectors.export_record(row), default=str)
        for row in selectors.evaluation_export_rows(project_id=project_id)
    )
    if fmt == "jsonl":
        for chunk in _chunks(rows):
            yield b"\n".join(chunk) + b"\n"
        return
    yield b"["
    separator = b""
    for chunk in _chunks(rows):
        yield separator + b",".join(chunk)
        separator = b","
    yield b"]"


def _stream_lines(fmt: str, blocks):
    """JSON Lines blocks as they come (jsonl), or turned into one JSON array (json): a raw
    newline never occurs inside a JSON record, so each one ends a record."""
    if fmt == "jsonl":
        yield from blocks
        return
    yield b"["
    separator, pending = b"", b""
    for block in blocks:
        data = pending + block
        cut = data.rfind(b"\n")
        if cut < 0:
            pending = data
            continue
        yield separator + data[:cut].replace(b"\n", b",")
        separator, pending = b",", data[cut + 1 :]
    if pending:
        yield separator + pending
    yield b"]"


class ExportNegotiation(DefaultContentNegotiation):
    """Here `format` is the endpoint's own parameter (json|jsonl), not DRF's renderer override,
    which would answer 404 to format=jsonl."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class ExportView(APIView):
    required_scopes = {"GET": "read"}

    content_negotiation_class = ExportNegotiation

    @extend_schema(
        tags=TAG,
        summary="Export every evaluation as JSON or JSONL",
        responses={
            (200, "application/json"): OpenApiResponse(ExportJsonOut, description="{format, data}, or the file"),
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR, description="download=true&format=jsonl"),
        },
        description="Without `download`, the contract's `{format, data}` with the export as a string. With "
        "`download=true`, the file itself (a JSON array, or one JSON object per line), streamed from a "
        "database cursor so the server's memory does not grow with the number of evaluations.",
        parameters=query_parameters(ExportQuery),
    )
    def get(self, request):
        query = query_of(ExportQuery, request)
        project_id = project_of(request).pk
        if query.download:
            response = StreamingHttpResponse(
                _stream(query.format, project_id),
                content_type="application/json" if query.format == "json" else "application/x-ndjson",
            )
            response["Content-Disposition"] = f'attachment; filename="agentic-evaluations.{query.format}"'
            return response
        total = selectors.evaluation_count(project_id=project_id)
        if total > settings.EVALSITE_AGENTIC_EXPORT_INLINE_MAX_ROWS:
            raise InvalidInputError(
                f"{total} evaluations are more than the {settings.EVALSITE_AGENTIC_EXPORT_INLINE_MAX_ROWS} an inline "
                f"export holds; stream them with download=true"
            )
        data = b"".join(_stream(query.format, project_id)).decode()
        return respond(ExportJsonOut, {"format": query.format, "data": data})


class ClearView(APIView):
    required_scopes = {"DELETE": "admin"}

    @extend_schema(
        tags=TAG,
        responses={200: ClearOut},
        summary="Delete all traces and evaluations of the key's project (admin scope)",
    )
    def delete(self, request):
        evaluations, traces = services.evaluations_clear(project_id=project_of(request).pk)
        audit_record(
            action="clear", object_type="traces", changes={"evaluations": [evaluations, 0], "traces": [traces, 0]}
        )
        return respond(ClearOut, {"message": "All traces and evaluation results cleared"})
