import uuid

from django.conf import settings
from django.db import models
from django.db.models import Count, Exists, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from apps.bots.models import Bot
from apps.core.models import Project
from apps.core.pricing import SpendSplit
from apps.rubrics.models import Rubric
from apps.scores.joins import ScoresJoin
from apps.scores.models import Score
from apps.scores.vocabulary import JudgeStatus, SubjectKind
from apps.testsets.models import Dataset, TestSet

from .judging.aggregate import FAILED, OUTCOMES, PASSED
from .judging.types import (
    CORRECTNESS,
    CRITERION,
    JUDGE_HEURISTIC,
    RULE,
    Verdict,
    correctness_from_score,
    correctness_to_score,
)


class EvaluationRunQuerySet(models.QuerySet):
    def newest_first(self):
        return self.order_by("-created_at", "-id")

    def with_bot_names(self):
        """Runs with `bot_name_value`, their bot's name, in the same query: runs keep the agent_id,
        and bots may be renamed or deleted (then it is None)."""
        return self.annotate(
            bot_name_value=Subquery(
                Bot.objects.filter(project=OuterRef("project_id"), agent_id=OuterRef("agent_id")).values("name")[:1]
            )
        )

    def with_names(self):
        """with_bot_names, plus `test_set_name_value` (the test set's, or V1 question set's, name) and
        `rubric_name_value`, all in the same query; None where the thing was deleted since."""
        test_set = Subquery(TestSet.objects.filter(pk=OuterRef("test_set_id")).values("name")[:1])
        question_set = Subquery(Dataset.objects.filter(pk=OuterRef("dataset_id")).values("name")[:1])
        return self.with_bot_names().annotate(
            test_set_name_value=Coalesce(test_set, question_set),
            rubric_name_value=Subquery(Rubric.objects.filter(pk=OuterRef("rubric_id")).values("name")[:1]),
        )

    def of_same_test_set(self, run: "EvaluationRun"):
        """Runs of the run's test set (or V1 question set), whatever their versions, in its project; the
        run included."""
        return self.filter(project_id=run.project_id, test_set_id=run.test_set_id, dataset_id=run.dataset_id)

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
        return (
            self.order_by()
            .values("test_case_id")
            .annotate(
                n=Count("id"), ok=Count("id", filter=Q(outcome=PASSED)), bad=Count("id", filter=Q(outcome=FAILED))
            )
        )

    def flaky_cases(self):
        """The test case ids whose attempts among these results disagree, one passed and another
        failed (aggregate.is_flaky), as a subquery."""
        return self.attempt_counts().filter(ok__gt=0, bad__gt=0).values("test_case_id")

    def rule_verdicts(self) -> list[Verdict]:
        """Every rubric-rule verdict of these results, in one query."""
        rows = (
            Score.objects.of(SubjectKind.RUN_RESULT, self.order_by().values("pk"))
            .machine()
            .filter(kind=RULE)
            .order_by("subject_id", "position", "id")
        )
        return [Verdict.from_score(row) for row in rows]

    def with_failed_rule(self, severity: str):
        """Results a rule verdict of this severity of which fails (Verdict.failed for a rule): judged
        and not passed, or errored; a rule the judge skipped fails nothing."""
        # parent_id too: the run's rule rows are then one index-only range (score_parent_key_cover),
        # a semi-join, rather than a probe per result.
        failed = (
            Score.objects.of(SubjectKind.RUN_RESULT)
            .machine()
            .filter(parent_id=OuterRef("run_id"), subject_id=OuterRef("pk"), kind=RULE, severity=severity)
            .exclude(status=JudgeStatus.SKIPPED)
            .exclude(status=JudgeStatus.OK, passed=True)
        )
        return self.filter(Exists(failed))

    def with_verdicts(self):
        """These results with their judge's verdicts (Score rows) read along in one more query per
        evaluation of the queryset (attach_verdicts), as prefetch_related would."""
        clone = self._chain()
        clone._with_verdicts = True
        return clone

    def _clone(self):
        clone = super()._clone()
        clone._with_verdicts = getattr(self, "_with_verdicts", False)
        return clone

    def _fetch_all(self):
        fresh = self._result_cache is None
        super()._fetch_all()
        if fresh and getattr(self, "_with_verdicts", False):
            attach_verdicts([r for r in self._result_cache if isinstance(r, EvaluationResult)])


