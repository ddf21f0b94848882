"""POST /v1/traces: the OTLP/HTTP trace receiver.

Status codes follow the OTLP/HTTP specification, so exporters know what to retry: 400 for a body
that cannot be decoded (never retried), 401/403 for the key, 413 too large, 415 unknown content
type or encoding, 429/503 with Retry-After when the server is busy or its database is (retried).
Error bodies are a google.rpc.Status in the request's encoding.
"""

import threading

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, DataError, IntegrityError, InterfaceError, OperationalError
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from pydantic import BaseModel, ConfigDict, Field
from rest_framework import exceptions
from rest_framework.views import APIView

from apps.core.projects.resolution import project_of

from ..redaction import request_redaction
from . import decode, services
from .mapping import ExportTooLarge, export_records


class PartialSuccessOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    rejected_spans: str = Field(alias="rejectedSpans", description="int64, as OTLP JSON writes it")
    error_message: str = Field(alias="errorMessage")


class ExportTraceServiceResponseOut(BaseModel):
    """The OTLP JSON form of ExportTraceServiceResponse (the protobuf form for protobuf requests)."""

    model_config = ConfigDict(populate_by_name=True)
    partial_success: PartialSuccessOut | None = Field(default=None, alias="partialSuccess")


class _InFlight:
    """How many exports this process is handling; beyond the limit the answer is 429 at once,
    rather than queueing requests (and their bodies) until the exporters time out."""

    def __init__(self):
        self._lock = threading.Lock()
        self.count = 0

    def enter(self, limit: int) -> bool:
        with self._lock:
            if self.count >= limit:
                return False
            self.count += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self.count -= 1


_in_flight = _InFlight()


def _encoding_of(request) -> str | None:
    return decode.encoding_of(request.META.get("CONTENT_TYPE", ""))


def _status_response(request, status: int, message: str, *, retry_after: bool = False) -> HttpResponse:
    body, content_type = decode.status_body(_encoding_of(request), status, message)
    response = HttpResponse(body, status=status, content_type=content_type)
    if retry_after:
        response["Retry-After"] = str(settings.EVALSITE_OTLP_RETRY_AFTER_SECONDS)
    return response


class OtlpTracesView(APIView):
    required_scopes = {"POST": "ingest"}

    # Not in the OpenAPI document: OTLP/HTTP is defined by its own specification (protobuf bodies,
    # google.rpc.Status errors), which the document's JSON conventions (ErrorOut, 422) cannot
    # describe; docs/traces.md ("OpenTelemetry traces") lists the statuses.
    @extend_schema(exclude=True)
    def post(self, request):
        encoding = _encoding_of(request)
        if encoding is None:
            return _status_response(request, 415, "Content-Type must be application/x-protobuf or application/json.")
        if not _in_flight.enter(settings.EVALSITE_OTLP_MAX_IN_FLIGHT):
            return _status_response(request, 429, "Too many exports in flight; retry later.", retry_after=True)
        try:
            return self._export(request, encoding)
        finally:
            _in_flight.leave()

    def _export(self, request, encoding: str) -> HttpResponse:
        try:
            raw = request.body
        except RequestDataTooBig:
            return _status_response(request, 413, "Request body too large.")
        try:
            body = decode.decompress(
                raw,
                request.META.get("HTTP_CONTENT_ENCODING", ""),
                limit=settings.EVALSITE_OTLP_MAX_DECOMPRESSED_BYTES,
                max_members=settings.EVALSITE_OTLP_MAX_GZIP_MEMBERS,
            )
            # An attribute is two objects in OTLP JSON: the attribute limit bounds them too.
            export = decode.parse_request(
                body, encoding, max_json_objects=settings.EVALSITE_OTLP_MAX_ATTRIBUTES_PER_REQUEST
            )
            del body
            records, rejections, reason = export_records(
                export,
                max_spans=settings.EVALSITE_OTLP_MAX_SPANS_PER_REQUEST,
                max_attributes=settings.EVALSITE_OTLP_MAX_ATTRIBUTES_PER_REQUEST,
                max_attributes_per_span=settings.EVALSITE_OTLP_MAX_ATTRIBUTES_PER_SPAN,
            )
        except decode.BodyError as exc:
            return _status_response(request, exc.status, exc.message)
        except ExportTooLarge as exc:
            return _status_response(request, 413, str(exc))
        except RecursionError:
            # The decoder refuses deep nesting before recursing; this only keeps any miss a 400.
            return _status_response(request, 400, "Body is nested too deep.")
        del export
        refused = rejections.count
        # PII redaction before anything is stored (issue 23): the mapped fields and the span attributes.
        redaction = request_redaction(request)
        redaction.spans(records)
        try:
            services.otlp_spans_ingest(
                records=records,
                rejected=rejections.by_reason,
                repeated=rejections.repeated,
                project_id=project_of(request).pk,
                on_stored=redaction.record,
            )
        except (OperationalError, InterfaceError):
            # Database down, restarting, or a lock held past EVALSITE_OTLP_LOCK_TIMEOUT_MS: worth a retry.
            return _status_response(request, 503, "The database is unavailable or busy; retry later.", retry_after=True)
        except (DataError, IntegrityError) as exc:
            return _status_response(request, 400, f"The spans could not be stored: {str(exc).splitlines()[0]}")
        except DatabaseError:
            return _status_response(request, 503, "The database failed; retry later.", retry_after=True)
        if encoding == decode.PROTOBUF:
            return HttpResponse(
                decode.export_response_protobuf(rejected=refused, message=reason), content_type=decode.PROTOBUF
            )
        partial = PartialSuccessOut(rejected_spans=str(refused), error_message=reason or "") if refused else None
        out = ExportTraceServiceResponseOut(partial_success=partial)
        return HttpResponse(out.model_dump_json(by_alias=True, exclude_none=True), content_type=decode.JSON)

    def handle_exception(self, exc):
        # DRF's own refusals (no key, wrong key, missing scope, throttling) in OTLP's error form.
        if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
            response = _status_response(self.request, 401, str(exc.detail))
            response["WWW-Authenticate"] = self.get_authenticate_header(self.request) or "Bearer"
            return response
        if isinstance(exc, exceptions.APIException):
            status = exc.status_code
            response = _status_response(self.request, status, str(exc.detail), retry_after=status == 429)
            if getattr(exc, "wait", None):
                response["Retry-After"] = str(int(exc.wait) + 1)
            return response
        return super().handle_exception(exc)

    def perform_content_negotiation(self, request, force=False):
        # Exporters send Accept headers DRF's renderers do not know; the answer's encoding is the request's.
        return super().perform_content_negotiation(request, force=True)
