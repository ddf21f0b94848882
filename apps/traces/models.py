from django.db import models
from django.db.models import Q
from django.utils import timezone


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

    session_id = models.CharField(max_length=255, unique=True)
    agent_name = models.CharField(max_length=255, db_index=True)
    user_query = models.TextField()
    intent_detected = models.CharField(max_length=255, null=True, blank=True)
    resource_type = models.CharField(max_length=255, null=True, blank=True)
    operation = models.CharField(max_length=255, null=True, blank=True, db_index=True)
    final_response = models.TextField(null=True, blank=True)
    success = models.BooleanField(null=True)
    error = models.TextField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    start_time = models.DateTimeField(default=timezone.now, db_index=True)
    end_time = models.DateTimeField(null=True, blank=True)
    # end_time - start_time, kept so metrics and listings aggregate without date arithmetic in SQL.
    duration_seconds = models.FloatField(null=True, blank=True)
    # Bumped under the row lock when a tool call is recorded; gives the next seq and the admin count.
    tool_call_count = models.PositiveIntegerField(default=0)
    metadata = models.JSONField(default=dict, blank=True)
    # sha256 of a batch-ingested trace's canonical JSON: a retried batch is recognised as the same.
    content_hash = models.CharField(max_length=64, null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AgentTraceQuerySet.as_manager()

    class Meta:
        ordering = ["-start_time", "-id"]
        indexes = [models.Index(fields=["agent_name", "status"])]

    def __str__(self):
        return self.session_id

    @property
    def is_finished(self) -> bool:
        return self.status != self.Status.ACTIVE


class ToolCall(models.Model):
    """One tool invocation, a row of its own so concurrent writers never rewrite a shared list."""

    trace = models.ForeignKey(AgentTrace, on_delete=models.CASCADE, related_name="tool_calls")
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
