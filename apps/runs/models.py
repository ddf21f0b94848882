import uuid

from django.conf import settings
from django.db import models
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from apps.bots.models import Bot
from apps.rubrics.models import Rubric
from apps.testsets.models import Dataset, TestSet

from .judging.aggregate import FAILED, OUTCOMES, PASSED
from .judging.types import JUDGE_HEURISTIC, RULE, Verdict


class EvaluationRunQuerySet(models.QuerySet):
    def newest_first(self):
        return self.order_by("-created_at", "-id")

    def with_bot_names(self):
        """Runs with `bot_name_value`, their bot's name, in the same query: runs keep the agent_id,
        and bots may be renamed or deleted (then it is None)."""
        return self.annotate(bot_name_value=Subquery(Bot.objects.filter(agent_id=OuterRef("agent_id")).values("name")[:1]))

    def with_names(self):
        """with_bot_names, plus `test_set_name_value` (the test set's, or V1 question set's, name) and
        `rubric_name_value`, all in the same query; None where the thing was deleted since."""
        test_set = Subquery(TestSet.objects.filter(pk=OuterRef("test_set_id")).values("name")[:1])
        question_set = Subquery(Dataset.objects.filter(pk=OuterRef("dataset_id")).values("name")[:1])
        return self.with_bot_names().annotate(
            test_set_name_value=Coalesce(test_set, question_set),
            rubric_name_value=Subquery(Rubric.objects.filter(pk=OuterRef("rubric_id")).values("name")[:1]))

    def of_same_test_set(self, run: "EvaluationRun"):
        """Runs of the run's test set (or V1 question set), whatever their versions; the run included."""
        return self.filter(test_set_id=run.test_set_id, dataset_id=run.dataset_id)

    def status_counts(self) -> dict[str, int]:
        return dict(self.values_list("status").annotate(n=Count("id")).order_by())


class EvaluationResultQuerySet(models.QuerySet):
    def done(self):
        return self.filter(state=EvaluationResult.State.DONE)

    def in_flight(self):
        return self.filter(state__in=EvaluationResult.IN_FLIGHT)

    def attempt_counts(self):
        """Per test case id of these results, as values rows: `n` results (attempts), `ok` passed
        and `bad` failed; the rest were unassessed."""
        return (self.order_by().values("test_case_id")
                .annotate(n=Count("id"), ok=Count("id", filter=Q(outcome=PASSED)),
                          bad=Count("id", filter=Q(outcome=FAILED))))

    def flaky_cases(self):
        """The test case ids whose attempts among these results disagree, one passed and another
        failed (aggregate.is_flaky), as a subquery."""
        return self.attempt_counts().filter(ok__gt=0, bad__gt=0).values("test_case_id")

    def rule_verdicts(self) -> list[Verdict]:
        """Every rubric-rule verdict of these results, in one query."""
        return [Verdict.from_json(v, kind=RULE)
                for scores in self.values_list("rubric_scores", flat=True) for v in scores or []]


LABEL_MAX_LENGTH = 200


