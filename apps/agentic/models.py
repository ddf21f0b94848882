from django.db import models
from django.utils import timezone

from apps.core.scoring import RATINGS


class MetricStatus(models.TextChoices):
    OK = "ok"
    SKIPPED = "skipped"
    ERROR = "error"


class AgentEvaluation(models.Model):
    """One judge's verdict on one agent session: three metric scores with reasoning and status."""

    class Source(models.TextChoices):
        TRACE = "trace"
        MANUAL = "manual"

    Rating = models.TextChoices("Rating", [(r, r) for r in RATINGS])

    # Kept when the trace is deleted on its own: the history of what was scored outlives it.
    trace = models.ForeignKey("traces.AgentTrace", null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="evaluations")
    session_id = models.CharField(max_length=255)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.TRACE)
    agent_name = models.CharField(max_length=255, blank=True, default="")
    operation = models.CharField(max_length=255, null=True, blank=True)

    task_adherence = models.FloatField(null=True, blank=True)
    task_adherence_reasoning = models.TextField(blank=True, default="")
    task_adherence_status = models.CharField(max_length=8, choices=MetricStatus.choices)
    tool_call_accuracy = models.FloatField(null=True, blank=True)
    tool_call_accuracy_reasoning = models.TextField(blank=True, default="")
    tool_call_accuracy_status = models.CharField(max_length=8, choices=MetricStatus.choices)
    intent_resolution = models.FloatField(null=True, blank=True)
    intent_resolution_reasoning = models.TextField(blank=True, default="")
    intent_resolution_status = models.CharField(max_length=8, choices=MetricStatus.choices)

    overall_score = models.FloatField(null=True, blank=True)
    rating = models.CharField(max_length=16, choices=Rating.choices, null=True, blank=True)
    judge = models.CharField(max_length=255)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    total_tokens = models.PositiveIntegerField(default=0)
    # sha256 of the judged input: an unchanged trace re-evaluated by the same judge reuses this row.
    fingerprint = models.CharField(max_length=64)
    # What a manual evaluation judged, since there is no trace to look it up in.
    manual_input = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # /history newest first, and its deep offsets (an index-only scan of these two columns).
            models.Index(fields=["-created_at", "-id"], name="agenteval_newest"),
            models.Index(fields=["agent_name", "-created_at", "-id"], name="agenteval_agent_newest"),
            models.Index(fields=["operation", "-created_at", "-id"], name="agenteval_operation_newest"),
            models.Index(fields=["overall_score"], name="agenteval_overall"),
            # /history/{session_id} (latest of a session) and the re-use lookup.
            models.Index(fields=["session_id", "-created_at"], name="agenteval_session_newest"),
            models.Index(fields=["trace", "judge", "fingerprint"], name="agenteval_reuse"),
        ]

    def __str__(self):
        return f"{self.session_id} · {self.judge} · {self.overall_score}"

    @property
    def has_error(self) -> bool:
        return MetricStatus.ERROR in (self.task_adherence_status, self.tool_call_accuracy_status,
                                      self.intent_resolution_status)


class EvaluationRollup(models.Model):
    """Running totals per (agent, operation, rating), kept in the same transaction as every write of
    AgentEvaluation, so /summary adds up a few hundred rows instead of scanning millions."""

    agent_name = models.CharField(max_length=255)
    # "" stands for no operation / no rating, so the unique key has no NULLs.
    operation = models.CharField(max_length=255)
    rating = models.CharField(max_length=16)
    count = models.BigIntegerField(default=0)
    overall_count = models.BigIntegerField(default=0)
    overall_sum = models.FloatField(default=0.0)
    task_adherence_count = models.BigIntegerField(default=0)
    task_adherence_sum = models.FloatField(default=0.0)
    tool_call_accuracy_count = models.BigIntegerField(default=0)
    tool_call_accuracy_sum = models.FloatField(default=0.0)
    intent_resolution_count = models.BigIntegerField(default=0)
    intent_resolution_sum = models.FloatField(default=0.0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent_name", "operation", "rating"], name="rollup_unique_key")]
