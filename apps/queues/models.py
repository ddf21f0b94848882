"""Review queues: named sets of judged things (run results, agentic evaluations, RAG evaluations)
that people review. An item names its subject as a score does (kind + id), and a review is a human
Score of that subject (apps.scores), so every page and every agreement figure sees queue reviews."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from apps.core.models import Project
from apps.core.sampling import sampled
from apps.scores.vocabulary import SubjectKind


class QueueKind(models.TextChoices):
    """What a queue holds; each value is the SubjectKind its items and their scores are of."""

    RUN_RESULT = SubjectKind.RUN_RESULT.value, "Run results"
    AGENTIC_EVALUATION = SubjectKind.AGENTIC_EVALUATION.value, "Agentic evaluations"
    RAG_EVALUATION = SubjectKind.RAG_EVALUATION.value, "RAG evaluations"


def per_cent(rate: float) -> float:
    """A 0..1 rate as the per cent the queue API and form speak, without float noise (0.07 -> 7.0)."""
    return round(rate * 100, 9)


def rate_from_per_cent(value: float) -> float:
    return value / 100


class ReviewQueueQuerySet(models.QuerySet):
    def with_progress(self):
        return self.annotate(
            total=models.Count("items"),
            done=models.Count("items", filter=Q(items__done_at__isnull=False)),
        ).annotate(left=models.F("total") - models.F("done"))


class ReviewQueue(models.Model):
    """What to review and the rule that fills it. The rule's parts are alternatives: an object
    enters when any enabled part matches it."""

    # The project it belongs to; its items belong through it and come only from this project.
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="+")
    # Unique per project: a conflict with another project's queue would tell that it exists.
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    kind = models.CharField(max_length=24, choices=QueueKind.choices)
    include_unassessed = models.BooleanField(default=False, help_text="Judge errors and skipped verdicts.")
    score_below = models.FloatField(
        null=True, blank=True, help_text="Overall score (0..1) under which an object enters; empty: off."
    )
    disagreement_prone = models.BooleanField(
        default=False, help_text="Objects judged on a rule or metric whose human reviews disagreed with the judge."
    )
    # The one sampling unit, as online evaluation rules use it; the API speaks per cent (per_cent()).
    sample_rate = models.FloatField(default=0.0, help_text="Share of every object sampled into the queue, 0..1.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = ReviewQueueQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(sample_rate__gte=0) & Q(sample_rate__lte=1), name="queue_sample_rate_range"
            ),
            models.UniqueConstraint(fields=["project", "name"], name="queue_name_per_project"),
        ]

    def __str__(self):
        return self.name

    @property
    def subject_kind(self) -> str:
        return SubjectKind(self.kind).value

    def sampled(self, target_pk) -> bool:
        """A hash of the queue and the object, not a coin toss: filling twice samples the same objects."""
        return sampled(f"{self.pk}:{target_pk}", self.sample_rate)


class QueueItem(models.Model):
    """One subject to review in one queue, named as its scores name it (kind + id): the queue's kind
    is the subject's. No foreign key, so a subject's app does not cascade here; apps.queues.receivers
    removes the items of a deleted subject. Each subject is in a queue once (the unique constraint
    makes a racing add a no-op)."""

    class Origin(models.TextChoices):
        RULE = "rule"
        HAND = "hand"

    queue = models.ForeignKey(ReviewQueue, on_delete=models.CASCADE, related_name="items")
    subject_kind = models.CharField(max_length=24, choices=SubjectKind.choices)
    subject_id = models.BigIntegerField()
    origin = models.CharField(max_length=8, choices=Origin.choices, default=Origin.RULE)
    assigned_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    done_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["queue_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["queue", "subject_kind", "subject_id"], name="queue_item_subject_once"),
        ]
        indexes = [
            # A queue's items left (done_at null) and done, in queue order.
            models.Index(fields=["queue", "done_at", "id"], name="queue_item_left"),
            # The queues a subject is in (its page), and removing the items of deleted subjects.
            models.Index(fields=["subject_kind", "subject_id"], name="queue_item_subject"),
        ]

    def __str__(self):
        return f"{self.queue_id}:{self.subject_kind}:{self.subject_id}"
