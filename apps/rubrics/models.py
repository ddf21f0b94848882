import uuid

from django.db import models

from apps.bots.models import Bot, OfBotQuerySet
from apps.core.models import Project
from apps.core.versioning.models import VersionedHead, snapshot_version_model
from apps.scores.models import JudgeOverride


class Severity(models.TextChoices):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class ComponentScope(models.TextChoices):
    PROMPT = "prompt"
    KNOWLEDGE_BASE = "knowledge_base"
    FUNCTION = "function"
    GENERAL = "general"


class Rubric(VersionedHead):
    """The editable head of a rubric; every change is published as an immutable RubricVersion."""

    rubric_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # The project it belongs to (its bot's); rules and versions belong through it.
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="+")
    bot = models.ForeignKey(Bot, on_delete=models.PROTECT, related_name="rubrics")
    severity_definitions = models.JSONField(default=dict, blank=True)

    objects = OfBotQuerySet.as_manager()

    class Meta:
        ordering = ["name", "rubric_id"]


RubricVersion = snapshot_version_model(Rubric, field="rubric")


class RubricRule(models.Model):
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="rules")
    position = models.PositiveIntegerField(default=0)
    rule_id = models.CharField("id", max_length=100)
    name = models.CharField(max_length=255)
    severity = models.CharField(max_length=8, choices=Severity.choices, default=Severity.MEDIUM)
    category = models.CharField(max_length=100, blank=True, default="")
    description = models.TextField(blank=True, default="")
    prompt_reference = models.CharField(max_length=500, blank=True, default="")
    pass_conditions = models.JSONField(default=list, blank=True)
    fail_conditions = models.JSONField(default=list, blank=True)
    example_violation = models.TextField(blank=True, default="")
    example_correct = models.TextField(blank=True, default="")
    component_scope = models.CharField(max_length=16, choices=ComponentScope.choices, null=True, blank=True)
    component_ids = models.JSONField(default=list, blank=True)
    component_names = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["rubric_id", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["rubric", "rule_id"], name="rubricrule_unique_rule_id")]

    def __str__(self):
        return self.rule_id


class RuleJudge(JudgeOverride):
    """How one rule of a rubric is judged where it departs from the run's judge: a judge model, or
    the instructions an LLM judge reads before the rule, published from an alignment trial that
    showed it agrees better with the reviewers (apps.runs.alignment). Not part of the rubric's
    versioned content, whose shape is the contract's: a run records what was in force when it was
    created (EvaluationRun.rule_judges), and every verdict's fingerprint names the model and prompt
    that gave it. One row per rule; the audit trail keeps the history."""

    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="rule_judges")
    rule_id = models.CharField(max_length=100)
    # judge_model, instructions (in place of apps.runs.judging.llm.RULE_INSTRUCTIONS), trial_id, author,
    # updated_at: JudgeOverride's.

    class Meta:
        ordering = ["rubric_id", "rule_id"]
        constraints = [models.UniqueConstraint(fields=["rubric", "rule_id"], name="rulejudge_unique_rule")]

    def __str__(self):
        return f"{self.rule_id} judge"

    def as_dict(self) -> dict:
        """What a run records of it (EvaluationRun.rule_judges[rule_id])."""
        return {"judge_model": self.judge_model or None, "instructions": self.instructions or None}
