from django.conf import settings
from django.db import models
from django.db.models import Exists, OuterRef
from django.db.models.fields.json import KeyTextTransform
from django.utils.functional import cached_property

from apps.core.models import default_project_id
from apps.scores.models import Score
from apps.scores.vocabulary import JudgeStatus, ScoreKind, SubjectKind

from .scoring import TestResult, ran, status_q


def metric_scores_of(evaluation_ids):
    """The judge's metric rows of the given evaluations (ids or a subquery), in requested order.
    Human reviews of the same metrics are Score rows too, and are left out."""
    return (
        Score.objects.of(SubjectKind.RAG_EVALUATION, evaluation_ids).machine().filter(kind=ScoreKind.METRIC).in_order()
    )


class TraceEvaluationQuerySet(models.QuerySet):
    def with_test(self, name: str):
        """Evaluations that requested the test `name` (every requested test has a row)."""
        return self.with_test_matching(name=name)

    def with_question(self):
        """The question as `question`, read out of the payload by the database: a list shows it
        without loading each payload's contexts."""
        return self.annotate(question=KeyTextTransform("question", "payload"))

    def with_test_matching(self, *, name: str = "", status: str = "", score_below: float | None = None):
        """Evaluations with one test row that meets every condition given (`context_recall` that
        errored, any metric scored below 0.5): EXISTS, so an evaluation is listed once."""
        rows = metric_scores_of(None).filter(subject_id=OuterRef("pk"))
        if name:
            rows = rows.filter(key=name)
        if status:
            rows = rows.filter(status_q(status))
        if score_below is not None:
            rows = rows.filter(status=JudgeStatus.OK, value__lt=score_below)
        return self.filter(Exists(rows))


class TraceEvaluation(models.Model):
    """One POST /trace: what was asked, what was scored, by which judge, and the full answer given."""

    class Outcome(models.TextChoices):
        SCORED = "scored"  # every requested test was complete and ran
        PARTIAL = "partial"  # ?partial=true with some tests incomplete
        MISSING = "missing"  # something was missing: nothing was scored (the contract's behaviour)

    # The project of the request that asked: its history and reads are that project's only.
    project = models.ForeignKey("core.Project", on_delete=models.PROTECT, related_name="+", default=default_project_id)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    query = models.TextField(help_text="The query as received (a JSON string or natural language).")
    source = models.CharField(max_length=32, help_text="json, natural_language:rules or natural_language:llm")
    payload = models.JSONField(help_text="The canonical payload the query was parsed into.")
    tests = models.JSONField(default=list)
    missing = models.JSONField(default=dict)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, db_index=True)
    partial = models.BooleanField(default=False, help_text="Requested with ?partial=true.")
    judge = models.CharField(max_length=255, help_text="deterministic, or openai:<model> when an LLM scored")
    llm_usage = models.JSONField(null=True, blank=True, help_text="Tokens spent on parsing and scoring.")
    duration_ms = models.FloatField(null=True, blank=True)

    objects = TraceEvaluationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        # What POST /api/v1/trace stores; "trace" in the console is an agent session.
        verbose_name = "RAG evaluation"
        # A project's evaluations newest first (its history), and oldest first (retention).
        indexes = [models.Index(fields=["project", "created_at", "id"], name="traceeval_project_created")]

    def __str__(self):
        return f"TRACE #{self.pk} ({', '.join(self.tests)})"

    # The answer's per-test parts (evaluation_scores, details, test_results), read from the metric's
    # Score rows (apps.rag.scoring). A page of evaluations gets
    # them in one query through selectors.trace_evaluations_with_scores, which fills this cache.
    @cached_property
    def metric_scores(self) -> list[Score]:
        return list(metric_scores_of([self.pk]))

    @property
    def evaluation_scores(self) -> dict[str, float | None]:
        return {score.key: score.value for score in self.metric_scores if ran(score)}

    @property
    def details(self) -> dict[str, dict]:
        # A metric that ran always has its evidence; one without (hand-made data) is left out, as
        # the JSON it was migrated from left it out.
        return {score.key: score.detail for score in self.metric_scores if ran(score) and score.detail is not None}

    @property
    def test_results(self) -> list[TestResult]:
        return [TestResult.of(score) for score in self.metric_scores]

    @property
    def provided_parameters(self) -> dict:
        return self.payload
