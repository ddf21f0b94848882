from dataclasses import dataclass

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from apps.core.models import default_project_id
from apps.core.sampling import sampled
from apps.scores.joins import ScoresJoin
from apps.scores.models import JudgeOverride, Score
from apps.scores.vocabulary import JudgeStatus, Reason, ScoreKind, SubjectKind
from apps.traces.models import AgentTrace

from .judges.base import AGENTIC_METRICS, TokenUsage
from .scoring import RATINGS

# Deprecated: apps.scores.vocabulary.JudgeStatus is the one status. Kept as an alias for importers
# outside this app (apps.queues) until they move.
MetricStatus = JudgeStatus


class EvaluationRuleQuerySet(models.QuerySet):
    def enabled(self):
        return self.filter(enabled=True)


class EvaluationRule(models.Model):
    """Online evaluation: traces that finish and match the rule are judged without anyone asking."""

    class Source(models.TextChoices):
        ANY = "any", "Any"
        REST = AgentTrace.Source.REST.value, AgentTrace.Source.REST.label
        BATCH = AgentTrace.Source.BATCH.value, AgentTrace.Source.BATCH.label
        OTLP = AgentTrace.Source.OTLP.value, AgentTrace.Source.OTLP.label

    # The project whose finished traces the rule judges (and only those).
    project = models.ForeignKey(
        "core.Project", on_delete=models.PROTECT, related_name="+", default=default_project_id, db_index=False
    )
    # Unique per project: it is the `rule` label of evalsite_online_evaluations_total.
    name = models.CharField(max_length=100)
    enabled = models.BooleanField(default=True)
    agent_name = models.CharField(max_length=255, blank=True, default="", help_text="Blank: traces of every agent.")
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.ANY)
    sample_rate = models.FloatField(default=1.0, help_text="Share of matching traces judged, 0..1.")
    judge = models.CharField(
        max_length=100,
        default="heuristic",
        help_text='"heuristic", "llm" (the configured judge model), or a model name.',
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = EvaluationRuleQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="evaluationrule_unique_project_name"),
            models.CheckConstraint(
                condition=Q(sample_rate__gte=0) & Q(sample_rate__lte=1), name="evaluationrule_sample_rate_0_1"
            ),
        ]

    def __str__(self):
        return self.name

    def matches(self, *, agent_name: str, source: str) -> bool:
        return (self.agent_name in ("", agent_name)) and self.source in (self.Source.ANY, source)

    def samples(self, session_id: str) -> bool:
        """Whether this rule judges the trace: a hash of the rule and the session, not a coin toss,
        so a retried announcement, a second worker or a backfill all reach the same answer."""
        return sampled(f"{self.pk}:{session_id}", self.sample_rate)


class MetricJudge(JudgeOverride):
    """How one agentic metric is graded for one agent (or, agent_name blank, for every agent without
    its own) where it departs from the judge an evaluation asks for: a judge model, or the
    instructions an LLM reads in place of the metric's rubric, published from an alignment trial that
    showed it agrees better with the reviewers (apps.runs.alignment). Every evaluation of the agent
    from then on is judged by judges.composed.ComposedAgenticJudge, whose label and fingerprint name
    the override. One row per (project, agent, metric); the audit trail keeps the history."""

    project = models.ForeignKey("core.Project", on_delete=models.CASCADE, related_name="+", db_index=False)
    agent_name = models.CharField(max_length=255, blank=True, default="", help_text="Blank: every agent.")
    metric = models.CharField(max_length=32, choices=[(name, name) for name in AGENTIC_METRICS])
    # judge_model, instructions (in place of apps.agentic.judges.llm_agentic.PROMPTS[metric]), trial_id,
    # author, updated_at: JudgeOverride's.

    class Meta:
        ordering = ["project_id", "agent_name", "metric"]
        constraints = [
            models.UniqueConstraint(fields=["project", "agent_name", "metric"], name="metricjudge_unique_metric")
        ]

    def __str__(self):
        return f"{self.metric} judge of {self.agent_name or 'every agent'}"

    def as_dict(self) -> dict:
        return {
            "agent_name": self.agent_name or None,
            "metric": self.metric,
            "judge_model": self.judge_model or None,
            "instructions": self.instructions or None,
        }


