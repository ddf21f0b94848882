from django.db import models
from django.db.models import Q
from django.utils import timezone

from apps.core.models import default_project_id

# A trigram (pg_trgm) GIN index on the query text, made by migration 0004 where PostgreSQL has the
# extension; the console's trace search uses it when present (apps.console.selectors).
TRACE_QUERY_TRGM_INDEX = "agenttrace_query_trgm"
# The same on the session id (migration 0005): a search finds a session by any part of its id.
TRACE_SESSION_TRGM_INDEX = "agenttrace_session_trgm"
# USD amounts as runs keep them (apps.runs.models, above this app, has the same pair; a test checks).
COST_DIGITS, COST_PLACES = 18, 9


class AgentTraceQuerySet(models.QuerySet):
    def active(self):
        return self.filter(status=AgentTrace.Status.ACTIVE)

    def with_tool_calls(self):
        return self.prefetch_related("tool_calls")


class AgentTrace(models.Model):
    """What an agent did for one user query: the session's intent, tool calls and final answer."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        COMPLETED = "completed"
        FAILED = "failed"

    class Source(models.TextChoices):
        REST = "rest", "REST"  # the per-step lifecycle endpoints (or the in-process functions)
        BATCH = "batch", "Batch"  # POST /traces/batch
        OTLP = "otlp", "OTLP"  # OpenTelemetry spans through POST /v1/traces

    # The project the trace was sent to. No index of its own: (project, session_id) leads with it.
    # Made without one (demo data, the in-process shim), a trace is in `default`; the API always
    # sets the request's project.
    project = models.ForeignKey(
        "core.Project", on_delete=models.PROTECT, related_name="+", db_index=False, default=default_project_id
    )
    # Chosen by the client, so unique per project only: the same id in two projects is two traces,
    # and neither project learns of the other through a conflict.
    session_id = models.CharField(max_length=255)
    agent_name = models.CharField(max_length=255, db_index=True)
    user_query = models.TextField()
    intent_detected = models.CharField(max_length=255, null=True, blank=True)
    resource_type = models.CharField(max_length=255, null=True, blank=True)
    operation = models.CharField(max_length=255, null=True, blank=True, db_index=True)
    final_response = models.TextField(null=True, blank=True)
    success = models.BooleanField(null=True)
    error = models.TextField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    start_time = models.DateTimeField(default=timezone.now)
    end_time = models.DateTimeField(null=True, blank=True)
    # end_time - start_time, kept so metrics and listings aggregate without date arithmetic in SQL.
    duration_seconds = models.FloatField(null=True, blank=True)
    # Bumped under the row lock when a tool call is recorded; gives the next seq and the admin count.
    tool_call_count = models.PositiveIntegerField(default=0)
    metadata = models.JSONField(default=dict, blank=True)
    # sha256 of a batch-ingested trace's canonical JSON: a retried batch is recognised as the same.
    content_hash = models.CharField(max_length=64, null=True, blank=True, editable=False)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.REST, db_index=True)
    # The OpenTelemetry trace id (32 hex digits) of an OTLP trace: late spans find their trace by it.
    otel_trace_id = models.CharField(max_length=32, null=True, blank=True, editable=False)
    # Set when a per-trace cap refused part of what arrived for this trace; `dropped` says what and
    # how much ({"tool_calls": n, "spans": n, "attribute_bytes": n}), so a reader never mistakes a
    # capped trace for a complete one.
    truncated = models.BooleanField(default=False)
    dropped = models.JSONField(default=dict, blank=True)
    # How many ingestion ledger units are counted as `stored` for this trace (docs/traces.md, "The
    # ingestion ledger"): REST records (the start, each change of the intent, each tool call, the
    # completion), 1 for a batch trace, the OTLP spans stored that ended up in it. Bumped by the same
    # statement (or under the same row lock) that records them as stored, so retention can move
    # exactly these from `stored` to `dropped: expired` when it deletes the trace. Every trace starts
    # with one (its start, its batch item, its root span); db_default too, for rows written in SQL.
    ledger_units = models.PositiveIntegerField(default=1, db_default=1, editable=False)
    # What the trace's model calls cost (apps.traces.costs), kept by the OTLP assembly when it stores
    # or merges into the trace, so lists and sums read a column: USD of the priced calls (null when
    # none was priced, never $0 for unpriced ones) and the calls nobody could price. db_default: the
    # bulk writers that COPY traces without these columns (bench) store "nothing to price".
    cost = models.DecimalField(
        max_digits=COST_DIGITS, decimal_places=COST_PLACES, null=True, blank=True, editable=False
    )
    unpriced_calls = models.PositiveIntegerField(default=0, db_default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AgentTraceQuerySet.as_manager()

    class Meta:
        ordering = ["-start_time", "-id"]
        indexes = [
            models.Index(fields=["agent_name", "status"]),
            # The console's trace list pages newest first by (start_time, id) keyset, over everything
            # or one agent's traces; the first also serves every start_time range (metrics, reaper).
            models.Index(fields=["start_time", "id"], name="agenttrace_newest"),
            models.Index(fields=["agent_name", "start_time", "id"], name="agenttrace_agent_newest"),
            # Retention's walk: a project's oldest stored traces first (apps.core.retention).
            models.Index(fields=["project", "created_at", "id"], name="agenttrace_project_stored"),
            # The unique keys, (project, session_id) and (otel_trace_id, project), are kept by
            # TraceKey: on PostgreSQL this table is partitioned by id (traces.0021), and a partitioned
            # table keeps a unique index only if it holds the partition key. These serve the lookups.
            models.Index(fields=["project", "session_id"], name="agenttrace_project_session"),
            # The trace id leads: every OTLP lookup names trace ids, and an index led by the project (a
            # new project's statistics say it has no rows) was planned as a scan of all its traces.
            models.Index(fields=["otel_trace_id", "project"], name="agenttrace_otel_trace_id"),
        ]

    def __str__(self):
        return self.session_id

    @property
    def is_finished(self) -> bool:
        return self.status != self.Status.ACTIVE


class TraceKey(models.Model):
    """A trace's client-chosen ids, where the database holds them unique per project: the same session
    id (or OpenTelemetry trace id) in two projects is two traces, and neither project learns of the
    other through a conflict. One row per trace, written, changed and deleted with it by triggers on
    the traces table (apps.traces.trace_keys), never by the app: inserting a trace whose session id
    its project already has raises IntegrityError in the inserting statement, on every database.

    The constraints were on AgentTrace until its rows were partitioned by id so that retention returns
    their space (traces.0021). No foreign key in the database: a partition of traces could not be
    dropped while one referenced it."""

    trace = models.OneToOneField(
        AgentTrace, primary_key=True, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False
    )
    project = models.ForeignKey(
        "core.Project", on_delete=models.DO_NOTHING, related_name="+", db_constraint=False, db_index=False
    )
    session_id = models.CharField(max_length=255)
    otel_trace_id = models.CharField(max_length=32, null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "session_id"], name="agenttrace_unique_project_session"),
            models.UniqueConstraint(
                fields=["otel_trace_id", "project"], name="agenttrace_unique_otel_trace_id_project"
            ),
        ]

    def __str__(self):
        return self.session_id


class ToolCall(models.Model):
    """One tool invocation, a row of its own so concurrent writers never rewrite a shared list."""

    # No foreign key in the database: the traces are partitioned (traces.0021), and a partition of
    # them could not be dropped while a constraint referenced it. Every path that deletes traces
    # deletes their tool calls (the ORM's cascade; the retention batches, or their partition).
    trace = models.ForeignKey(AgentTrace, on_delete=models.CASCADE, related_name="tool_calls", db_constraint=False)
    seq = models.PositiveIntegerField()
    call_id = models.CharField(max_length=255, null=True, blank=True)
    tool_name = models.CharField(max_length=255)
    tool_args = models.JSONField(default=dict, blank=True)
    tool_result = models.JSONField(null=True, blank=True)
    success = models.BooleanField(default=True)
    error = models.TextField(null=True, blank=True)
    timestamp = models.DateTimeField(default=timezone.now)
    duration_ms = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["trace_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["trace", "seq"], name="toolcall_unique_seq"),
            models.UniqueConstraint(
                fields=["trace", "call_id"], condition=Q(call_id__isnull=False), name="toolcall_unique_call_id"
            ),
        ]

    def __str__(self):
        return f"{self.trace_id}#{self.seq} {self.tool_name}"


class OtlpSpan(models.Model):
    """Every span POST /v1/traces accepted, by its project and OpenTelemetry ids: a re-sent span is
    recognised and ignored. A span whose trace has no agent/root span yet waits here with its mapped
    content (`payload`) until a root of its project arrives; once applied to its AgentTrace the
    payload is cleared.

    The ids are the client's, so they are unique per project only: the same trace and span ids sent
    to two projects are two projects' spans (two traces), and neither learns of the other's."""

    pk = models.CompositePrimaryKey("project", "otel_trace_id", "span_id")
    # The project whose export stored the span. The primary key leads with it (no index of its own).
    # No database constraint: a foreign key check per inserted span (and a share lock on the project
    # row that every export takes) cost PostgreSQL a quarter more CPU per span in bench/otlp.py, and
    # the id comes from the request's key. Deleting a project deletes its span ids (Django's cascade).
    project = models.ForeignKey(
        "core.Project",
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,
        db_constraint=False,
        default=default_project_id,
    )
    otel_trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    # Not indexed: only the periodic prune reads it, and an index would cost every span a write.
    received_at = models.DateTimeField(default=timezone.now)
    payload = models.JSONField(null=True, blank=True)

    class Meta:
        # Only the spans still waiting for their root: the reaper finds the traces to settle, and the
        # waiting cap counts a trace's spans, without reading the span ids of every trace.
        indexes = [models.Index(fields=["otel_trace_id"], condition=Q(payload__isnull=False), name="otlpspan_waiting")]

    def __str__(self):
        return f"{self.project_id}:{self.otel_trace_id}/{self.span_id}"


class TraceSpendDay(models.Model):
    """What a project's traces cost per UTC day (the day each trace started, the day it was priced
    at): the sum of their AgentTrace.cost and unpriced_calls, added to by the OTLP assembly with each
    trace's change (apps.traces.spend). A record of spend: retention deleting traces leaves it as it
    is, so a day of traffic keeps what it cost after its traces expire."""

    project = models.ForeignKey("core.Project", on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    # Null while no call of the day was priced.
    amount = models.DecimalField(max_digits=COST_DIGITS, decimal_places=COST_PLACES, null=True, blank=True)
    unpriced_calls = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "day"], name="tracespendday_project_day")]

    def __str__(self):
        return f"{self.project_id} {self.day} {self.amount} + {self.unpriced_calls} unpriced"


class IngestionEntry(models.Model):
    """One line of the ingestion ledger: what one request (or one reaper pass) received and what
    became of it. Append-only, one INSERT per request in the writer's own transaction, so the counts
    commit or roll back with the rows they describe, and concurrent writers never contend for a
    shared counter row. The ledger is the sum of the entries in a time range (apps.traces.ledger)."""

    class Source(models.TextChoices):
        REST = "rest", "REST"
        BATCH = "batch", "Batch"
        OTLP = "otlp", "OTLP"
        ONLINE_EVALUATION = "online_evaluation", "Online evaluation"

    # The project the items were sent to (or, for online evaluation, the rule's): every read of the
    # ledger is one project's. No index of its own: (project, at, source) leads with it.
    project = models.ForeignKey(
        "core.Project", on_delete=models.PROTECT, related_name="+", db_index=False, default=default_project_id
    )
    # When the things counted arrived (a reaper's correction carries the arrival time of what it drops).
    at = models.DateTimeField(default=timezone.now)
    source = models.CharField(max_length=24, choices=Source.choices)
    received = models.BigIntegerField(default=0)
    stored = models.BigIntegerField(default=0)
    duplicate = models.BigIntegerField(default=0)
    rejected = models.BigIntegerField(default=0)
    dropped = models.BigIntegerField(default=0)
    # Online evaluation only.
    sampled = models.BigIntegerField(default=0)
    evaluated = models.BigIntegerField(default=0)
    skipped = models.BigIntegerField(default=0)
    errored = models.BigIntegerField(default=0)
    # {"rejected": {reason: n}, "dropped": {reason: n}}; empty when nothing was refused.
    reasons = models.JSONField(default=dict, blank=True)

    class Meta:
        # A project's window (the API, the console, compaction's per-hour groups).
        indexes = [models.Index(fields=["project", "at", "source"], name="ingestionentry_project_at")]

    def __str__(self):
        return f"{self.project_id} {self.source} {self.at:%Y-%m-%d %H:%M} +{self.received}"


class RedactionCount(models.Model):
    """How many values PII redaction replaced in what a project sent, per UTC day and kind
    (apps.core.redaction; docs/redaction.md). One row per project and day, one column per kind, so a
    request adds all its counts with one UPDATE … SET email = email + n, … (apps.traces.ingestion.redaction),
    and only a request that had something replaced writes at all.

    Here rather than in apps.core: it is an ingestion fact, written by the doors in this app (and by
    rag, above it) and shown beside the ingestion ledger; apps.core keeps only the detectors."""

    project = models.ForeignKey("core.Project", on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    email = models.BigIntegerField(default=0)
    phone = models.BigIntegerField(default=0)
    credit_card = models.BigIntegerField(default=0)
    iban = models.BigIntegerField(default=0)
    ip_address = models.BigIntegerField(default=0)
    secret = models.BigIntegerField(default=0)
    custom = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "day"], name="redactioncount_project_day")]

    def __str__(self):
        return f"{self.project_id} {self.day}"
