"""Agentic evaluations: the only code that writes AgentEvaluation rows.

Judging happens outside any transaction (an LLM judge may take seconds per metric); only the
finished verdicts are written. Re-evaluating an unchanged trace with the same judge returns the
stored evaluation instead of judging again, unless the caller forces it; an evaluation that had a
metric in error is never re-used, so a later call retries the judge.
"""

import hashlib
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from operator import attrgetter

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q, Sum, Value
from django.db.models.functions import Coalesce

from apps.core.llm.fingerprint import canonical_json
from apps.core.models import project_pk
from apps.core.retention import expired_ids, rows_delete_quietly
from apps.scores.models import Score
from apps.scores.services import scores_delete, scores_store, subjects_forget
from apps.scores.vocabulary import JudgeStatus, ScoreKind, ScoreSource, SubjectKind
from apps.traces.models import AgentTrace
from apps.traces.selectors import project_traces, trace_get
from apps.traces.services import traces_clear

from . import fastpath
from .judges import AGENTIC_METRICS, AgenticJudge, AgenticVerdict, JudgeInput, get_agentic_judge
from .judges.base import MetricResult
from .judges.composed import ComposedAgenticJudge, MetricOverride
from .models import (
    ROLLUP_COLUMNS,
    ROLLUP_SUMS,
    AgentEvaluation,
    EvaluationRollup,
    EvaluationRule,
    MetricJudge,
    OnlineVerdict,
    metrics_attach,
)
from .scoring import rating_for, weighted_overall
from .selectors import judge_input_of_trace

MAX_BATCH_SESSIONS = 500
MANUAL_AGENT_NAME = "manual"


@dataclass
class EvaluationOutcome:
    """An evaluation and whether it was reused. It answers for its evaluation's attributes too, so
    the API's Out models read it like the evaluation plus `reused`."""

    evaluation: AgentEvaluation
    reused: bool

    def __getattr__(self, name: str):
        if name == "evaluation":  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.evaluation, name)

    @property
    def metadata(self) -> dict:
        """The judged trace's metadata; {} when there is no trace (a manual evaluation)."""
        trace = self.evaluation.trace
        return trace.metadata if trace is not None else {}


def fingerprint(data: JudgeInput) -> str:
    # canonical_json, not orjson.dumps: a stored value orjson refuses (an int past 64 bits) must
    # not make the session impossible to evaluate.
    return hashlib.sha256(canonical_json(data.canonical())).hexdigest()


def score_source(judge_label: str) -> str:
    """llm when a language model judged (its label is openai:<model>), code for the heuristic judge."""
    return ScoreSource.LLM if judge_label.startswith("openai:") else ScoreSource.CODE


# What every metric Score row of an agentic evaluation holds, beside NewMetric.columns.
_METRIC_SCORE = {"subject_kind": SubjectKind.AGENTIC_EVALUATION, "kind": ScoreKind.METRIC}


@dataclass(slots=True)
class NewMetric:
    """A new evaluation's metric: the columns of the Score row _evaluations_store writes for it, and
    what the answer reads (value, reasoning, status, reason, as of a stored one's MetricRead). Not a
    Score instance: making 1,500 of them took a 500-session batch 23 ms of its 240."""

    key: str
    position: int
    source: str
    status: str
    value: float | None
    reasoning: str
    judge: str
    usage: dict | None
    reason: str = ""

    def columns(self, subject_id: int) -> dict:
        """The Score row's own values (by attname), beside its kind's (_METRIC_SCORE): every field
        is a Score column of the same name."""
        return {"subject_id": subject_id, **dict(zip(_NEW_METRIC_FIELDS, _new_metric_values(self), strict=True))}


_NEW_METRIC_FIELDS = tuple(field.name for field in fields(NewMetric))
_new_metric_values = attrgetter(*_NEW_METRIC_FIELDS)


def _new_metric(name: str, metric: MetricResult, *, judge: str, position: int) -> NewMetric:
    usage = None
    if metric.usage is not None and metric.usage.total_tokens:
        usage = {
            "prompt_tokens": metric.usage.prompt_tokens,
            "completion_tokens": metric.usage.completion_tokens,
            "total_tokens": metric.usage.total_tokens,
        }
    return NewMetric(
        key=name,
        position=position,
        source=score_source(judge),
        status=metric.status,
        value=metric.score,
        reasoning=metric.reasoning,
        judge=judge,
        usage=usage,
    )