LABEL_MAX_LENGTH = 200
# USD to a billionth of a dollar: one call of a cheap model costs well under a cent.
COST_DIGITS, COST_PLACES = 18, 9


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
    # The project it runs in: its bot, test set and rubric are of this project (run_create checks);
    # its results and comparisons belong through it.
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="+")
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
    # The run's figures over its finished results (apps.runs.aggregates.RunDigest.to_json), written
    # when it finishes: a finished run never changes, so its first view reads this one row instead of
    # every verdict. Null before it finishes.
    digest = models.JSONField(null=True, blank=True, editable=False)
    bot_llm_provider = models.CharField(max_length=100, blank=True, default="")
    bot_llm_model = models.CharField(max_length=200, blank=True, default="")
    judge = models.CharField(max_length=200, default=JUDGE_HEURISTIC)
    # Running totals of its results' costs (EvaluationResult.bot_cost, judge_cost, unpriced_calls).
    bot_cost = models.DecimalField(max_digits=COST_DIGITS, decimal_places=COST_PLACES, null=True, blank=True)
    judge_cost = models.DecimalField(max_digits=COST_DIGITS, decimal_places=COST_PLACES, null=True, blank=True)
    unpriced_calls = models.PositiveIntegerField(default=0, db_default=0)
    # The bot as it stood when the run was created (apps.bots.selectors.bot_config_snapshot): bots
    # are edited in place, so without it a comparison cannot say what changed between two runs.
    bot_snapshot = models.JSONField(default=dict, blank=True)
    # The rubric's rule judges in force when the run was created (apps.rubrics.models.RuleJudge):
    # {rule_id: {"judge_model", "instructions"}}; empty for none.
    rule_judges = models.JSONField(default=dict, blank=True, db_default={})
    error = models.TextField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The API key that launched the run: the platform LLM calls its workers make are billed to it
    # (apps.core.llm.usage). Null for runs launched from the console, the admin or the command line.
    api_key = models.ForeignKey(
        "core.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    objects = EvaluationRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["agent_id", "status", "-created_at"]),
            # A project's runs newest first: every run list.
            models.Index(fields=["project", "-created_at", "-id"], name="run_project_newest"),
        ]

    def __str__(self):
        return str(self.run_id)

    @property
    def cost(self) -> SpendSplit:
        return SpendSplit(bot=self.bot_cost, judge=self.judge_cost, unpriced_calls=self.unpriced_calls)

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


