"""PII redaction at the ingestion doors (issue 23, part 6; docs/redaction.md).

Every door (REST lifecycle and batch, OTLP, and rag's TRACE endpoint) asks for the request's
`Redaction` first and passes what it received through it before validation and storage, so nothing
the project's settings redact reaches a service, a row, a log line or a retry's comparison: a retry
is redacted the same way, so idempotency compares redacted with redacted.

What is redacted is the content people and tools wrote — the user query, the intent, tool arguments
and results, errors, the final answer, metadata, span attributes and resource attributes. Names and
ids (session_id, agent_name, tool_name, call_id, resource_type, operation, span and trace ids) are
left alone: clients address their traces by them, and the evaluators and pages group by them.

The counts go to RedactionCount with one statement per request, only when something was replaced,
and in the transaction that stores the request (`storing`, or a service's `on_stored` hook), so a
day's counts never differ from what was stored.
"""

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.core.projects.resolution import project_of
from apps.core.redaction import COUNT_KINDS, Redactor, redactor_for_settings
from apps.traces.models import RedactionCount

# The body fields of each door that carry content.
TRACE_FIELDS = ("user_query", "intent", "intent_detected", "final_response", "error", "metadata")
TOOL_CALL_FIELDS = ("tool_args", "tool_result", "error")
SPAN_FIELDS = ("user_query", "final_response", "intent", "error", "tool_args", "tool_result", "attributes", "resource")


class Redaction:
    """One request's redaction: the project's Redactor (None when redaction is off, and then every
    method returns its input as it is) and what it replaced so far."""

    def __init__(self, project, redactor: Redactor | None):
        self.project = project
        self.redactor = redactor
        self.counts: Counter[str] = Counter()

    def value(self, value: Any) -> Any:
        if self.redactor is None or value is None:
            return value
        return self.redactor.redact_value(value, self.counts)

    def fields(self, data: Any, names: tuple[str, ...] = TRACE_FIELDS) -> Any:
        """A copy of a body object with `names` redacted. Anything but an object is returned as it is:
        validation answers for it, and a refused body is never stored."""
        if self.redactor is None or not isinstance(data, dict):
            return data
        redacted = dict(data)
        for name in names:
            if redacted.get(name) is not None:
                redacted[name] = self.redactor.redact_value(redacted[name], self.counts)
        return redacted

    def tool_calls(self, data: Any) -> Any:
        """One tool call object or a list of them (the tool-calls endpoint takes both)."""
        if isinstance(data, list):
            return [self.fields(call, TOOL_CALL_FIELDS) for call in data]
        return self.fields(data, TOOL_CALL_FIELDS)

    def trace(self, data: Any) -> Any:
        """A whole trace (a batch item): its fields and every tool call's."""
        if self.redactor is None or not isinstance(data, dict):
            return data
        calls = data.get("tool_calls")
        content = [data.get(name) for name in TRACE_FIELDS]
        if isinstance(calls, list):
            content += [[call.get(name) for name in TOOL_CALL_FIELDS] for call in calls if isinstance(call, dict)]
        if not self.redactor.may_redact(content):
            # One test over all the trace's content (not its ids and timestamps, whose digits would
            # pass the digit-run trigger) instead of one per field: most traces have nothing to redact.
            return data
        redacted = self.fields(data, TRACE_FIELDS)
        if redacted is not data and isinstance(redacted.get("tool_calls"), list):
            redacted["tool_calls"] = self.tool_calls(redacted["tool_calls"])
        return redacted

    def spans(self, records: list) -> None:
        """OTLP span records (mapping.SpanRecord), redacted in place before they are stored."""
        if self.redactor is None:
            return
        for record in records:
            if not self.redactor.may_redact([getattr(record, name) for name in SPAN_FIELDS]):
                continue
            for name in SPAN_FIELDS:
                value = getattr(record, name)
                if value:
                    setattr(record, name, self.redactor.redact_value(value, self.counts))

    @contextmanager
    def storing(self) -> Iterator[None]:
        """The block that stores the request: what was replaced is counted in the same transaction,
        so the counts and the rows commit, or roll back, together. With nothing replaced the block
        adds no transaction (the doors' single-statement fast paths stay single statements)."""
        if not self.counts:
            yield
            return
        with transaction.atomic():
            yield
            self.record()

    def record(self) -> None:
        """Adds what was replaced to the project's count for today. Call it inside the transaction
        that stores the request: `storing`, or a service's `on_stored` hook (OTLP and TRACE commit
        on their own)."""
        if self.counts:
            redaction_counts_add(project=self.project, counts=self.counts)
            self.counts = Counter()


def request_redaction(request) -> Redaction:
    """The redaction of what `request` sends: its project's settings (off by default)."""
    project = project_of(request)
    return Redaction(project, redactor_for_settings(project.redaction))


def redaction_counts_add(*, project, counts: Counter[str] | dict[str, int], day=None) -> None:
    """Adds `counts` ({kind: n}) to the project's row for `day` (today, UTC): one UPDATE with F()
    increments, so concurrent requests add rather than overwrite; the day's first request inserts."""
    increments = {kind: n for kind, n in counts.items() if n and kind in COUNT_KINDS}
    if not increments:
        return
    day = day or timezone.now().date()
    rows = RedactionCount.objects.filter(project=project, day=day)
    if rows.update(**{kind: F(kind) + n for kind, n in increments.items()}):
        return
    try:
        with transaction.atomic():
            RedactionCount.objects.create(project=project, day=day, **increments)
    except IntegrityError:
        # Another request inserted the day's row between our UPDATE and INSERT: add to it.
        rows.update(**{kind: F(kind) + n for kind, n in increments.items()})