def _evaluation_from_verdict(
    verdict: AgenticVerdict,
    *,
    trace: AgentTrace | None,
    session_id: str,
    source: str,
    agent_name: str,
    operation: str | None,
    fingerprint_hex: str,
    project_id: int,
    manual_input: dict | None = None,
    rule: EvaluationRule | None = None,
) -> AgentEvaluation:
    """The unsaved evaluation with its metrics (NewMetric) in `metrics` (_evaluations_store
    saves both)."""
    judges = verdict.metric_judges
    metrics = {
        name: _new_metric(name, verdict.metric(name), judge=judges.get(name, verdict.judge), position=i)
        for i, name in enumerate(AGENTIC_METRICS)
    }
    overall = weighted_overall({name: score.value for name, score in metrics.items()})
    evaluation = AgentEvaluation(
        project_id=project_id,
        trace=trace,
        session_id=session_id,
        source=source,
        agent_name=agent_name,
        operation=operation,
        overall_score=overall,
        rating=rating_for(overall),
        judge=verdict.judge,
        prompt_tokens=verdict.usage.prompt_tokens,
        completion_tokens=verdict.usage.completion_tokens,
        total_tokens=verdict.usage.total_tokens,
        fingerprint=fingerprint_hex,
        judge_fingerprint=verdict.fingerprint,
        manual_input=manual_input,
        rule=rule,
        has_error=any(score.status == JudgeStatus.ERROR for score in metrics.values()),
    )
    evaluation.metrics = metrics
    return evaluation


@transaction.atomic
def _evaluations_store(evaluations: list[AgentEvaluation]) -> None:
    """Inserts the evaluations, then their metric Score rows (which need the evaluations' pks), and
    adds them to the running totals: all or nothing, so /summary never counts a half-stored one."""
    AgentEvaluation.objects.bulk_create(evaluations, batch_size=500)
    # A second online verdict of the same content raises IntegrityError here, and nothing is stored.
    OnlineVerdict.objects.bulk_create(
        [
            OnlineVerdict(
                evaluation=ev, trace_id=ev.trace_id, judge=ev.judge, fingerprint=ev.fingerprint, rule_id=ev.rule_id
            )
            for ev in evaluations
            if ev.rule_id is not None and ev.trace_id is not None and not ev.has_error
        ],
        batch_size=500,
    )
    rows = [metric.columns(ev.pk) for ev in evaluations for metric in ev.metrics.values()]
    if fastpath.enabled():
        fastpath.scores_copy(Score(**_METRIC_SCORE), rows)
    else:
        scores_store(rows=[Score(**_METRIC_SCORE, **row) for row in rows])
    _rollup_add(evaluations)


# A metric's status as the rollup counts it apart (JudgeStatus.OK is counted by its score).
_ROLLUP_STATUSES = (("skipped", JudgeStatus.SKIPPED), ("errored", JudgeStatus.ERROR))


def _rollup_add(evaluations: list[AgentEvaluation], sign: int = 1) -> None:
    """Add new evaluations to the running totals (sign -1: take deleted ones out). Call inside the
    transaction that inserts (or deletes) them. Keys are upserted in sorted order so concurrent
    writers lock them in the same order. A key whose count falls to 0 stays (the summary skips
    it): deleting it could lose a concurrent writer's increment, which found it existing."""
    totals: dict[tuple, list] = {}
    for ev in evaluations:
        key = (ev.project_id, ev.agent_name, ev.operation or "", ev.rating or "")
        row = totals.setdefault(key, [0] + [0, 0.0] * len(ROLLUP_SUMS) + [0, 0] * len(AGENTIC_METRICS))
        row[0] += 1
        for i, name in enumerate(ROLLUP_SUMS):
            value = ev.overall_score if name == "overall" else ev.metrics[name].value
            if value is not None:
                row[1 + 2 * i] += 1
                row[2 + 2 * i] += value
        status_base = 1 + 2 * len(ROLLUP_SUMS)
        for i, name in enumerate(AGENTIC_METRICS):
            for j, (_, status) in enumerate(_ROLLUP_STATUSES):
                row[status_base + 2 * i + j] += ev.metrics[name].status == status
    if not totals:
        return
    keys = sorted(totals)
    # Missing keys first (ON CONFLICT DO NOTHING for the ones another writer made meanwhile), then
    # each incremented in place with F(), which keeps a concurrent writer's increments.
    EvaluationRollup.objects.bulk_create(
        [
            EvaluationRollup(project_id=project, agent_name=agent, operation=op, rating=rt)
            for project, agent, op, rt in keys
        ],
        ignore_conflicts=True,
    )
    for key in keys:
        project, agent, op, rt = key
        EvaluationRollup.objects.filter(project_id=project, agent_name=agent, operation=op, rating=rt).update(
            **{column: F(column) + sign * value for column, value in zip(ROLLUP_COLUMNS[3:], totals[key], strict=True)}
        )