class VerdictScoresJoin(ScoresJoin):
    """A result's Score rows (subject kind run_result): the comparison's changed criteria and the
    failed-rule filter join them to the result's own fields in one query on the scores'
    (subject_kind, subject_id, ...) index instead of a correlated subquery per row. verdict_rows
    reads them as attributes."""

    subject_kind = SubjectKind.RUN_RESULT.value


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
    # The item's verdicts are Score rows (subject kind run_result, subject_id this pk, parent_id the
    # run's): criteria_scores, rubric_scores and scores below are read from them. criteria_passed is
    # null exactly where the result has no criteria list (V1 questions, results not judged), and
    # rubric_passed where it has no rubric list (a run without a rubric).
    criteria_passed = models.BooleanField(null=True)
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
    # What the item's LLM calls cost in USD (apps.runs.costs), priced when it was recorded: null where
    # no call of that kind was priced; unpriced_calls counts the calls no price covered.
    bot_usage = models.JSONField(null=True, blank=True)
    bot_cost = models.DecimalField(max_digits=COST_DIGITS, decimal_places=COST_PLACES, null=True, blank=True)
    judge_cost = models.DecimalField(max_digits=COST_DIGITS, decimal_places=COST_PLACES, null=True, blank=True)
    unpriced_calls = models.PositiveIntegerField(default=0, db_default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Its Score rows as a join (VerdictScoresJoin): no column.
    verdict_scores = VerdictScoresJoin()

    objects = EvaluationResultQuerySet.as_manager()

    class Meta:
        ordering = ["run_id", "position", "attempt"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "test_case_id", "attempt"], name="result_unique_per_test_case_attempt"
            )
        ]
        indexes = [
            models.Index(fields=["run", "state"]),
            models.Index(fields=["state", "heartbeat_at"]),
            # The dashboard's newest failures, across every run.
            models.Index(fields=["passed", "-finished_at"], name="result_newest_by_verdict"),
        ]

    def __str__(self):
        return f"{self.run_id}:{self.item_name or self.test_case_id}"

    @property
    def cost(self) -> SpendSplit:
        return SpendSplit(bot=self.bot_cost, judge=self.judge_cost, unpriced_calls=self.unpriced_calls)

    # --- the verdicts, from their Score rows -----------------------------------------------------

    @property
    def verdict_rows(self) -> list[Score]:
        """The judge's Score rows of this result in the order it gave them; read once (one query), or
        attached with its page's (EvaluationResultQuerySet.with_verdicts, attach_verdicts)."""
        rows = self.__dict__.get("_verdict_rows")
        if rows is None and self.pk is None:
            return []
        if rows is None:
            attach_verdicts([self])
            rows = self._verdict_rows
        return rows

    def verdicts(self, kind: str) -> list[Verdict] | None:
        """The criterion or rule verdicts as Verdicts; None where the result has no such list (its
        criteria_passed, or rubric_passed, is null and it has no such rows)."""
        rows = [row for row in self.verdict_rows if row.kind == kind]
        flag = self.criteria_passed if kind == CRITERION else self.rubric_passed
        if flag is None and not rows:
            return None
        return [Verdict.from_score(row) for row in rows]

    def _build_verdicts(self, kind: str, stored: list[dict] | None) -> None:
        """Replaces this result's in-memory rows of `kind` with unsaved ones built from stored-shape
        verdicts. Only in memory: the engine stores verdicts with scores_store (services._record);
        this lets an unsaved result (a report preview, a test fixture) carry its verdicts."""
        rows = [row for row in self.__dict__.get("_verdict_rows") or [] if row.kind != kind]
        where = {"result_pk": self.pk, "run_pk": self.run_id, "attempt": self.attempt}
        if kind == CORRECTNESS:
            correctness = correctness_to_score(stored, **where)
            built = [correctness] if correctness is not None else []
        else:
            built = [Verdict.from_json(v, kind=kind).to_score(position=n, **where) for n, v in enumerate(stored or [])]
        self._verdict_rows = rows + built

    @property
    def criteria_scores(self) -> list[dict] | None:
        """The criterion verdicts in the shape the API answers (Verdict.to_json); None for none."""
        verdicts = self.verdicts(CRITERION)
        return None if verdicts is None else [v.to_json() for v in verdicts]

    @criteria_scores.setter
    def criteria_scores(self, stored: list[dict] | None) -> None:
        self._build_verdicts(CRITERION, stored)

    @property
    def rubric_scores(self) -> list[dict] | None:
        verdicts = self.verdicts(RULE)
        return None if verdicts is None else [v.to_json() for v in verdicts]

    @rubric_scores.setter
    def rubric_scores(self, stored: list[dict] | None) -> None:
        self._build_verdicts(RULE, stored)

    @property
    def scores(self) -> dict | None:
        """A V1 result's correctness score, as the contract's `scores` dict; None for none."""
        row = next((row for row in self.verdict_rows if row.kind == CORRECTNESS), None)
        return None if row is None else correctness_from_score(row)

    @scores.setter
    def scores(self, stored: dict | None) -> None:
        self._build_verdicts(CORRECTNESS, stored)


class RunComparison(models.Model):
    """A comparison's core of two finished runs (selectors.run_comparison: the item pairing, the
    paired statistics and the changed criteria), computed once and kept here, so that no server
    process computes it again: at 100,000 items it is seconds of SQL, the page from this row a few
    milliseconds. A cache row, not a record: deleting it loses nothing. `state` is what the runs were
    (status and completed of each) when it was computed; a row of another state is computed anew."""

    base = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="+")
    head = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="+")
    state = models.CharField(max_length=120)
    core = models.JSONField()
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["base", "head"], name="run_comparison_pair")]

    def __str__(self) -> str:
        return f"comparison of run {self.base_id} with run {self.head_id}"


def verdict_rows_of(result_pks) -> dict[int, list[Score]]:
    """Per result pk, its judge's Score rows in order: one query however many results."""
    rows: dict[int, list[Score]] = {pk: [] for pk in result_pks}
    if rows:
        for score in (
            Score.objects.of(SubjectKind.RUN_RESULT, list(rows))
            .machine()
            .order_by("subject_id", "kind", "position", "id")
        ):
            rows[score.subject_id].append(score)
    return rows


def attach_verdicts(results: list[EvaluationResult]) -> list[EvaluationResult]:
    """Reads the results' verdict rows in one query and keeps them on each result (verdict_rows)."""
    found = verdict_rows_of([r.pk for r in results if r.pk is not None])
    for result in results:
        result._verdict_rows = found.get(result.pk, [])
    return results


def iter_with_verdicts(results, chunk_size: int = 500):
    """The results of a queryset read through a database cursor, `chunk_size` at a time, each chunk
    with its verdicts attached in one query: bounded memory and no query per result."""
    chunk = []
    for result in results.iterator(chunk_size=chunk_size):
        chunk.append(result)
        if len(chunk) == chunk_size:
            yield from attach_verdicts(chunk)
            chunk = []
    yield from attach_verdicts(chunk)


