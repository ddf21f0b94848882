"""Online evaluation rules: writing them, and judging the traces they pick.

A finished trace is announced once (apps.traces.signals.trace_completed, after commit); every
enabled rule that matches it and samples it queues a Celery task, which judges it with the
rule's judge. The usual re-use applies (same judge, same content: the stored verdict is returned),
and it holds across workers too: a JudgingClaim row per (trace, judge) makes a second worker wait
for the first one's verdict instead of judging in parallel, and the agenteval_online_once
constraint (on OnlineVerdict) refuses a second stored verdict.
"""

import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from kombu.exceptions import OperationalError

from apps.core.errors import ConflictError, InvalidInputError, ServiceUnavailableError
from apps.core.llm.client import LLMNotConfigured, get_llm_client, llm_configured
from apps.core.llm.quotas import judge_model_check
from apps.core.models import default_project_id, project_pk
from apps.traces.ledger import Source as LedgerSource
from apps.traces.ledger import ingestion_record
from apps.traces.models import AgentTrace

from ..judges import JUDGE_CHOICES, AgenticJudge, get_agentic_judge
from ..judges.llm_agentic import LLMAgenticJudge
from ..models import EvaluationRule, JudgingClaim, OnlineEvaluationCount
from ..services import evaluations_create_for_traces
from . import tasks

logger = logging.getLogger(__name__)

# The `outcome` label of evalsite_online_evaluations_total: a closed set, so the series stay bounded.
EVALUATED, REUSED, ERROR, SKIPPED = "evaluated", "reused", "error", "skipped"
ONLINE_OUTCOMES = (EVALUATED, REUSED, ERROR, SKIPPED)
# Traces per queued task: large enough that a backfill of a day is a few hundred messages.
TASK_CHUNK = 200
# How long a judging claim holds (an LLM judge's slowest answer, retries included, is well under it)
# and how often a worker waiting for another's verdict looks again.
JUDGING_LEASE = timedelta(minutes=10)
JUDGING_POLL_SECONDS = 0.1


class EnabledRulesCache:
    """The enabled rules, read at most once per EVALSITE_ONLINE_EVALUATION_RULES_CACHE_SECONDS per
    process: every trace completion consults them, and rules change rarely. A rule written through
    these services is seen at once by this process, by the others within the TTL."""

    def __init__(self, load, clock=time.monotonic):
        self.load = load
        self.clock = clock
        self._entry: tuple[float, list[EvaluationRule]] | None = None
        self._lock = threading.Lock()

    def get(self) -> list[EvaluationRule]:
        entry = self._entry
        if entry is not None and self.clock() < entry[0]:
            return entry[1]
        rules = self.load()
        ttl = settings.EVALSITE_ONLINE_EVALUATION_RULES_CACHE_SECONDS
        with self._lock:
            self._entry = (self.clock() + ttl, rules) if ttl > 0 else None
        return rules

    def clear(self) -> None:
        with self._lock:
            self._entry = None


enabled_rules = EnabledRulesCache(lambda: list(EvaluationRule.objects.enabled()))


@dataclass(frozen=True)
class RuleData:
    name: str
    enabled: bool
    agent_name: str
    source: str
    sample_rate: float
    judge: str


def rule_judge_check(*, judge: str) -> None:
    if judge != "heuristic" and not llm_configured():
        raise InvalidInputError(
            f"judge {judge!r} needs an LLM: set OPENAI_API_KEY or OPENAI_BASE_URL, or use the heuristic judge"
        )
    if judge not in JUDGE_CHOICES:
        judge_model_check(model=judge)


def _save(rule: EvaluationRule) -> EvaluationRule:
    try:
        with transaction.atomic():
            rule.save()
    except IntegrityError:
        raise ConflictError(f"An evaluation rule named {rule.name!r} already exists") from None
    enabled_rules.clear()
    transaction.on_commit(enabled_rules.clear)
    return rule


def rule_create(*, data: RuleData, created_by=None, project_id: int | None = None) -> EvaluationRule:
    """A rule of the project (`default` if None): it judges that project's traces only."""
    rule_judge_check(judge=data.judge)
    user = created_by if created_by is not None and created_by.is_authenticated else None
    project_id = project_pk(project_id)
    return _save(EvaluationRule(**vars(data), created_by=user, project_id=project_id))


def rule_update(*, rule: EvaluationRule, data: RuleData) -> EvaluationRule:
    if data.judge != rule.judge:
        rule_judge_check(judge=data.judge)
    for field, value in vars(data).items():
        setattr(rule, field, value)
    return _save(rule)


def rule_delete(*, rule: EvaluationRule) -> None:
    # Its evaluations stay (their rule becomes null); queued tasks find no rule and do nothing.
    rule.delete()
    enabled_rules.clear()
    transaction.on_commit(enabled_rules.clear)