class MetricScoresJoin(ScoresJoin):
    """An evaluation's metric Score rows (subject kind agentic_evaluation, kind metric): each metric is
    a FilteredRelation on it (selectors.with_metric_columns), so export, Prometheus and the rollup
    rebuild read an evaluation's metrics beside its own fields in one query."""

    subject_kind = SubjectKind.AGENTIC_EVALUATION.value
    score_kind = ScoreKind.METRIC.value


class AgentEvaluation(models.Model):
    """One judge's verdict on one agent session. The three metrics (score, reasoning, status) are
    Score rows (subject_kind agentic_evaluation, kind metric, key the metric's name); this row holds
    what describes the evaluation as a whole: the overall score and its rating, the judge, its token
    usage and the fingerprint of what was judged."""

    class Source(models.TextChoices):
        TRACE = "trace"
        MANUAL = "manual"

    Rating = models.TextChoices("Rating", [(r, r) for r in RATINGS])

    # The project of the trace judged (or of the request, for a manual evaluation): every read of
    # evaluations is scoped to the request's project.
    project = models.ForeignKey(
        "core.Project", on_delete=models.PROTECT, related_name="+", default=default_project_id, db_index=False
    )
    # Kept when the trace is deleted on its own: the history of what was scored outlives it. No
    # foreign key in the database (traces are partitioned, traces.0021): every path that deletes
    # traces unlinks their evaluations (the ORM's SET_NULL; retention's references_unlink).
    trace = models.ForeignKey(
        "traces.AgentTrace",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="evaluations",
        db_constraint=False,
    )
    session_id = models.CharField(max_length=255)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.TRACE)
    agent_name = models.CharField(max_length=255, blank=True, default="")
    operation = models.CharField(max_length=255, null=True, blank=True)

    # Whether the judge errored on any metric (their Score rows say which): an evaluation with an
    # error is never reused and has no OnlineVerdict (agenteval_online_once), so a later attempt may
    # retry.
    has_error = models.BooleanField(default=False)
    metric_scores = MetricScoresJoin()

    overall_score = models.FloatField(null=True, blank=True)
    rating = models.CharField(max_length=16, choices=Rating.choices, null=True, blank=True)
    judge = models.CharField(max_length=255)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    total_tokens = models.PositiveIntegerField(default=0)
    # sha256 of the judged input: an unchanged trace re-evaluated by the same judge reuses this row.
    fingerprint = models.CharField(max_length=64)
    # What judged it (apps.core.llm.fingerprint: judge kind, model, prompt template hash, judge
    # version); null for evaluations stored before judges were fingerprinted.
    judge_fingerprint = models.JSONField(null=True, blank=True)
    # What a manual evaluation judged, since there is no trace to look it up in.
    manual_input = models.JSONField(null=True, blank=True)
    # The online evaluation rule that asked for this verdict; null for evaluations someone requested.
    rule = models.ForeignKey(
        EvaluationRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # /history newest first, and its deep offsets (an index-only scan of these two columns).
            models.Index(fields=["-created_at", "-id"], name="agenteval_newest"),
            # The same within one project, and the project's /clear.
            models.Index(fields=["project", "-created_at", "-id"], name="agenteval_project_newest"),
            models.Index(fields=["agent_name", "-created_at", "-id"], name="agenteval_agent_newest"),
            models.Index(fields=["operation", "-created_at", "-id"], name="agenteval_operation_newest"),
            models.Index(fields=["overall_score"], name="agenteval_overall"),
            # /history/{session_id} (latest of a session) and the re-use lookup.
            models.Index(fields=["session_id", "-created_at"], name="agenteval_session_newest"),
            models.Index(fields=["trace", "judge", "fingerprint"], name="agenteval_reuse"),
        ]
        # No unique constraint: on PostgreSQL the table is partitioned by RANGE (id) (agentic.0013),
        # and a partitioned table's unique index must hold the partition key. Rules judging the same
        # content once is OnlineVerdict's constraint.

    def __str__(self):
        return f"{self.session_id} · {self.judge} · {self.overall_score}"

    @property
    def token_usage(self) -> TokenUsage:
        return TokenUsage(self.prompt_tokens, self.completion_tokens, self.total_tokens)

    @property
    def metrics(self) -> dict:
        """{metric name: Score} of this evaluation. Set by the service that stored them or by
        selectors.metrics_attach for a whole page in one query; loaded here (one query) otherwise."""
        cached = self.__dict__.get("_metrics")
        if cached is None:
            metrics_attach([self])
            cached = self.__dict__["_metrics"]
        return cached

    @metrics.setter
    def metrics(self, scores: dict) -> None:
        self.__dict__["_metrics"] = scores