def evaluation_rollup_rebuild() -> int:
    """Recompute the running totals from the evaluations and their metric Score rows (after a bulk
    load that bypassed the services, or to check them). Returns the number of rollup rows."""
    group = {"op": Coalesce("operation", Value("")), "rt": Coalesce("rating", Value(""))}
    keys = ("project_id", "agent_name", "op", "rt")
    totals: dict[tuple, dict] = {}
    evaluations = AgentEvaluation.objects.order_by().annotate(**group).values(*keys)
    for row in evaluations.annotate(
        count=Count("id"), overall_count=Count("overall_score"), overall_sum=Coalesce(Sum("overall_score"), 0.0)
    ):
        totals[tuple(row[k] for k in keys)] = {k: row[k] for k in ("count", "overall_count", "overall_sum")}
    # One pass over the metric rows, joined to their evaluation for its group (MetricScoresJoin).
    metrics = (
        evaluations.filter(metric_scores__key__in=AGENTIC_METRICS)
        .values(*keys, "metric_scores__key")
        .annotate(
            n=Count("metric_scores__value"),
            total=Coalesce(Sum("metric_scores__value"), 0.0),
            **{part: Count("id", filter=Q(metric_scores__status=status)) for part, status in _ROLLUP_STATUSES},
        )
    )
    for row in metrics:
        name = row["metric_scores__key"]
        totals[tuple(row[k] for k in keys)].update(
            {
                f"{name}_count": row["n"],
                f"{name}_sum": row["total"],
                **{f"{name}_{part}": row[part] for part, _ in _ROLLUP_STATUSES},
            }
        )
    with transaction.atomic():
        EvaluationRollup.objects.all().delete()
        EvaluationRollup.objects.bulk_create(
            [
                EvaluationRollup(project_id=project, agent_name=agent, operation=op, rating=rt, **values)
                for (project, agent, op, rt), values in sorted(totals.items())
            ],
            batch_size=1000,
        )
    return len(totals)