def rule_judge(*, judge: str) -> AgenticJudge:
    """The judge a rule names: "heuristic", "llm" (EVALSITE_JUDGE_MODEL), or a model name on the
    configured LLM server. Raises InvalidInputError or LLMNotConfigured when it is not available."""
    if judge in JUDGE_CHOICES:
        return get_agentic_judge(judge)
    return LLMAgenticJudge(get_llm_client(model=judge))


def _send(rule_id: int, trace_ids: list[int], countdown: float | None, project_id: int) -> None:
    # The project travels with the task: a rule deleted before it runs no longer says which
    # project's ledger sampled these evaluations.
    tasks.evaluate_for_rule.apply_async(
        args=[rule_id, trace_ids], kwargs={"project_id": project_id}, countdown=countdown
    )


def _send_accounted(rule: EvaluationRule, trace_ids: list[int], countdown: float | None) -> None:
    """Send a task and count its traces as sampled in the rule's project's ingestion ledger; the task
    counts each as evaluated, skipped or errored when it runs. A send the broker refuses is counted
    as sampled and errored at once, so the ledger never waits for a task that does not exist."""
    try:
        _send(rule.pk, trace_ids, countdown, rule.project_id)
    except Exception:
        ingestion_record(
            project=rule.project_id,
            source=LedgerSource.ONLINE_EVALUATION,
            sampled=len(trace_ids),
            errored=len(trace_ids),
        )
        raise
    ingestion_record(project=rule.project_id, source=LedgerSource.ONLINE_EVALUATION, sampled=len(trace_ids))


def _enqueue(
    rule: EvaluationRule, trace_ids: list[int], *, countdown: float | None = None, robust: bool = False
) -> None:
    for start in range(0, len(trace_ids), TASK_CHUNK):
        chunk = trace_ids[start : start + TASK_CHUNK]

        # A function, not a functools.partial: a robust on_commit logs a failure by the
        # callback's __qualname__, which a partial lacks.
        def send(chunk=chunk):
            _send_accounted(rule, chunk, countdown)

        transaction.on_commit(send, robust=robust)


def online_evaluations_queue(*, trace_ids: list[int]) -> int:
    """Queue the rules' evaluations of traces that just finished. OTLP traces wait
    EVALSITE_ONLINE_EVALUATION_OTLP_SETTLE_SECONDS: an exporter may still send a child span after the
    root, and judging before it lands would judge a trace that is about to change. Returns how many
    (rule, trace) evaluations were queued."""
    rules = enabled_rules.get()
    if not rules or not trace_ids:
        return 0
    traces = list(
        AgentTrace.objects.filter(pk__in=trace_ids)
        .exclude(status=AgentTrace.Status.ACTIVE)
        .values_list("pk", "session_id", "agent_name", "source", "project_id")
    )
    settle = settings.EVALSITE_ONLINE_EVALUATION_OTLP_SETTLE_SECONDS or None
    queued = 0
    for rule in rules:
        now, later = [], []
        for pk, session_id, agent_name, source, project_id in traces:
            # A rule judges its own project's traces only.
            if project_id != rule.project_id:
                continue
            if rule.matches(agent_name=agent_name, source=source) and rule.samples(session_id):
                (later if source == AgentTrace.Source.OTLP else now).append(pk)
        # Robust: the traces are stored already; a broker outage is logged, it does not fail the
        # agent's request (a backfill can judge them later).
        _enqueue(rule, now, robust=True)
        _enqueue(rule, later, countdown=settle, robust=True)
        queued += len(now) + len(later)
    return queued


def rule_backfill(*, rule: EvaluationRule, since: datetime, until: datetime | None = None) -> int:
    """Queue the rule's evaluation of the finished traces that ended in [since, until), sampled as
    they would have been live. Traces already judged by the rule's judge are re-used, not judged
    again. Returns how many traces were queued."""
    until = until or timezone.now()
    if since >= until:
        raise InvalidInputError("since must be earlier than until")
    if not rule.enabled:
        raise ConflictError(f"Evaluation rule {rule.name!r} is disabled; enable it before a backfill")
    traces = (
        AgentTrace.objects.exclude(status=AgentTrace.Status.ACTIVE)
        .filter(project_id=rule.project_id, end_time__gte=since, end_time__lt=until)
        .order_by("pk")
    )
    if rule.agent_name:
        traces = traces.filter(agent_name=rule.agent_name)
    if rule.source != EvaluationRule.Source.ANY:
        traces = traces.filter(source=rule.source)
    picked = [
        pk
        for pk, session_id in traces.values_list("pk", "session_id").iterator(chunk_size=2000)
        if rule.samples(session_id)
    ]
    try:
        _enqueue(rule, picked)
    except OperationalError:
        # Some chunks may have gone: repeating the backfill is harmless, the re-use skips them.
        raise ServiceUnavailableError("The task queue is unavailable; try the backfill again later") from None
    return len(picked)