class EvaluationRun(models.Model):
    """One test set (or V1 question set) run against one bot. It records the ids and version
    numbers it used; versions are immutable, so a run always points at exactly what it ran."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)

    run_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # What the person who launched it calls it ("after removing the PTO doc"): runs of one minute
    # and one test set are otherwise told apart only by their ids.
    label = models.CharField(max_length=LABEL_MAX_LENGTH, blank=True, default="")
    agent_id = models.CharField("bot id", max_length=24, db_index=True)
    dataset_id = models.UUIDField(null=True, blank=True)
    test_set_id = models.UUIDField(null=True, blank=True)
    test_set_version = models.PositiveIntegerField(null=True, blank=True)
    rubric_id = models.UUIDField(null=True, blank=True)
    rubric_version = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    total = models.PositiveIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0)
    passed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    concurrency = models.PositiveSmallIntegerField(default=3)
    # Each item runs this many times (attempts 1..repeats), so a verdict that flips between runs of
    # the same system shows up as flaky instead of as a change. total/completed/passed/failed count
    # attempts; the item-level figures (pass^k, pass@k, flaky) are below.
    repeats = models.PositiveSmallIntegerField(default=1)
    component_scope_filter = models.CharField(max_length=32, null=True, blank=True)
    component_ids_filter = models.JSONField(default=list, blank=True)
    component_scores = models.JSONField(null=True, blank=True)
    criteria_passed = models.PositiveIntegerField(default=0)
    criteria_total = models.PositiveIntegerField(default=0)
    rubric_rules_passed = models.PositiveIntegerField(default=0)
    rubric_rules_total = models.PositiveIntegerField(default=0)
    # Rule verdicts the judge said it could not give; outside passed and total, shown apart.
    rubric_rules_skipped = models.PositiveIntegerField(default=0)
    # Items with a criterion skipped or a high-severity rule not assessed, none failed: neither passed
    # nor failed (fail-closed).
    unassessed = models.PositiveIntegerField(default=0)
    # The denominators of every score: criterion and rule verdicts scored, skipped and errored.
    verdicts_scored = models.PositiveIntegerField(default=0)
    verdicts_skipped = models.PositiveIntegerField(default=0)
    verdicts_errored = models.PositiveIntegerField(default=0)
    # Item-level figures over attempts, written when the run completes (apps.runs.selectors
    # item_figures computes them live before that): items every attempt of which passed (pass^k),
    # items some attempt of which passed (pass@k), items whose attempts disagree (flaky). Out of
    # total // repeats items: a completed run has judged every attempt of every item.
    items_passed_all = models.PositiveIntegerField(default=0)
    items_passed_any = models.PositiveIntegerField(default=0)
    flaky_items = models.PositiveIntegerField(default=0)
    # The distinct judges of the run's verdicts (fingerprint.distinct_judges), written when the run
    # finishes so that reading a large finished run does not scan every verdict; null before.
    judge_fingerprints = models.JSONField(null=True, blank=True)
    bot_llm_provider = models.CharField(max_length=100, blank=True, default="")
    bot_llm_model = models.CharField(max_length=200, blank=True, default="")
    judge = models.CharField(max_length=200, default=JUDGE_HEURISTIC)
    # The bot as it stood when the run was created (apps.bots.selectors.bot_config_snapshot): bots
    # are edited in place, so without it a comparison cannot say what changed between two runs.
    bot_snapshot = models.JSONField(default=dict, blank=True)
    error = models.TextField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    # The API key that launched the run: the platform LLM calls its workers make are billed to it
    # (apps.core.llm.usage). Null for runs launched from the console, the admin or the command line.
    api_key = models.ForeignKey("core.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                editable=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    objects = EvaluationRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["agent_id", "status", "-created_at"])]

    def __str__(self):
        return str(self.run_id)

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def pass_rate(self) -> float | None:
        return round(self.passed / self.completed, 4) if self.completed else None

    @property
    def coverage(self) -> dict:
        return {"scored": self.verdicts_scored, "skipped": self.verdicts_skipped, "errored": self.verdicts_errored}

    @property
    def errored_share(self) -> float:
        """Errored verdicts over all verdicts (0 when there are none)."""
        n = self.verdicts_scored + self.verdicts_skipped + self.verdicts_errored
        return self.verdicts_errored / n if n else 0.0


class EvaluationResult(models.Model):
    """The verdict on one attempt of one test item of a run: one row per (run, test case, attempt),
    created when the run starts and written once when the attempt finishes."""

    class State(models.TextChoices):
        PENDING = "pending"
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"

    IN_FLIGHT = (State.QUEUED, State.RUNNING)

    result_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="results")
    position = models.PositiveIntegerField()
    test_case_id = models.UUIDField()
    # 1..run.repeats: which trial of the item this is. Not `attempts`, which counts executions of
    # this one row (a worker that died and was retried).
    attempt = models.PositiveSmallIntegerField(default=1)
    item_name = models.CharField(max_length=255, blank=True, default="")
    item_type = models.CharField(max_length=16)
    # The item definition as it stood in the pinned version, so a worker never reads the moving head.
    item = models.JSONField(default=dict)
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    input = models.JSONField(default=dict)
    output = models.JSONField(null=True, blank=True)
    scores = models.JSONField(null=True, blank=True)
    criteria_scores = models.JSONField(null=True, blank=True)
    criteria_passed = models.BooleanField(null=True)
    rubric_scores = models.JSONField(null=True, blank=True)
    rubric_passed = models.BooleanField(null=True)
    passed = models.BooleanField(null=True, db_index=True)
    # passed, failed or unassessed (apps.runs.judging.aggregate.item_outcome); null until done.
    outcome = models.CharField(max_length=10, choices=[(o, o) for o in OUTCOMES], null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    # Short hash of the distinct judges of this result's verdicts (fingerprint.judges_hash): equal
    # hashes, same judge; empty until done or where no verdict carries a fingerprint.
    fingerprint = models.CharField(max_length=12, blank=True, default="")
    langsmith_run_id = models.CharField(max_length=255, null=True, blank=True)
    error = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = EvaluationResultQuerySet.as_manager()

    class Meta:
        ordering = ["run_id", "position", "attempt"]
        constraints = [models.UniqueConstraint(fields=["run", "test_case_id", "attempt"],
                                               name="result_unique_per_test_case_attempt")]
        indexes = [models.Index(fields=["run", "state"]), models.Index(fields=["state", "heartbeat_at"]),
                   # The dashboard's newest failures, across every run.
                   models.Index(fields=["passed", "-finished_at"], name="result_newest_by_verdict")]

    def __str__(self):
        return f"{self.run_id}:{self.item_name or self.test_case_id}"


class VerdictReview(models.Model):
    """A reviewer's verdict on one criterion or rubric rule of a result. The judge's verdict in the
    result is never changed: it is copied here as it stood, so judge and human figures, and their
    agreement, can both be read. The newest review of a verdict is the one in force."""

    class Kind(models.TextChoices):
        CRITERION = "criterion"
        RULE = "rule"

    review_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    result = models.ForeignKey(EvaluationResult, on_delete=models.CASCADE, related_name="reviews")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # The criterion's text, or the rule's id: what names the verdict inside the result.
    key = models.CharField(max_length=1000)
    judge_passed = models.BooleanField(null=True)
    # ok, error or skipped: a verdict the judge could not give has no judge_passed to agree with.
    judge_status = models.CharField(max_length=16, default="ok")
    judge = models.CharField(max_length=200, blank=True, default="")
    passed = models.BooleanField()
    note = models.TextField(blank=True, default="")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    reviewer_name = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["result", "kind", "key"])]

    def __str__(self):
        return f"{self.kind} {self.key[:40]}: {'pass' if self.passed else 'fail'}"
