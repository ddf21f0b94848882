from django.db import models
from django.utils import timezone

from apps.core.judges import RATINGS
from apps.core.judges.base import MetricStatus


class AgentEvaluationQuerySet(models.QuerySet):
    def newest_first(self):
        return self.order_by("-created_at", "-id")

    def filtered(self, *, agent_name: str | None = None, operation: str | None = None, min_score: float | None = None):
        qs = self
        if agent_name is not None:
            qs = qs.filter(agent_name=agent_name)
        if operation is not None:
            qs = qs.filter(operation=operation)
        if min_score is not None:
            qs = qs.filter(overall_score__gte=min_score)
        return qs


STATUS_CHOICES = [(s.value, s.value) for s in MetricStatus]


class AgentEvaluation(models.Model):
    """One judge's verdict on one agent interaction: a stored trace, or a manual submission."""

    class Source(models.TextChoices):
        SESSION = "session"
        MANUAL = "manual"

    Rating = models.TextChoices("Rating", [(r, r) for r in RATINGS])

    # Manual evaluations get a generated session id of their own, so history finds them too.
    session_id = models.CharField(max_length=255)
    trace = models.ForeignKey("traces.AgentTrace", null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="evaluations")
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.SESSION)
    agent_name = models.CharField(max_length=255)
    operation = models.CharField(max_length=255, null=True, blank=True)
    intent_detected = models.CharField(max_length=255, null=True, blank=True)
    resource_type = models.CharField(max_length=255, null=True, blank=True)
    user_query = models.TextField()

    task_adherence = models.FloatField(null=True, blank=True)
    task_adherence_reasoning = models.TextField(blank=True, default="")
    task_adherence_status = models.CharField(max_length=16, choices=STATUS_CHOICES)
    tool_call_accuracy = models.FloatField(null=True, blank=True)
    tool_call_accuracy_reasoning = models.TextField(blank=True, default="")
    tool_call_accuracy_status = models.CharField(max_length=16, choices=STATUS_CHOICES)
    intent_resolution = models.FloatField(null=True, blank=True)
    intent_resolution_reasoning = models.TextField(blank=True, default="")
    intent_resolution_status = models.CharField(max_length=16, choices=STATUS_CHOICES)
    # None when a metric is in error: see apps.core.judges.base.overall_score.
    overall_score = models.FloatField(null=True, blank=True)
    rating = models.CharField(max_length=16, choices=Rating.choices, null=True, blank=True)

    judge = models.CharField(max_length=128)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    total_tokens = models.PositiveIntegerField(null=True, blank=True)
    # sha256 of what the judge saw: the same trace content and judge again reuse this row.
    input_fingerprint = models.CharField(max_length=64)
    # For manual evaluations, the submitted interaction (there is no trace to point at).
    input = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = AgentEvaluationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # /history pages newest first, unfiltered and by each filter.
            models.Index(fields=["-created_at", "-id"], name="agenteval_newest"),
            models.Index(fields=["agent_name", "-created_at", "-id"], name="agenteval_agent_newest"),
            models.Index(fields=["operation", "-created_at", "-id"], name="agenteval_op_newest"),
            # Both filters together: without it a combination that matches little walks a whole agent's rows.
            models.Index(fields=["agent_name", "operation", "-created_at", "-id"], name="agenteval_agent_op_newest"),
            models.Index(fields=["overall_score"], name="agenteval_overall"),
            # /history/{session_id} and the reuse lookup.
            models.Index(fields=["session_id", "-created_at"], name="agenteval_session_newest"),
        ]

    def __str__(self):
        return f"{self.session_id} · {self.judge} · {self.overall_score}"

    @property
    def token_usage(self) -> dict | None:
        if self.total_tokens is None:
            return None
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens}