# What a results table row reads of its verdicts: not their reasoning, token usage or judge
# fingerprint, whose JSON decoding was most of the time a comparison page spent on its ~2,000 rows.
_TABLE_VERDICT_FIELDS = ("subject_id", "kind", "key", "status", "passed", "value", "severity", "scope", "detail")


def table_verdicts_of(result_pks) -> dict[int, dict[str, list[Verdict]]]:
    """Per result pk, its judge's criterion and rule verdicts (by kind, in order) as a results table
    shows them: pass/fail, score, status, severity and scope, without reasoning, usage or
    fingerprint. One query of a few columns, however many results."""
    found: dict[int, dict[str, list[Verdict]]] = {pk: {CRITERION: [], RULE: []} for pk in result_pks}
    if not found:
        return found
    rows = (
        Score.objects.of(SubjectKind.RUN_RESULT, list(found))
        .machine()
        .filter(kind__in=(CRITERION, RULE))
        .order_by("subject_id", "kind", "position", "id")
        .values_list(*_TABLE_VERDICT_FIELDS)
    )
    for subject_id, kind, key, status, passed, value, severity, scope, detail in rows:
        detail = detail or {}
        rule = kind == RULE
        found[subject_id][kind].append(
            Verdict.bare(
                kind=kind,
                key=key,
                status=status,
                passed=passed,
                score=value,
                criterion_kind=None if rule else detail.get("kind"),
                rule_name=detail.get("rule_name", "") if rule else "",
                severity=(severity or None) if rule else None,
                component_scope=(scope or None) if rule else None,
            )
        )
    return found


def verdict_columns(values: list[dict]) -> list[dict]:
    """values() rows of results (with pk, criteria_passed and rubric_passed) given the verdict
    columns the row-building code reads, criteria_scores, rubric_scores and scores, from their Score
    rows in one query."""
    found = verdict_rows_of([v["pk"] for v in values])
    for value in values:
        rows = found.get(value["pk"], [])
        for kind, column, flag in (
            (CRITERION, "criteria_scores", "criteria_passed"),
            (RULE, "rubric_scores", "rubric_passed"),
        ):
            mine = [Verdict.from_score(r).to_json() for r in rows if r.kind == kind]
            # As EvaluationResult.verdicts: no list where the flag is null and there are no rows.
            value[column] = None if value[flag] is None and not mine else mine
        correctness = next((r for r in rows if r.kind == CORRECTNESS), None)
        value["scores"] = None if correctness is None else correctness_from_score(correctness)
    return values


