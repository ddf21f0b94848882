"""OpenTelemetry spans → what evalsite stores: the GenAI semantic conventions and OpenInference.

Each span becomes a `SpanRecord` holding only what a trace or tool call needs, plus the attributes
no rule here maps (bounded), so nothing an agent sent is lost. Records are plain data: a span whose
trace's root has not arrived yet waits in the database as `record.to_payload()`.

Kinds: `agent` (gen_ai.operation.name invoke_agent/create_agent, OpenInference AGENT), `tool`
(execute_tool, OpenInference TOOL), `llm` (chat and other model calls, OpenInference LLM/EMBEDDING)
and `other`. The trace itself is made from the root span (no parent, or a parent in another
process), whatever its kind, helped by the agent and llm spans under it.
"""

import base64
import re
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

import orjson

from apps.core.api.validation import MAX_JSON_DEPTH, check_storable_json

# Bounds on what is kept of unmapped attributes: per string value, and per span once serialised.
MAX_ATTRIBUTE_TEXT = 2000
MAX_SPAN_ATTRIBUTES_BYTES = 8 * 1024
# The columns REST limits to 255 characters (apps/traces/api/schemas.py: Identifier, ShortText).
MAX_SHORT_TEXT = 255
# Events of a failed span looked at for its exception (the SDK records one, at most a few).
_MAX_EVENTS_READ = 128

# Why a span was rejected: a small fixed set, as the ingestion ledger and its Prometheus label need.
REASON_INVALID = "invalid"
REASON_NUL = "nul_character"
REASON_INTEGER_RANGE = "integer_out_of_range"
REASON_TOO_DEEP = "too_deep"
REASON_TOO_LARGE = "too_large"

# JSON values (array items, object members) decoded from the JSON text of attributes per request.
# Decoded JSON takes up to ~70 bytes per value whatever its text's size (`[{},{},…]`), and a small
# gzip body can carry megabytes of such text: this bounds that memory (~150 MB) however it is sent.
MAX_JSON_VALUES_PER_REQUEST = 2_000_000
_json_budget: ContextVar["_Budget | None"] = ContextVar("otlp_json_budget", default=None)

_ZERO_TRACE_ID, _ZERO_SPAN_ID = bytes(16), bytes(8)
_STATUS_ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR
# SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK | SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK: the parent lives in another process.
_REMOTE_PARENT = 0x300

_AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent"})
_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "embeddings"})

# Attributes each kind maps (anything else is kept as unmapped).
_TRACE_KEYS = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.agent.name",
        "gen_ai.conversation.id",
        "session.id",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "evalsite.intent",
        "evalsite.resource_type",
        "evalsite.operation",
        "openinference.span.kind",
        "input.value",
        "output.value",
        "input.mime_type",
        "output.mime_type",
        "agent.name",
        "error.type",
    }
)
_TOOL_KEYS = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "openinference.span.kind",
        "tool.name",
        "tool_call.id",
        "input.value",
        "output.value",
        "input.mime_type",
        "output.mime_type",
        "error.type",
    }
)
_LLM_KEYS = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.prompt_tokens",
        "gen_ai.usage.completion_tokens",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "openinference.span.kind",
        "llm.model_name",
        "llm.token_count.prompt",
        "llm.token_count.completion",
        "llm.token_count.total",
    }
)
_OTHER_KEYS = frozenset({"openinference.span.kind"})
_SKIPPED_RESOURCE_PREFIXES = ("telemetry.sdk.", "service.name")

_USER_ROLES = frozenset({"user", "human"})
_ASSISTANT_ROLES = frozenset({"assistant", "ai", "model"})


class InvalidSpan(ValueError):
    """A span that cannot be stored: refused on its own, reported in partial_success with its reason."""

    def __init__(self, message: str, reason: str = REASON_INVALID):
        super().__init__(message)
        self.reason = reason


class ExportTooLarge(Exception):
    """An export holding more spans or attributes than one request may: refused as a whole (413),
    before the work it would cost is done."""


class _Budget:
    """Attribute values (array and kvlist items included) one request may still map."""

    __slots__ = ("left", "limit")

    def __init__(self, limit: int):
        self.left = self.limit = limit

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise ExportTooLarge(f"The export holds more than {self.limit} attribute values; send smaller batches.")


