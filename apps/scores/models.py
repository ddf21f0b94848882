import uuid
from collections.abc import Iterable
from typing import Any, Self

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from .vocabulary import JudgeStatus, Reason, ScoreKind, ScoreSource, SubjectKind


class ScoreQuerySet(models.QuerySet["Score"]):
    def of(self, subject_kind: str, subject_ids: Iterable[int] | models.QuerySet[Any, Any] | None = None) -> Self:
        """Scores of one kind of subject, of the given subjects (ids or a subquery) if any.

        A list of ids also bounds subject_id by its lowest and highest: the same rows, but on
        PostgreSQL, where an evaluation's Score rows are partitioned by subject id range
        (scores.0003), the planner estimates the whole IN list against each partition it keeps; a
        young partition (a few thousand rows) then looks cheaper to read whole than through the
        index (a 500-row history page: 15 ms of sequential scan for 3 rows). The range tells it how
        few of them fall inside."""
        rows = self.filter(subject_kind=subject_kind)
        if subject_ids is None:
            return rows
        if isinstance(subject_ids, models.QuerySet):
            return rows.filter(subject_id__in=subject_ids)
        ids = list(subject_ids)
        if not ids:
            return rows.none()
        return rows.filter(subject_id__in=ids, subject_id__range=(min(ids), max(ids)))

    def machine(self) -> Self:
        """What a judge gave (an LLM or code), as opposed to what a person gave."""
        return self.exclude(source=ScoreSource.HUMAN)

    def human(self) -> Self:
        return self.filter(source=ScoreSource.HUMAN)

    def in_order(self) -> Self:
        return self.order_by("subject_kind", "subject_id", "kind", "position", "id")


class Score(models.Model):
    """One judgement of one thing, whoever made it. Run verdicts (criteria, rubric rules, V1
    correctness), agentic and RAG metrics and human reviews are all rows of this table, so every
    figure, filter and agreement is one query over it.

    A subject is named by kind + id rather than a foreign key because scores sit below the apps whose
    models they judge (apps.runs, apps.agentic, apps.rag): deleting a subject deletes its scores
    through that app's service or a post_delete receiver, never through a cascade here."""

    subject_kind = models.CharField(max_length=24, choices=SubjectKind.choices)
    subject_id = models.BigIntegerField()
    # The subject's container where reads group by it (a run result's run pk), so a run's verdicts
    # are read by one index range without joining millions of results; null where there is none.
    parent_id = models.BigIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=16, choices=ScoreKind.choices)
    # What was judged: the criterion's text, the rubric rule's id, the metric's name.
    key = models.CharField(max_length=1000)
    # Order inside (subject, kind): the order the judge was asked in, which the API keeps.
    position = models.PositiveIntegerField(default=0)
    source = models.CharField(max_length=8, choices=ScoreSource.choices)
    status = models.CharField(max_length=8, choices=JudgeStatus.choices, default=JudgeStatus.OK)
    reason = models.CharField(max_length=24, choices=Reason.choices, blank=True, default="")
    passed = models.BooleanField(null=True, blank=True)
    value = models.FloatField(null=True, blank=True)
    # A categorical verdict where there is one (a human's "pass"/"fail" note tag, a rating band).
    label = models.CharField(max_length=64, blank=True, default="")
    reasoning = models.TextField(blank=True, default="")
    # The judge's name as shown ("heuristic:v2", "openai:gpt-4o-mini", "ragas:faithfulness").
    judge = models.CharField(max_length=255, blank=True, default="")
    # What judged it (apps.core.llm.fingerprint plus the criterion or rubric version); null for a
    # person or for verdicts stored before judges were fingerprinted.
    fingerprint = models.JSONField(null=True, blank=True)
    usage = models.JSONField(null=True, blank=True)
    # 1..repeats for a run result's attempt; null elsewhere.
    attempt = models.PositiveSmallIntegerField(null=True, blank=True)
    # Rubric rules only: grouped by (component_scores) and filtered by (high-severity outcome).
    severity = models.CharField(max_length=8, blank=True, default="")
    scope = models.CharField(max_length=32, blank=True, default="")
    # What the key's family needs and nothing reads in aggregate: a rule's name, a criterion's kind,
    # a RAG metric's method and missing fields, a reviewer's display name.
    detail = models.JSONField(null=True, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = ScoreQuerySet.as_manager()

    class Meta:
        ordering = ["subject_kind", "subject_id", "kind", "position", "id"]
        indexes = [
            # A subject's scores, in the order the API shows them.
            models.Index(fields=["subject_kind", "subject_id", "kind", "position"], name="score_subject"),
            # A run's verdicts (aggregates, filters, comparison) without touching its results. The
            # columns after key are there so those reads are index-only scans on PostgreSQL (the
            # table's rows are wide with reasoning and usage): not INCLUDE, which SQLite lacks.
            # Only rows with a parent (a run result's): every read of it names the parent, and the
            # agentic and RAG metrics, which have none, would otherwise give it an 11-column entry
            # each (55 MB beside 102 MB of rows per 100,000 agentic evaluations) at every insert.
            models.Index(
                fields=[
                    "subject_kind",
                    "parent_id",
                    "kind",
                    "key",
                    "subject_id",
                    "position",
                    "status",
                    "source",
                    "passed",
                    "value",
                    "severity",
                ],
                name="score_parent_key_cover",
                condition=Q(parent_id__isnull=False),
            ),
            # Agreement: every score of one key, by source.
            models.Index(fields=["subject_kind", "kind", "key", "source"], name="score_key_source"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(source=ScoreSource.HUMAN) | Q(author__isnull=True), name="score_author_only_human"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject_kind}:{self.subject_id} {self.key[:40]} ({self.source} {self.status})"

    @property
    def counts_as_passed(self) -> bool:
        return self.status == JudgeStatus.OK and bool(self.passed)


class JudgeOverride(models.Model):
    """How one thing is judged where it departs from the judge asked for, published from an
    alignment trial (apps.runs.alignment): a rubric rule's (rubrics.RuleJudge) or an agentic metric's
    (agentic.MetricJudge). The audit trail keeps each row's history."""

    # "" keeps the judge asked for; "heuristic" or an allowed LLM model name replaces it.
    judge_model = models.CharField(max_length=200, blank=True, default="")
    # "" keeps the standard instructions (a rule's, or the metric's prompt).
    instructions = models.TextField(blank=True, default="")
    # The alignment trial it was published from.
    trial_id = models.UUIDField(null=True, blank=True)
    author = models.CharField(max_length=150, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True

    def published(
        self, *, judge_model: str | None, instructions: str | None, trial_id: uuid.UUID | None, author: str
    ) -> Self:
        """Saved with the model or the instructions given (the other stays as it was), from `trial_id`."""
        if judge_model is not None:
            self.judge_model = judge_model
        if instructions is not None:
            self.instructions = instructions
        self.trial_id, self.author = trial_id, author[:150]
        self.save()
        return self