@contextmanager
def _judging_lock(trace_id: int, judge_label: str):
    """One judge at a time per (trace, judge) across every worker, on any database: a JudgingClaim
    row inserted before judging and deleted after. A second worker's insert fails on the unique
    constraint; it polls until the row is gone, then judges itself, which finds the first one's
    verdict and re-uses it. Nothing holds a transaction open while the judge (an LLM call) runs. A
    claim older than its lease (a worker that died mid-judgement) is deleted and taken over, so a
    crash delays that trace's verdict by at most JUDGING_LEASE instead of blocking it for ever."""
    claim = _claim(trace_id, judge_label)
    try:
        yield
    finally:
        # By pk: if our lease ran out and another worker took the trace over, its claim stays.
        JudgingClaim.objects.filter(pk=claim.pk).delete()


def _claim(trace_id: int, judge_label: str) -> JudgingClaim:
    while True:
        now = timezone.now()
        try:
            with transaction.atomic():
                return JudgingClaim.objects.create(
                    trace_id=trace_id, judge=judge_label, claimed_at=now, expires_at=now + JUDGING_LEASE
                )
        except IntegrityError:
            pass
        stale = JudgingClaim.objects.filter(trace_id=trace_id, judge=judge_label, expires_at__lte=now)
        if stale.delete()[0]:
            logger.warning("judging claim on trace %s by %s outlived its lease: taken over", trace_id, judge_label)
            continue
        time.sleep(JUDGING_POLL_SECONDS)


def _evaluate_one(*, rule: EvaluationRule, judge: AgenticJudge, trace: AgentTrace) -> str:
    with _judging_lock(trace.pk, judge.label):
        try:
            outcome = evaluations_create_for_traces(traces=[trace], judge=judge, rule=rule)[0]
        except IntegrityError:
            # Another worker stored the same verdict between our re-use check and our insert.
            return REUSED
    if outcome.reused:
        return REUSED
    return ERROR if outcome.evaluation.has_error else EVALUATED


def _count(project_id: int, rule_name: str, outcomes: dict[str, int]) -> None:
    rows = [(rule_name, outcome, n) for outcome, n in sorted(outcomes.items()) if n]
    if not rows:
        return
    with transaction.atomic():
        # Made if missing, then incremented in place (F keeps a concurrent worker's increments).
        OnlineEvaluationCount.objects.bulk_create(
            [
                OnlineEvaluationCount(project_id=project_id, rule_name=rule_name, outcome=outcome)
                for _, outcome, _ in rows
            ],
            ignore_conflicts=True,
        )
        for _, outcome, n in rows:
            OnlineEvaluationCount.objects.filter(project_id=project_id, rule_name=rule_name, outcome=outcome).update(
                count=F("count") + n
            )
        _record_outcomes(project_id, outcomes)


def _record_outcomes(project_id: int, outcomes: dict[str, int]) -> None:
    # A re-used verdict is an evaluation too: the trace has its verdict from this judge.
    ingestion_record(
        project=project_id,
        source=LedgerSource.ONLINE_EVALUATION,
        evaluated=outcomes.get(EVALUATED, 0) + outcomes.get(REUSED, 0),
        skipped=outcomes.get(SKIPPED, 0),
        errored=outcomes.get(ERROR, 0),
    )


def online_evaluations_run(*, rule_id: int, trace_ids: list[int], project_id: int | None = None) -> dict[str, int]:
    """Judge traces for a rule (the Celery task's work). Returns the count per outcome; a rule that
    was deleted meanwhile does nothing, one that was disabled skips. `project_id`: the rule's
    project when the task was sent (None in a task queued before the ledger was per project)."""
    rule = EvaluationRule.objects.filter(pk=rule_id).first()
    if rule is None:
        # Sampled while the rule existed: the ledger still closes those evaluations, as skipped, in
        # the project that sampled them (a task from before: its traces' project).
        if project_id is None:
            project_id = (
                AgentTrace.objects.filter(pk__in=trace_ids).values_list("project_id", flat=True).first()
                or default_project_id()
            )
        _record_outcomes(project_id, {SKIPPED: len(set(trace_ids))})
        return {}
    outcomes = dict.fromkeys(ONLINE_OUTCOMES, 0)
    traces = []
    if rule.enabled:
        traces = list(
            AgentTrace.objects.with_tool_calls()
            .filter(pk__in=trace_ids, project_id=rule.project_id)
            .exclude(status=AgentTrace.Status.ACTIVE)
            .order_by("pk")
        )
    outcomes[SKIPPED] = len(set(trace_ids)) - len(traces)
    judge = None
    if traces:
        try:
            judge = rule_judge(judge=rule.judge)
        except (InvalidInputError, LLMNotConfigured) as exc:
            logger.warning("evaluation rule %s: judge %r unavailable: %s", rule.name, rule.judge, exc)
            outcomes[ERROR] += len(traces)
    if judge is not None:
        for trace in traces:
            outcomes[_evaluate_one(rule=rule, judge=judge, trace=trace)] += 1
    _count(rule.project_id, rule.name, outcomes)
    return outcomes