@dataclass(frozen=True, slots=True)
class MetricRead:
    """A metric Score row as the reads show it (value, reasoning, status, reason): what
    metrics_attach loads for a page, without a Score instance per row."""

    key: str
    value: float | None
    reasoning: str
    status: str
    reason: str = ""


def metric_reads_of(evaluation_ids: list[int]) -> dict[int, dict[str, MetricRead]]:
    """Per evaluation id, its judge's metrics ({name: MetricRead}) from one query over their Score
    rows: only the columns shown, as tuples, unordered (the index score_subject answers it; a
    500-row history page makes 1,500 of them). A metric without a row (none is stored that way)
    reads as skipped, missing. A reviewer's human Score on a metric sits beside the judge's and is
    not read here.

    Every small history page pays this on top of its own query, so it stays lean: no filter on the
    key (an evaluation's metric rows are its AGENTIC_METRICS; the dict below picks those by name),
    and no default made for a metric that has its row."""
    found: dict[int, dict[str, MetricRead]] = {pk: {} for pk in evaluation_ids}
    if not found:
        return found
    rows = (
        Score.objects.of(SubjectKind.AGENTIC_EVALUATION, list(found))
        .filter(kind=ScoreKind.METRIC)
        .machine()
        .order_by()
        .values_list("subject_id", "key", "value", "reasoning", "status", "reason")
    )
    for row in rows:
        found[row[0]][row[1]] = MetricRead(*row[1:])
    for pk, metrics in found.items():
        # The index gives a subject's rows in AGENTIC_METRICS order; any other order is rebuilt to it.
        if tuple(metrics) != AGENTIC_METRICS:
            found[pk] = {
                name: metrics.get(name) or MetricRead(name, None, "", JudgeStatus.SKIPPED, Reason.MISSING)
                for name in AGENTIC_METRICS
            }
    return found


def metrics_attach(evaluations: list[AgentEvaluation]) -> list[AgentEvaluation]:
    """Sets `metrics` ({name: MetricRead}) on each evaluation (metric_reads_of), the prefetch of a page."""
    found = metric_reads_of([ev.pk for ev in evaluations])
    for ev in evaluations:
        ev.metrics = found[ev.pk]
    return evaluations


# An EvaluationRollup row's key and totals by column name: what the services add to and /summary reads.
ROLLUP_SUMS = ("overall", *AGENTIC_METRICS)
ROLLUP_COLUMNS = (
    "agent_name",
    "operation",
    "rating",
    "count",
    *[f"{name}_{part}" for name in ROLLUP_SUMS for part in ("count", "sum")],
    *[f"{name}_{part}" for name in AGENTIC_METRICS for part in ("skipped", "errored")],
)