@dataclass(slots=True)
class SpanRecord:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    is_root: bool
    start_ns: int
    end_ns: int
    failed: bool = False
    error: str | None = None
    service_name: str | None = None
    # trace fields (root and agent spans; llm spans give user_query/final_response fallbacks)
    agent_name: str | None = None
    conversation_id: str | None = None
    session_key: str | None = None
    user_query: str | None = None
    final_response: str | None = None
    intent: str | None = None
    resource_type: str | None = None
    operation: str | None = None
    # tool fields
    tool_name: str | None = None
    call_id: str | None = None
    tool_args: Any = None
    tool_result: Any = None
    # llm fields
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    attributes: dict = field(default_factory=dict)
    resource: dict | None = None

    @property
    def start_time(self) -> datetime:
        return ns_to_datetime(self.start_ns)

    @property
    def end_time(self) -> datetime:
        return ns_to_datetime(self.end_ns)

    @property
    def duration_ms(self) -> float:
        return max(self.end_ns - self.start_ns, 0) / 1e6

    def to_payload(self) -> dict:
        return {f.name: value for f in fields(self) if (value := getattr(self, f.name)) is not None and value != {}}

    @classmethod
    def from_payload(cls, payload: dict) -> "SpanRecord":
        return cls(**payload)


def ns_to_datetime(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC)


