"""OTLP/HTTP bodies in and out: protobuf or OTLP JSON, optionally gzip-compressed.

OTLP JSON is protobuf's JSON mapping with two differences (trace and span ids are hex, not base64;
enums may be integers, which protobuf's parser accepts anyway), so ids are rewritten to base64 and
the rest goes through `google.protobuf.json_format`.
"""

import base64
import binascii
import re
import zlib

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# application/protobuf is not in the spec, but some hand-written clients send it.
_CONTENT_TYPES = {PROTOBUF: PROTOBUF, "application/protobuf": PROTOBUF, JSON: JSON}

# gRPC codes for google.rpc.Status, by HTTP status (as the OTLP/HTTP spec pairs them).
_GRPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 405: 12, 406: 3, 413: 8, 415: 3, 429: 8, 503: 14}


class _SurrogateSearch:
    """protobuf's JSON parser searches every string for unpaired surrogates with a regex costing
    ~30 ns a character: 1.7 s of CPU for one 60 MB attribute a 60 KB gzip body carries. This finds
    the same matches, answering at once for ASCII text and scanning with a plain character class
    (~2 ns a character) before running the full pattern on text that holds any surrogate at all."""

    _ANY_SURROGATE = re.compile("[\ud800-\udfff]")

    def __init__(self, full):
        self._full = full

    def search(self, value: str):
        if value.isascii() or not self._ANY_SURROGATE.search(value):
            return None
        return self._full.search(value)


if isinstance(getattr(json_format, "_UNPAIRED_SURROGATE_PATTERN", None), re.Pattern):
    json_format._UNPAIRED_SURROGATE_PATTERN = _SurrogateSearch(json_format._UNPAIRED_SURROGATE_PATTERN)


class BodyError(Exception):
    """A request the receiver refuses as a whole: HTTP status and a message for the client."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def encoding_of(content_type: str) -> str | None:
    """PROTOBUF, JSON, or None for a content type OTLP/HTTP does not define."""
    return _CONTENT_TYPES.get(content_type.split(";", 1)[0].strip().lower())


# Input fed to zlib per call. After a member ends, zlib copies the input it did not use into
# `unused_data`; handing it the whole rest of the body made every member copy the rest of the body
# (quadratic: 77 s for 9.7 MB of empty members). A bounded slice bounds that copy.
_INFLATE_CHUNK = 64 * 1024


def decompress(body: bytes, content_encoding: str, *, limit: int, max_members: int) -> bytes | bytearray:
    """The body without its Content-Encoding, never more than `limit` bytes of it in memory and at
    most `max_members` concatenated gzip (or zlib) members: linear time in the body's size."""
    coding = content_encoding.strip().lower()
    if coding in ("", "identity"):
        if len(body) > limit:
            raise BodyError(413, f"Request body is {len(body)} bytes; the limit is {limit} bytes.")
        return body
    if coding not in ("gzip", "deflate"):
        raise BodyError(415, f"Unsupported Content-Encoding {content_encoding!r}: use gzip or none.")
    # 16 + MAX_WBITS reads gzip; 32 + MAX_WBITS detects zlib or gzip (deflate as servers see it).
    wbits = 16 + zlib.MAX_WBITS if coding == "gzip" else 32 + zlib.MAX_WBITS
    view = memoryview(body)
    out = bytearray()
    position, members = 0, 0
    while position < len(body):
        # Concatenated gzip members are one body (RFC 1952); an exporter sends one, so a few suffice.
        members += 1
        if members > max_members:
            raise BodyError(
                400, f"Body has more than {max_members} concatenated {coding} members; send the export as one."
            )
        decompressor = zlib.decompressobj(wbits)
        while not decompressor.eof:
            if position >= len(body):
                raise BodyError(400, f"Body is truncated {coding} data.")
            chunk = view[position : position + _INFLATE_CHUNK]
            try:
                # max_length bounds what one call may inflate: a small bomb never grows past the limit.
                out += decompressor.decompress(chunk, limit + 1 - len(out))
            except zlib.error as exc:
                raise BodyError(400, f"Body is not valid {coding}: {exc}") from None
            if len(out) > limit:
                raise BodyError(413, f"Decompressed body exceeds the limit of {limit} bytes.")
            # Below max_length zlib takes the whole chunk; what follows a member's end is the next one.
            position += len(chunk) - len(decompressor.unused_data) - len(decompressor.unconsumed_tail)
    # Not copied to bytes: both parsers read a bytearray, and a copy would double the peak.
    return out


# OTLP JSON nests about 10 levels down to an attribute, then 3 per level of array or kvlist value;
# protobuf's JSON parser stops at 100 message levels anyway. Deeper is refused before anything
# recurses into it (a body of 1,000 nested arrays once ended in RecursionError, a 500).
MAX_JSON_NESTING = 200
_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"})


def _ids_to_base64(data) -> None:
    """OTLP JSON carries ids as hex; protobuf's JSON parser expects base64 for bytes fields.
    Walks with an explicit stack, refusing nesting past MAX_JSON_NESTING."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_NESTING:
            raise BodyError(400, f"Body is nested more than {MAX_JSON_NESTING} levels deep.")
        if isinstance(node, dict):
            for key, value in node.items():
                if key in _ID_KEYS and isinstance(value, str):
                    try:
                        node[key] = base64.b64encode(bytes.fromhex(value)).decode()
                    except ValueError:
                        raise BodyError(400, f"{key} {value[:40]!r} is not hexadecimal.") from None
                elif isinstance(value, (dict, list)):
                    stack.append((value, depth + 1))
        else:
            stack.extend((item, depth + 1) for item in node if isinstance(item, (dict, list)))


def parse_request(
    body: bytes | bytearray, encoding: str, *, max_json_objects: int | None = None
) -> ExportTraceServiceRequest:
    """The export in `body`. OTLP JSON goes through protobuf's pure-Python JSON parser, ~5 µs an
    object (an attribute is two): `max_json_objects` bounds that work, counted in C before parsing."""
    request = ExportTraceServiceRequest()
    if encoding == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, RuntimeWarning, ValueError) as exc:
            raise BodyError(400, f"Body is not a valid protobuf ExportTraceServiceRequest: {exc}") from None
        return request
    # Braces inside strings count too: an upper bound, which is all a limit needs.
    if max_json_objects is not None and body.count(b"{") > max_json_objects:
        raise BodyError(
            413,
            f"OTLP JSON body holds more than {max_json_objects} objects; send smaller "
            "batches (or protobuf, which costs far less to read).",
        )
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        # Includes nesting past orjson's own limit (1,024 levels).
        raise BodyError(400, f"Body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BodyError(400, "Body must be a JSON object (an ExportTraceServiceRequest).")
    _ids_to_base64(data)
    try:
        json_format.ParseDict(data, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError, binascii.Error) as exc:
        raise BodyError(400, f"Body is not a valid OTLP JSON ExportTraceServiceRequest: {exc}") from None
    return request


def export_response_protobuf(*, rejected: int = 0, message: str | None = None) -> bytes:
    """An ExportTraceServiceResponse; partial_success only when spans were refused."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message or ""
    return response.SerializeToString()


def status_body(encoding: str | None, http_status: int, message: str) -> tuple[bytes, str]:
    """An error body as the spec asks: a google.rpc.Status in the request's encoding (JSON when the
    encoding is unknown)."""
    code = _GRPC_CODES.get(http_status, 2)
    if encoding == PROTOBUF:
        return status_pb2.Status(code=code, message=message).SerializeToString(), PROTOBUF
    return orjson.dumps({"code": code, "message": message}), JSON