def _judge_all(judge: AgenticJudge, inputs: list[JudgeInput]) -> list[AgenticVerdict]:
    if not judge.parallel or len(inputs) < 2:
        return [judge.evaluate(data) for data in inputs]
    workers = max(1, min(settings.EVALSITE_AGENTIC_BATCH_CONCURRENCY, len(inputs)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agentic-judge") as pool:
        return list(pool.map(judge.evaluate, inputs))


# The parts of a judge fingerprint that say how it judges; server_model is what the server reported
# afterwards, which the judge cannot know beforehand.
JUDGE_IDENTITY = ("judge", "model", "prompt_template", "judge_version", "overrides")


def _judged_alike(stored: dict | None, judge_fingerprint: dict) -> bool:
    """An evaluation stored before judge fingerprints existed (None) cannot be told apart and is
    taken as alike; otherwise its judge, model, prompt template, judge version and the metric judges
    it was composed with (none for a plain judge) must match."""
    if stored is None:
        return True
    return all(stored.get(key) == judge_fingerprint.get(key) for key in JUDGE_IDENTITY)


def _reusable(
    trace_ids: list[int], judge: AgenticJudge, fingerprints: list[str]
) -> dict[tuple[int, str], AgentEvaluation]:
    """The latest error-free evaluation per (trace, input fingerprint) by this judge, judged alike:
    a new prompt template or judge version under the same label is a new judge, and re-judges
    instead of answering with the old judge's verdict."""
    found: dict[tuple[int, str], AgentEvaluation] = {}
    rows = AgentEvaluation.objects.filter(
        trace_id__in=trace_ids, judge=judge.label, fingerprint__in=fingerprints
    ).order_by("created_at", "id")
    for evaluation in rows:
        if not evaluation.has_error and _judged_alike(evaluation.judge_fingerprint, judge.fingerprint):
            found[(evaluation.trace_id, evaluation.fingerprint)] = evaluation
    # Their metrics in one query, as the answer shows them.
    metrics_attach(list(found.values()))
    return found


def metric_overrides(project_id: int, agent_names: set[str]) -> dict[str, dict[str, MetricOverride]]:
    """The metric judges in force for each of `agent_names` in the project: an agent's own row for a
    metric, else the project's row for every agent (agent_name ""). One query; {} for most agents."""
    rows = MetricJudge.objects.filter(project_id=project_id, agent_name__in=agent_names | {""})
    shared: dict[str, MetricOverride] = {}
    own: dict[str, dict[str, MetricOverride]] = {}
    for row in rows:
        if not row.judge_model and not row.instructions:
            continue  # a row an editor emptied in the admin changes nothing
        override = MetricOverride(judge_model=row.judge_model, instructions=row.instructions)
        (own.setdefault(row.agent_name, {}) if row.agent_name else shared)[row.metric] = override
    return {name: {**shared, **own.get(name, {})} for name in agent_names if shared or name in own}


def judge_for_agent(judge: AgenticJudge, overrides: dict[str, MetricOverride] | None) -> AgenticJudge:
    return ComposedAgenticJudge(judge, overrides) if overrides else judge


def evaluations_create_for_traces(
    *, traces: list[AgentTrace], judge: AgenticJudge, force: bool = False, rule: EvaluationRule | None = None
) -> list[EvaluationOutcome]:
    """Evaluate traces (tool calls prefetched) with one judge, composed with the metric judges in
    force for each trace's agent (metric_overrides); outcomes in the order given. With a `rule`, the
    new verdicts record it, and an insert that races another rule's identical verdict raises
    IntegrityError (the agenteval_online_once constraint) and stores nothing."""
    groups: dict[tuple[int, str], list[int]] = {}
    for i, trace in enumerate(traces):
        groups.setdefault((trace.project_id, trace.agent_name), []).append(i)
    found: dict[tuple[int, str], dict[str, MetricOverride]] = {}
    for project_id in {project for project, _ in groups}:
        agents = {agent for project, agent in groups if project == project_id}
        found |= {(project_id, agent): o for agent, o in metric_overrides(project_id, agents).items()}
    # One judge for every trace unless an agent has metric judges: then one per agent, each judging
    # its own traces (outside any transaction) before all the new verdicts are stored at once.
    plans = (
        [(list(range(len(traces))), judge)]
        if not found
        else [(indices, judge_for_agent(judge, found.get(key))) for key, indices in groups.items()]
    )
    outcomes: list[EvaluationOutcome | None] = [None] * len(traces)
    fresh: list[AgentEvaluation] = []
    for indices, plan_judge in plans:
        judged = _judged([traces[i] for i in indices], plan_judge, force=force, rule=rule)
        fresh += [outcome.evaluation for outcome in judged if not outcome.reused]
        for i, outcome in zip(indices, judged, strict=True):
            outcomes[i] = outcome
    _evaluations_store(fresh)
    return [o for o in outcomes if o is not None]


def _judged(
    traces: list[AgentTrace], judge: AgenticJudge, *, force: bool, rule: EvaluationRule | None
) -> list[EvaluationOutcome]:
    """Each trace's outcome with `judge`: its reusable stored evaluation, or a new unsaved one."""
    inputs = [judge_input_of_trace(t) for t in traces]
    prints = [fingerprint(data) for data in inputs]
    reusable = {} if force else _reusable([t.pk for t in traces], judge, prints)
    pending = [i for i, (t, fp) in enumerate(zip(traces, prints, strict=True)) if (t.pk, fp) not in reusable]
    verdicts = _judge_all(judge, [inputs[i] for i in pending])
    by_index = {
        i: _evaluation_from_verdict(
            verdict,
            trace=traces[i],
            session_id=traces[i].session_id,
            source=AgentEvaluation.Source.TRACE,
            agent_name=traces[i].agent_name,
            operation=traces[i].operation,
            fingerprint_hex=prints[i],
            project_id=traces[i].project_id,
            rule=rule,
        )
        for i, verdict in zip(pending, verdicts, strict=True)
    }
    return [
        EvaluationOutcome(by_index[i], False) if i in by_index else EvaluationOutcome(reusable[(t.pk, prints[i])], True)
        for i, t in enumerate(traces)
    ]


def evaluation_create_for_session(
    *, session_id: str, judge_name: str | None = None, force: bool = False, project_id: int | None = None
) -> EvaluationOutcome:
    """Evaluate the project's trace of `session_id` (`default` if None); another project's is not found."""
    trace = trace_get(session_id=session_id, project_id=project_id)
    return evaluations_create_for_traces(traces=[trace], judge=get_agentic_judge(judge_name), force=force)[0]


@dataclass
class BatchEvaluation:
    outcomes: list[EvaluationOutcome]
    missing_sessions: list[str]

    @property
    def evaluated(self) -> int:
        return len(self.outcomes)

    @property
    def not_found(self) -> int:
        return len(self.missing_sessions)


def evaluations_create_for_sessions(
    *, session_ids: list[str], judge_name: str | None = None, force: bool = False, project_id: int | None = None
) -> BatchEvaluation:
    """Evaluate the project's stored sessions (each once, in the order first named); unknown ones,
    and another project's, are reported as not found."""
    judge = get_agentic_judge(judge_name)
    wanted = list(dict.fromkeys(session_ids))
    traces = {
        t.session_id: t for t in project_traces(project_id).prefetch_related("tool_calls").filter(session_id__in=wanted)
    }
    found = [traces[s] for s in wanted if s in traces]
    return BatchEvaluation(
        outcomes=evaluations_create_for_traces(traces=found, judge=judge, force=force),
        missing_sessions=[s for s in wanted if s not in traces],
    )


def evaluations_create_for_trace_ids(
    *, trace_ids: list[int], judge_name: str | None = None, force: bool = False
) -> int:
    """For the admin action's Celery task. Returns how many evaluations were newly made."""
    judge = get_agentic_judge(judge_name)
    made = 0
    for start in range(0, len(trace_ids), MAX_BATCH_SESSIONS):
        traces = list(AgentTrace.objects.with_tool_calls().filter(pk__in=trace_ids[start : start + MAX_BATCH_SESSIONS]))
        made += sum(not o.reused for o in evaluations_create_for_traces(traces=traces, judge=judge, force=force))
    return made


def evaluation_create_manual(
    *,
    data: JudgeInput,
    agent_name: str = MANUAL_AGENT_NAME,
    judge_name: str | None = None,
    manual_input: dict | None = None,
    project_id: int | None = None,
) -> AgentEvaluation:
    """Judge an interaction that was never traced, in the project (`default` if None). It gets its
    own session id so that history can find it; it is always judged afresh (there is no trace
    whose change could be detected)."""
    project_id = project_pk(project_id)
    judge = judge_for_agent(get_agentic_judge(judge_name), metric_overrides(project_id, {agent_name}).get(agent_name))
    verdict = judge.evaluate(data)
    evaluation = _evaluation_from_verdict(
        verdict,
        trace=None,
        session_id=f"manual_{uuid.uuid4().hex}",
        source=AgentEvaluation.Source.MANUAL,
        agent_name=agent_name,
        operation=data.operation,
        fingerprint_hex=fingerprint(data),
        project_id=project_id,
        manual_input=manual_input,
    )
    _evaluations_store([evaluation])
    return evaluation


@transaction.atomic
def evaluations_clear(*, project_id: int | None = None) -> tuple[int, int]:
    """Delete every evaluation and every trace of the project (`default` if None), together or not
    at all; other projects keep theirs. Returns (evaluations, traces)."""
    project_id = project_pk(project_id)
    evaluations = AgentEvaluation.objects.filter(project_id=project_id)
    scores_delete(subject_kind=SubjectKind.AGENTIC_EVALUATION, subject_ids=evaluations.values("pk"))
    # The count of evaluations alone: Django's total also counts the OnlineVerdict rows it cascades to.
    _, by_model = evaluations.delete()
    deleted = by_model.get(AgentEvaluation._meta.label, 0)
    EvaluationRollup.objects.filter(project_id=project_id).delete()
    traces = traces_clear(project_id=project_id)
    return deleted, traces


def evaluations_expire(project, before, limit: int) -> int:
    """Retention (apps.core.retention): deletes up to `limit` of the project's agentic evaluations
    created before `before`, oldest first, with their Score rows and queue items, and takes them
    out of the running totals, in one transaction."""
    with transaction.atomic():
        ids = expired_ids(AgentEvaluation.objects.filter(project=project), before=before, limit=limit)
        if not ids:
            return 0
        evaluations = metrics_attach(list(AgentEvaluation.objects.filter(pk__in=ids)))
        _rollup_add(evaluations, sign=-1)
        subjects_forget(subject_kind=SubjectKind.AGENTIC_EVALUATION, subject_ids=ids)
        rows_delete_quietly(OnlineVerdict.objects.filter(evaluation_id__in=ids))
        return rows_delete_quietly(AgentEvaluation.objects.filter(pk__in=ids))


def metric_judge_set(
    *,
    project_id: int,
    agent_name: str,
    metric: str,
    judge_model: str | None = None,
    instructions: str | None = None,
    trial_id=None,
    author: str = "",
) -> MetricJudge:
    """Put a judge model or instructions (the one given; the other stays as it was) in force for one
    metric of one agent ("" for every agent without its own), for the evaluations made from now on.
    Evaluations stored before keep their verdicts: their fingerprint names the judge that gave them.
    Audited by the registry (AgenticConfig)."""
    key = {"project_id": project_id, "agent_name": agent_name, "metric": metric}
    row = MetricJudge.objects.select_for_update().filter(**key).first() or MetricJudge(**key)
    return row.published(judge_model=judge_model, instructions=instructions, trial_id=trial_id, author=author)