def any_value(value, budget: _Budget | None = None) -> Any:
    """An OTLP AnyValue as plain Python (kvlists as dicts, bytes as base64 text). Arrays and kvlists
    spend their items from `budget`, so one attribute cannot hold millions of values."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        number = value.double_value
        return number if number == number and abs(number) != float("inf") else str(number)
    if kind == "array_value":
        values = value.array_value.values
        if budget is not None:
            budget.spend(len(values))
        return [any_value(v, budget) for v in values]
    if kind == "kvlist_value":
        values = value.kvlist_value.values
        if budget is not None:
            budget.spend(len(values))
        return {kv.key: any_value(kv.value, budget) for kv in values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None


def attributes_dict(key_values, budget: _Budget | None = None, limit: int | None = None) -> dict:
    """The first `limit` attributes (OpenTelemetry's attribute count limit keeps the first ones)."""
    if limit is not None and len(key_values) > limit:
        key_values = key_values[:limit]
    return {kv.key: any_value(kv.value, budget) for kv in key_values}


def decode_json_text(value: Any) -> Any:
    """A JSON string decoded; any other string (or value) as it is. Arrays and objects spend their
    (upper bound of) values from the request's JSON budget; past it the span is rejected as too large."""
    if not isinstance(value, str):
        return value
    budget = _json_budget.get()
    first = value[:1]
    if first.isspace():
        first = value.lstrip()[:1]
    if budget is not None and first in ("[", "{"):
        # Every value but the first follows a comma or opens a container: an upper bound, counted in C.
        values = value.count(",") + value.count("[") + value.count("{")
        if values > budget.left:
            raise InvalidSpan(
                f"its attributes hold more JSON values than this export may still decode "
                f"({budget.limit} in all); send fewer spans per export",
                REASON_TOO_LARGE,
            )
        budget.left -= values
    try:
        # orjson stops at 1,024 levels; what it yields is checked against the storage limits later.
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return value


def _text(value: Any, limit: int = MAX_SHORT_TEXT) -> str | None:
    if value is None or value == "":
        return None
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    return text[:limit] if limit else text


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < 2**63 else None
    if isinstance(value, str) and value.isdigit():
        return int(value) if len(value) < 19 else None
    return None


# --- messages ------------------------------------------------------------------------------------


def _message_list(value: Any) -> list:
    """Messages from a GenAI messages attribute or an OpenInference input/output value."""
    value = decode_json_text(value)
    if isinstance(value, dict):
        for key in ("messages", "message"):
            if key in value:
                inner = value[key]
                return inner if isinstance(inner, list) else [inner]
        return [value]
    return value if isinstance(value, list) else []


def _role_and_content(message: Any) -> tuple[str | None, Any]:
    if isinstance(message, (list, tuple)) and len(message) == 2 and isinstance(message[0], str):
        return message[0].lower(), message[1]  # LangChain's ("user", "text") tuples
    if not isinstance(message, dict):
        return None, None
    if "kwargs" in message and isinstance(message["kwargs"], dict):  # a serialised LangChain message
        kwargs = message["kwargs"]
        role = kwargs.get("type") or (message.get("id") or [""])[-1].removesuffix("Message").lower()
        return str(role).lower(), kwargs.get("content")
    if isinstance(message.get("data"), dict) and "type" in message:  # LangChain's message_to_dict
        return str(message["type"]).lower(), message["data"].get("content")
    role = message.get("role") or message.get("type")
    content = message.get("content")
    if content is None and "parts" in message:
        content = message["parts"]
    return (str(role).lower() if role else None), content


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") == "text":
                text = part.get("content", part.get("text"))
                if isinstance(text, str):
                    texts.append(text)
        return "\n".join(texts) or None
    return None


def first_user_text(value: Any) -> str | None:
    for message in _message_list(value):
        role, content = _role_and_content(message)
        if role in _USER_ROLES:
            text = _content_text(content)
            if text:
                return text
    return None


def last_assistant_text(value: Any) -> str | None:
    for message in reversed(_message_list(value)):
        role, content = _role_and_content(message)
        if role in _ASSISTANT_ROLES or role is None:
            text = _content_text(content)
            if text:
                return text
    return None


def _plain_or_messages(value: Any, pick) -> str | None:
    """OpenInference input/output values: messages when they hold some, else the text itself."""
    if value is None:
        return None
    text = pick(value)
    if text:
        return text
    decoded = decode_json_text(value)
    if isinstance(decoded, str):
        return decoded or None
    if isinstance(decoded, dict):
        strings = [v for v in decoded.values() if isinstance(v, str) and v]
        if len(strings) == 1:
            return strings[0]
    return _text(value, limit=0)


def _flattened_messages(attrs: dict, prefix: str) -> list[dict]:
    """OpenInference's flattened `llm.input_messages.<i>.message.role/content` attributes as a list."""
    found: dict[int, dict] = {}
    for key, value in attrs.items():
        if key.startswith(prefix):
            index, _, rest = key[len(prefix) :].partition(".")
            if index.isdigit() and rest in ("message.role", "message.content"):
                found.setdefault(int(index), {})[rest.removeprefix("message.")] = value
    return [found[i] for i in sorted(found)]


# --- spans ---------------------------------------------------------------------------------------


def _kind(attrs: dict) -> str:
    operation = attrs.get("gen_ai.operation.name")
    oi_kind = attrs.get("openinference.span.kind")
    if operation == "execute_tool" or oi_kind == "TOOL":
        return "tool"
    if operation in _AGENT_OPERATIONS or oi_kind == "AGENT":
        return "agent"
    if operation in _LLM_OPERATIONS or oi_kind in ("LLM", "EMBEDDING"):
        return "llm"
    return "other"


def _bounded_attributes(attrs: dict, mapped: frozenset) -> dict:
    kept: dict = {}
    size = 0
    for key, value in attrs.items():
        if key in mapped or key.startswith(("llm.input_messages.", "llm.output_messages.")):
            continue
        if isinstance(value, str) and len(value) > MAX_ATTRIBUTE_TEXT:
            value = value[:MAX_ATTRIBUTE_TEXT] + "…"
        size += len(key) + len(orjson.dumps(value, default=str))
        if size > MAX_SPAN_ATTRIBUTES_BYTES:
            kept["_truncated"] = True
            break
        kept[key] = value
    return kept


def _error_of(span, attrs: dict) -> str | None:
    if span.status.message:
        return span.status.message
    if attrs.get("error.type"):
        return _text(attrs["error.type"], limit=0)
    for event in span.events[:_MAX_EVENTS_READ]:
        if event.name == "exception":
            event_attrs = {
                kv.key: kv.value.string_value
                for kv in event.attributes[:_MAX_EVENTS_READ]
                if kv.key in ("exception.type", "exception.message")
            }
            parts = [event_attrs.get("exception.type"), event_attrs.get("exception.message")]
            text = ": ".join(str(p) for p in parts if p)
            if text:
                return text
    return "error"


def span_record(
    span,
    *,
    service_name: str | None,
    resource: dict | None,
    budget: _Budget | None = None,
    max_attributes: int | None = None,
) -> SpanRecord:
    """One protobuf Span as a SpanRecord; raises InvalidSpan for ids no trace can be keyed by, and
    for content the database cannot store (see `check_storable`). Only the first `max_attributes`
    attributes are read; how many were dropped is kept as `_dropped_attributes`."""
    trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
    if len(trace_id) != 16 or trace_id == _ZERO_TRACE_ID:
        raise InvalidSpan("trace_id must be 16 bytes and not all zero")
    if len(span_id) != 8 or span_id == _ZERO_SPAN_ID:
        raise InvalidSpan("span_id must be 8 bytes and not all zero")
    if parent and len(parent) != 8:
        raise InvalidSpan("parent_span_id must be empty or 8 bytes")
    if parent == _ZERO_SPAN_ID:
        parent = b""
    attrs = attributes_dict(span.attributes, budget, max_attributes)
    dropped_attributes = len(span.attributes) - len(attrs)
    kind = _kind(attrs)
    is_root = not parent or (span.flags & _REMOTE_PARENT) == _REMOTE_PARENT
    start_ns = span.start_time_unix_nano or span.end_time_unix_nano
    end_ns = max(span.end_time_unix_nano, start_ns)
    failed = span.status.code == _STATUS_ERROR
    record = SpanRecord(
        trace_id=trace_id.hex(),
        span_id=span_id.hex(),
        parent_id=parent.hex() if parent else None,
        name=span.name[:MAX_SHORT_TEXT],
        kind=kind,
        is_root=is_root,
        start_ns=start_ns,
        end_ns=end_ns,
        failed=failed,
        error=_error_of(span, attrs) if failed else None,
        service_name=service_name,
    )
    if is_root or kind == "agent":
        _map_trace_fields(record, attrs)
        mapped = _TRACE_KEYS | _LLM_KEYS if kind == "llm" else _TRACE_KEYS
        if is_root:
            record.resource = resource or None
    elif kind == "tool":
        mapped = _TOOL_KEYS
    elif kind == "llm":
        mapped = _LLM_KEYS
    else:
        mapped = _OTHER_KEYS
    if kind == "tool":
        _map_tool_fields(record, attrs)
    elif kind == "llm":
        _map_llm_fields(record, attrs)
    record.attributes = _bounded_attributes(attrs, mapped) if attrs.keys() - mapped else {}
    if dropped_attributes > 0:
        record.attributes["_dropped_attributes"] = dropped_attributes
    check_storable(record)
    return record


def _map_trace_fields(record: SpanRecord, attrs: dict) -> None:
    record.agent_name = _text(attrs.get("gen_ai.agent.name") or attrs.get("agent.name"))
    record.conversation_id = _text(attrs.get("gen_ai.conversation.id"))
    record.session_key = _text(attrs.get("session.id"))
    record.user_query = first_user_text(attrs.get("gen_ai.input.messages")) or _plain_or_messages(
        attrs.get("input.value"), first_user_text
    )
    record.final_response = last_assistant_text(attrs.get("gen_ai.output.messages")) or _plain_or_messages(
        attrs.get("output.value"), last_assistant_text
    )
    record.intent = _text(attrs.get("evalsite.intent"))
    record.resource_type = _text(attrs.get("evalsite.resource_type"))
    record.operation = _text(attrs.get("evalsite.operation"))


def _map_tool_fields(record: SpanRecord, attrs: dict) -> None:
    record.tool_name = _text(attrs.get("gen_ai.tool.name") or attrs.get("tool.name")) or record.name or "tool"
    record.call_id = _text(attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id"))
    args = decode_json_text(attrs.get("gen_ai.tool.call.arguments", attrs.get("input.value")))
    # A tool call's arguments are an object everywhere in evalsite; anything else is kept under "input".
    record.tool_args = args if isinstance(args, dict) else ({} if args is None else {"input": args})
    result = decode_json_text(attrs.get("gen_ai.tool.call.result", attrs.get("output.value")))
    if isinstance(result, dict) and result.get("type") == "tool" and isinstance(result.get("data"), dict):
        # OpenInference on LangChain records the whole ToolMessage: its content is the result.
        message = result["data"]
        result = decode_json_text(message.get("content"))
        record.call_id = record.call_id or _text(message.get("tool_call_id"))
        if message.get("status") == "error" and not record.failed:
            record.failed, record.error = True, _text(result, limit=0) or "error"
    record.tool_result = result


def _first_present(attrs: dict, *keys: str):
    return next((attrs[key] for key in keys if key in attrs), None)


def _map_llm_fields(record: SpanRecord, attrs: dict) -> None:
    record.model = _text(
        attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or attrs.get("llm.model_name")
    )
    record.input_tokens = _int(
        _first_present(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
    )
    record.output_tokens = _int(
        _first_present(
            attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"
        )
    )
    if record.user_query is None:
        record.user_query = first_user_text(attrs.get("gen_ai.input.messages")) or first_user_text(
            _flattened_messages(attrs, "llm.input_messages.")
        )
    if record.final_response is None:
        record.final_response = last_assistant_text(attrs.get("gen_ai.output.messages")) or last_assistant_text(
            _flattened_messages(attrs, "llm.output_messages.")
        )


# --- the storage limits REST applies ---------------------------------------------------------------

_TEXT_FIELDS = (
    "name",
    "error",
    "service_name",
    "agent_name",
    "conversation_id",
    "session_key",
    "user_query",
    "final_response",
    "intent",
    "resource_type",
    "operation",
    "tool_name",
    "call_id",
    "model",
)
_SHORT_TEXT_FIELDS = ("name", "agent_name", "intent", "resource_type", "operation", "tool_name", "call_id", "model")
_JSON_FIELDS = (
    ("tool_args", "gen_ai.tool.call.arguments"),
    ("tool_result", "gen_ai.tool.call.result"),
    ("attributes", "the attributes"),
    ("resource", "the resource attributes"),
)
_texts_of, _short_texts_of = attrgetter(*_TEXT_FIELDS), attrgetter(*_SHORT_TEXT_FIELDS)
_json_of = attrgetter(*(name for name, _ in _JSON_FIELDS))
# What check_storable_json's pre-filter looks for (19+ digits, or a digit before a positive exponent),
# written so the scan can skip to digits: a third of the time, which every span pays.
_MAYBE_OUT_OF_RANGE = re.compile(rb"[0-9](?:[0-9]{18}|e[+0-9])")
# check_storable_json's refusals, by the words that name them (it raises ValueError with a sentence).
_JSON_REASONS = (("NUL", REASON_NUL), ("64-bit", REASON_INTEGER_RANGE), ("nested", REASON_TOO_DEEP))


def check_storable(record: SpanRecord) -> None:
    """The limits every door applies (apps/core/api/validation.py, as REST validates its bodies): no NUL
    or unpaired surrogate in any text, JSON no deeper than 64 levels, integers within 64 bits,
    short fields within their columns. Raises InvalidSpan with the reason code.

    Runs for every span, so the common case is one pass over all texts and one check of all JSON
    values together; only a span that fails is looked at field by field, to name the problem."""
    joined = "".join(filter(None, _texts_of(record)))
    if "\x00" in joined or not joined.isascii():
        for name in _TEXT_FIELDS:
            value = getattr(record, name)
            if value is not None and "\x00" in value:
                raise InvalidSpan(f"{name} contains a NUL character (\\u0000), which cannot be stored", REASON_NUL)
        try:
            joined.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidSpan("a text field contains an unpaired surrogate", REASON_INVALID) from None
    if max(map(len, filter(None, _short_texts_of(record))), default=0) > MAX_SHORT_TEXT:
        raise InvalidSpan(f"a name or id is longer than {MAX_SHORT_TEXT} characters", REASON_TOO_LARGE)
    if not (0 <= record.start_ns < 2**63 and 0 <= record.end_ns < 2**63):
        raise InvalidSpan("a timestamp is outside the 64-bit range", REASON_INTEGER_RANGE)
    # Falsy values ({}, [], 0, "") are storable whatever they are.
    values = [value for value in _json_of(record) if value]
    if not values:
        return
    try:
        encoded = orjson.dumps(values)
    except orjson.JSONEncodeError:  # nested past 255 levels, an int past 64 bits, a surrogate
        encoded = None
    # The values sit one level deeper in the list: passing means each value passes on its own.
    if (
        encoded is not None
        and b"\\u0000" not in encoded
        and encoded.count(b"[") + encoded.count(b"{") <= MAX_JSON_DEPTH
        and not _MAYBE_OUT_OF_RANGE.search(encoded)
    ):
        return
    for name, where in _JSON_FIELDS:
        value = getattr(record, name)
        if value is None or value == {}:
            continue
        try:
            check_storable_json(value, where)
        except (ValueError, RecursionError) as exc:
            message = str(exc) if isinstance(exc, ValueError) else f"{where} is nested too deep"
            reason = next(
                (code for words, code in _JSON_REASONS if words in message),
                REASON_TOO_DEEP if isinstance(exc, RecursionError) else REASON_INVALID,
            )
            raise InvalidSpan(message, reason) from None


@dataclass
class Rejections:
    """Spans refused one by one: how many per reason code, and the first few messages."""

    by_reason: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    # Spans sent twice within this one request: kept once, the repeats counted as duplicates in the ledger.
    repeated: int = 0

    _MESSAGES_KEPT = 3

    def add(self, span_id: bytes, exc: InvalidSpan) -> None:
        self.by_reason[exc.reason] = self.by_reason.get(exc.reason, 0) + 1
        if len(self.messages) < self._MESSAGES_KEPT:
            self.messages.append(f"span {span_id.hex() or '(empty)'}: {exc}")

    @property
    def count(self) -> int:
        return sum(self.by_reason.values())

    def message(self) -> str | None:
        """For OTLP's partial_success.error_message: the counts per reason, then the first refusals."""
        if not self.by_reason:
            return None
        counts = ", ".join(f"{n} {reason}" for reason, n in sorted(self.by_reason.items()))
        return f"{self.count} span(s) rejected ({counts}): " + "; ".join(self.messages)


def _check_size(request, *, max_spans: int, max_attributes: int, max_attributes_per_span: int) -> None:
    """Refuse an export too large to map before mapping any of it: lengths of repeated fields are
    free to read, so this costs one step per resource and scope, not per attribute."""
    spans = attributes = containers = 0
    for resource_spans in request.resource_spans:
        attributes += len(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            containers += 1
            if containers > max_spans:
                raise ExportTooLarge(f"The export holds more than {max_spans} scopes; send smaller batches.")
            spans += len(scope_spans.spans)
            if spans > max_spans:
                raise ExportTooLarge(f"The export holds more than {max_spans} spans; send smaller batches.")
    if attributes > max_attributes:
        raise ExportTooLarge(f"The export holds more than {max_attributes} resource attributes.")
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                attributes += min(len(span.attributes), max_attributes_per_span)
            if attributes > max_attributes:
                raise ExportTooLarge(
                    f"The export holds more than {max_attributes} attribute values; send smaller batches."
                )


def export_records(
    request, *, max_spans: int = 20_000, max_attributes: int = 250_000, max_attributes_per_span: int = 128
) -> tuple[list[SpanRecord], Rejections, str | None]:
    """Every span of an ExportTraceServiceRequest as a record. Returns (records, rejections, the
    partial-success message). A span repeated within the request is kept once; a span that cannot be
    stored is rejected alone, with its reason. Raises ExportTooLarge for an export holding more than
    `max_spans` spans or `max_attributes` attribute values (array and kvlist items included)."""
    _check_size(
        request, max_spans=max_spans, max_attributes=max_attributes, max_attributes_per_span=max_attributes_per_span
    )
    budget = _Budget(max_attributes)
    json_budget = _json_budget.set(_Budget(MAX_JSON_VALUES_PER_REQUEST))
    try:
        return _map_export(request, budget, max_attributes_per_span)
    finally:
        _json_budget.reset(json_budget)


def _map_export(request, budget: _Budget, max_attributes_per_span: int):
    records: list[SpanRecord] = []
    seen: set[tuple[bytes, bytes]] = set()
    rejections = Rejections()
    for resource_spans in request.resource_spans:
        resource = attributes_dict(resource_spans.resource.attributes, budget)
        service_name = _text(resource.get("service.name"))
        kept_resource = {k: v for k, v in resource.items() if not k.startswith(_SKIPPED_RESOURCE_PREFIXES)}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                key = (span.trace_id, span.span_id)
                if key in seen:
                    rejections.repeated += 1
                    continue
                seen.add(key)
                try:
                    records.append(
                        span_record(
                            span,
                            service_name=service_name,
                            resource=kept_resource,
                            budget=budget,
                            max_attributes=max_attributes_per_span,
                        )
                    )
                except InvalidSpan as exc:
                    rejections.add(span.span_id, exc)
                except (ValueError, TypeError, OverflowError, RecursionError) as exc:
                    # Whatever else a span's content trips in the mapping costs that span only, never a 500.
                    rejections.add(span.span_id, InvalidSpan(f"cannot be mapped ({type(exc).__name__})"))
    return records, rejections, rejections.message()