class JudgeJob(models.Model):
    """What an alignment trial and an anchor check share: a Celery job that judges stored transcripts
    again and keeps the new verdicts in `verdicts` beside the ones they are set against, not in Score
    rows (a Score would become the judge's verdict in force on the result), with its progress, its
    figures in `report`, who started it and the key its judge calls are billed to."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    IN_FLIGHT = (Status.PENDING, Status.RUNNING)

    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    # Progress: verdicts (a trial: held-out items) judged so far.
    judged = models.PositiveIntegerField(default=0)
    # Each judged again, with what it is set against; appended as the job judges.
    verdicts = models.JSONField(default=list)
    # The figures, written when the job is done.
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Billed its judge calls when started through the API (apps.core.llm.usage); none when automatic.
    api_key = models.ForeignKey(
        "core.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Touched after every item judged: a running job whose worker died goes stale (the reapers).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    @property
    def in_flight(self) -> bool:
        return self.status in self.IN_FLIGHT


class AlignmentTrial(JudgeJob):
    """A candidate judge for one rubric rule, tried on the items reviewers labelled (apps.runs.
    alignment): the labels are split into a train half (what a reviewer reads to write a candidate)
    and a held-out test half, which the candidate judges again; its kappa with the reviewers is
    set against the judge's verdicts as stored. The candidate's verdicts stay in `verdicts`, not in
    Score rows: they are a trial's, and a Score would become the judge's verdict in force."""

    trial_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="+")
    # What is judged: a rubric's rule (rubric, rule_id), or an agentic metric (metric, of one agent's
    # evaluations or, agent_name blank, of every agent's): apps.runs.alignment.metrics.
    rubric = models.ForeignKey(Rubric, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    rule_id = models.CharField(max_length=100, blank=True, default="")
    metric = models.CharField(max_length=32, blank=True, default="")
    agent_name = models.CharField(max_length=255, blank=True, default="")
    # {"rubric_version": n} | {"judge_model": "..."} | {"prompt_template": "..."} (a metric: no version)
    candidate = models.JSONField()
    # Result pks (a metric's: AgentEvaluation pks) of the two halves, fixed when the trial is created.
    train = models.JSONField(default=list)
    test = models.JSONField(default=list)
    # Times a worker took it up: a trial whose worker died is taken up again once, then failed
    # (apps.runs.alignment.services.trials_reap).
    attempts = models.PositiveSmallIntegerField(default=0)
    # `verdicts`: per test item, in `test`'s order, {"result", "result_id", "human", "before": {status,
    # passed}, "after": Verdict.kept()}; `report`: apps.runs.alignment.selectors.trial_report.
    published_at = models.DateTimeField(null=True, blank=True)
    # What publishing made: the rubric version in force after it, or the rule judge it set.
    published = models.JSONField(null=True, blank=True)

    class Meta(JudgeJob.Meta):
        indexes = [
            models.Index(fields=["rubric", "-created_at"], name="trial_rubric_newest"),
            models.Index(fields=["project", "metric", "-created_at"], name="trial_metric_newest"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(Q(rubric__isnull=False) & ~Q(rule_id="") & Q(metric=""))
                | (Q(rubric__isnull=True) & Q(rule_id="") & ~Q(metric="")),
                name="trial_rule_or_metric",
            )
        ]

    def __str__(self):
        return f"trial {self.trial_id} of {self.rule_id or self.metric}"

    @property
    def of_metric(self) -> bool:
        return bool(self.metric)

    @property
    def candidate_kind(self) -> str:
        return next(iter(self.candidate))


class AnchorSet(models.Model):
    """A test-set version marked as anchors (apps.runs.anchors): the stored transcripts of its
    reference run are judged again whenever the judge changes, so that a verdict that moves on an
    identical transcript is the judge's drift, never the bot's."""

    anchor_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="+")
    test_set_id = models.UUIDField()
    test_set_version = models.PositiveIntegerField()
    # The finished run whose results hold the transcripts and the judge's verdicts as they were. A
    # run deleted (retention) takes its anchors with it: without transcripts there is nothing to judge.
    reference_run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="+")
    rubric_id = models.UUIDField(null=True, blank=True)
    rubric_version = models.PositiveIntegerField(null=True, blank=True)
    # Fixed when marked (the reference run never changes): the result pks that stored a conversation,
    # the rubric rules their verdicts name, whether they have criteria verdicts, and the distinct
    # judges of those verdicts (fingerprint.distinct_judges): the judge the first check is against.
    results = models.JSONField(default=list)
    rule_ids = models.JSONField(default=list)
    has_criteria = models.BooleanField(default=False)
    reference_judges = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "test_set_id", "test_set_version"], name="anchor_set_unique_per_version"
            )
        ]

    def __str__(self):
        return f"anchors of {self.test_set_id} v{self.test_set_version}"


class AnchorCheck(JudgeJob):
    """The anchors' transcripts judged again by the judge in force when the check started, set
    against the reference run's verdicts (in `verdicts`: per verdict {"result", "result_id", "kind",
    "key", "before": {status, passed}, "after": Verdict.kept()}; `report`: apps.runs.anchors.
    selectors.check_report). A running check whose worker died is failed by anchors_watch, so that it
    does not hold off every later check."""

    class Trigger(models.TextChoices):
        MANUAL = "manual"
        JUDGE_CHANGED = "judge_changed"

    check_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    anchor_set = models.ForeignKey(AnchorSet, on_delete=models.CASCADE, related_name="checks")
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.MANUAL)
    # The judge used, as a run records it: its label, the rule judges in force, and the judge parts
    # its verdicts carry (computed without asking it: apps.runs.anchors.selectors.judge_identity),
    # which the beat task compares with the judge in force to decide on the next check.
    judge = models.CharField(max_length=200, default=JUDGE_HEURISTIC)
    rule_judges = models.JSONField(default=dict, blank=True)
    judges = models.JSONField(default=list)
    # The verdicts to judge: `judged` counts up to it.
    total = models.PositiveIntegerField(default=0)

    class Meta(JudgeJob.Meta):
        constraints = [
            # Never two checks of one anchor set in flight, even when the beat task and a reviewer
            # start one at the same moment (the service also locks the anchor set's row).
            models.UniqueConstraint(
                fields=["anchor_set"],
                condition=Q(status__in=["pending", "running"]),
                name="anchor_check_one_in_flight",
            )
        ]
        indexes = [models.Index(fields=["anchor_set", "-created_at"], name="anchor_check_newest")]

    def __str__(self):
        return f"anchor check {self.check_id}"
