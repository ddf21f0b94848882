import uuid

from django.db import models

from apps.bots.models import Bot, OfBotQuerySet
from apps.core.models import Project
from apps.core.versioning.models import VersionedHead, snapshot_version_model

DEFAULT_MAX_TURNS = 8


class TestSet(VersionedHead):
    """The editable head of a test set; every change is published as an immutable TestSetVersion."""

    test_set_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # The project it belongs to (its bot's); items and versions belong through it.
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="+")
    bot = models.ForeignKey(Bot, on_delete=models.PROTECT, related_name="test_sets")

    objects = OfBotQuerySet.as_manager()

    class Meta:
        ordering = ["name", "test_set_id"]


TestSetVersion = snapshot_version_model(TestSet, field="test_set")


class TestItem(models.Model):
    class Type(models.TextChoices):
        SINGLE_TURN = "single_turn"
        SCENARIO = "scenario"

    class Priority(models.TextChoices):
        HIGH = "high"
        MEDIUM = "medium"
        LOW = "low"

    test_set = models.ForeignKey(TestSet, on_delete=models.CASCADE, related_name="items")
    # Stable across versions: results join to items through it (EvaluationResult.test_case_id).
    item_id = models.UUIDField(default=uuid.uuid4)
    position = models.PositiveIntegerField(default=0)
    type = models.CharField(max_length=16, choices=Type.choices, default=Type.SINGLE_TURN)
    name = models.CharField(max_length=255)
    message = models.TextField(blank=True, default="")
    persona = models.TextField(blank=True, default="")
    initial_message = models.TextField(blank=True, default="")
    max_turns = models.PositiveSmallIntegerField(null=True, blank=True)
    scripted_turns = models.JSONField(default=list, blank=True)
    success_criteria = models.JSONField(default=list, blank=True)
    should_use_tools = models.JSONField(default=list, blank=True)
    should_not_use_tools = models.JSONField(default=list, blank=True)
    expected_outcome = models.TextField(blank=True, default="")
    tags = models.JSONField(default=list, blank=True)
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.MEDIUM)
    # Provenance of an item made from production (apps.testsets.services.testset_items_from_traces):
    # the trace's session id or the run result it came from, shown on the item with a link back.
    source_session_id = models.CharField(max_length=255, null=True, blank=True)
    source_result_id = models.UUIDField(null=True, blank=True)

    class Meta:
        ordering = ["test_set_id", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["test_set", "item_id"], name="testitem_unique_item_id")]

    def __str__(self):
        return self.name


class Dataset(models.Model):
    """A V1 question set: questions with expected answers."""

    dataset_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # The project it belongs to (its bot's, when it has one); questions belong through it.
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True, default="")
    bot = models.ForeignKey(Bot, on_delete=models.SET_NULL, null=True, blank=True, related_name="datasets")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = OfBotQuerySet.as_manager()

    class Meta:
        ordering = ["name", "dataset_id"]
        verbose_name = "question set"

    def __str__(self):
        return self.name


class DatasetQuestion(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="questions")
    question_id = models.UUIDField(default=uuid.uuid4)
    position = models.PositiveIntegerField(default=0)
    question = models.TextField()
    expected_answer = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["dataset_id", "position", "id"]
        verbose_name = "question"
        constraints = [models.UniqueConstraint(fields=["dataset", "question_id"], name="datasetquestion_unique_id")]

    def __str__(self):
        return self.question[:80]