class EvaluationRollup(models.Model):
    """Running totals per (project, agent, operation, rating), kept in the same transaction as every
    write of AgentEvaluation, so /summary adds up a few hundred rows instead of scanning millions."""

    project = models.ForeignKey(
        "core.Project", on_delete=models.PROTECT, related_name="+", default=default_project_id, db_index=False
    )
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
    # Fail-closed denominators: per metric, verdicts the judge skipped or errored on (scored is
    # its _count: a score is stored only when the judge gave one).
    task_adherence_skipped = models.BigIntegerField(default=0)
    task_adherence_errored = models.BigIntegerField(default=0)
    tool_call_accuracy_skipped = models.BigIntegerField(default=0)
    tool_call_accuracy_errored = models.BigIntegerField(default=0)
    intent_resolution_skipped = models.BigIntegerField(default=0)
    intent_resolution_errored = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "agent_name", "operation", "rating"], name="rollup_unique_key")
        ]

    def __str__(self):
        return f"{self.agent_name} · {self.operation or '—'} · {self.rating or 'unrated'}: {self.count}"


class OnlineEvaluationCount(models.Model):
    """evalsite_online_evaluations_total, kept in the database because the workers that judge are
    not the process Prometheus scrapes. Keyed by project and rule name so a deleted rule's series stays."""

    project = models.ForeignKey(
        "core.Project", on_delete=models.PROTECT, related_name="+", default=default_project_id, db_index=False
    )
    rule_name = models.CharField(max_length=100)
    outcome = models.CharField(max_length=16)
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "rule_name", "outcome"], name="onlinecount_unique_key")
        ]

    def __str__(self):
        return f"{self.rule_name} · {self.outcome}: {self.count}"


class OnlineVerdict(models.Model):
    """An online rule's verdict, keyed by what it judged: rules never judge the same content of a trace
    twice with one judge, even when two rules match or a backfill overlaps them on another worker.
    Stored with the evaluation, in its transaction (services._evaluations_store), for an evaluation
    with a rule, a trace and no metric in error: one with an error may be retried, and requested
    evaluations (no rule) may be forced.

    The constraint was a partial unique index on AgentEvaluation until its rows were partitioned by id
    so that retention returns their space (agentic.0013): PostgreSQL keeps a unique index across
    partitions only if it holds the partition key. This small table keeps it instead, one row per
    online verdict; the row goes with its evaluation, and with its rule (as the index no longer
    covered an evaluation whose rule was deleted). A deleted trace leaves it: its id is never used
    again."""

    # No foreign key in the database: a partition of evaluations that one referenced could not be
    # dropped without a DETACH that scans this table under the evaluations' exclusive lock. Every
    # path that deletes evaluations deletes these rows too (the ORM's cascade; the retention batches).
    evaluation = models.OneToOneField(
        AgentEvaluation, primary_key=True, on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    trace_id = models.BigIntegerField()
    judge = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    rule = models.ForeignKey(EvaluationRule, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["trace_id", "judge", "fingerprint"], name="agenteval_online_once")
        ]

    def __str__(self):
        return f"trace {self.trace_id} · {self.judge} · {self.fingerprint[:12]}"


class JudgingClaim(models.Model):
    """Who is judging a trace with a judge right now, so that two workers never do it at once (an
    online rule's LLM call is a bill). A worker inserts the row before judging and deletes it after;
    the unique constraint makes the insert of a second worker fail, and that worker waits for the
    verdict instead. No transaction is held open meanwhile: the row is committed on its own. A row
    whose lease has run out (its worker died mid-judgement) may be taken over. The same on SQLite and
    PostgreSQL: a plain ORM insert and delete."""

    trace_id = models.BigIntegerField()
    judge = models.CharField(max_length=255)
    claimed_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace_id", "judge"], name="agentic_judging_claim_once")]

    def __str__(self):
        return f"trace {self.trace_id} · {self.judge} until {self.expires_at:%H:%M:%S}"
