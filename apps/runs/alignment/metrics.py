"""The alignment loop for agentic metrics: a candidate judge for one metric (of one agent's
evaluations, or of every agent's) tried on the evaluations reviewers labelled, as a rubric rule's
trial is (services): the same split, Celery job, report and publishing rule.

A metric is graded on a 0..1 score; as everywhere else (agreement, the summary's bands), a score of
at least METRIC_PASS is a pass, for the judge and for a reviewer who gave a score, not a verdict.
A candidate is a judge model or a prompt template (a metric has no versioned text). Its verdict on
an item is one request for the metric alone (judges.composed.grade_with), on the evaluation's trace
as stored now, or on the request of a manual evaluation. Publishing makes it the metric's judge for
the agent (apps.agentic.models.MetricJudge): every evaluation of the agent from then on."""

from django.db import transaction

from apps.agentic.judges import HeuristicAgenticJudge
from apps.agentic.judges.composed import MetricOverride, grade_with
from apps.agentic.models import AgentEvaluation, MetricJudge
from apps.agentic.scoring import METRIC_PASS
from apps.agentic.selectors import judge_input_of_evaluation
from apps.agentic.services import metric_judge_set
from apps.core.errors import InvalidInputError
from apps.scores.agreement import passed_at
from apps.scores.models import Score
from apps.scores.vocabulary import JudgeStatus, ScoreKind, SubjectKind

from ..models import AlignmentTrial
from ..schemas import MetricTrialIn
from .candidates import judge_candidate_check, trial_queue
from .selectors import MIN_LABELS, metric_labelled_items, metric_scope, split


def _candidate_check(candidate: dict) -> None:
    if "rubric_version" in candidate:
        raise InvalidInputError("A metric has no rubric versions: try a judge_model or a prompt_template.")
    judge_candidate_check(candidate)


@transaction.atomic
def metric_trial_create(*, project, data: MetricTrialIn, created_by=None, api_key=None) -> AlignmentTrial:
    """A pending trial of `data.candidate` on `data.metric` (of `data.agent_name`'s evaluations, or
    every agent's), split and judged as a rule's trial is. Refused (422) with fewer than MIN_LABELS
    labelled evaluations, or a candidate that cannot be judged here."""
    candidate = data.candidate.as_dict
    _candidate_check(candidate)
    agent_name = data.agent_name or ""
    items = metric_labelled_items(project_id=project.pk, metric=data.metric, agent_name=agent_name)
    if len(items) < MIN_LABELS:
        whose = f"of {agent_name} " if agent_name else ""
        raise InvalidInputError(
            f"A trial needs at least {MIN_LABELS} evaluations {whose}a reviewer labelled for {data.metric}; "
            f"it has {len(items)}."
        )
    train, test = split(items, scope=metric_scope(project.pk, agent_name, data.metric))
    return trial_queue(
        project=project,
        metric=data.metric,
        agent_name=agent_name,
        candidate=candidate,
        train=train,
        test=test,
        created_by=created_by,
        api_key=api_key,
    )


def subjects_of(trial: AlignmentTrial) -> dict[int, AgentEvaluation]:
    """The held-out evaluations, with their traces' tool calls, and `metric_judge`: the label of the
    judge whose verdict on the metric is in force (what a prompt template is tried with)."""
    found = AgentEvaluation.objects.select_related("trace").prefetch_related("trace__tool_calls").in_bulk(trial.test)
    rows = (
        Score.objects.of(SubjectKind.AGENTIC_EVALUATION, list(found))
        .machine()
        .filter(kind=ScoreKind.METRIC, key=trial.metric)
        .order_by("created_at", "id")
        .values_list("subject_id", "judge")
    )
    for subject_id, judge in rows:
        found[subject_id].metric_judge = judge
    return found


def _override(trial: AlignmentTrial, evaluation: AgentEvaluation, published: dict[str, MetricJudge]) -> MetricOverride:
    """The candidate's one change to how the item's metric was graded: a model (with the metric's
    published instructions, as the agent's evaluations read them now), or instructions (with the
    LLM that graded the item, or the configured one where the heuristic judge did)."""
    if "judge_model" in trial.candidate:
        row = published.get(evaluation.agent_name) or published.get("")
        return MetricOverride(judge_model=trial.candidate["judge_model"], instructions=row.instructions if row else "")
    judge = getattr(evaluation, "metric_judge", "") or ""
    model = judge.removeprefix("openai:") if judge.startswith("openai:") else ""
    return MetricOverride(judge_model=model, instructions=trial.candidate["prompt_template"])


def judge_again(trial: AlignmentTrial, evaluation: AgentEvaluation, published: dict[str, MetricJudge]) -> dict:
    """The candidate's verdict on one held-out evaluation, kept as a rule trial keeps one (with the
    score beside pass/fail)."""
    data = judge_input_of_evaluation(evaluation)
    if data is None:
        return {
            "status": JudgeStatus.ERROR,
            "passed": None,
            "value": None,
            "reasoning": "Its trace is gone.",
            "judge": "",
        }
    override = _override(trial, evaluation, published)
    label, result = grade_with(trial.metric, data, override, HeuristicAgenticJudge())
    return {
        "status": result.status,
        "passed": passed_at(None, result.score, METRIC_PASS) if result.status == JudgeStatus.OK else None,
        "value": result.score,
        "reasoning": result.reasoning[:2000],
        "judge": label,
    }


def published_judges(trial: AlignmentTrial) -> dict[str, MetricJudge]:
    """The metric judges in force in the trial's project for its metric, by agent name ("": every agent)."""
    return {row.agent_name: row for row in MetricJudge.objects.filter(project_id=trial.project_id, metric=trial.metric)}


def publish(trial: AlignmentTrial, author: str) -> dict:
    """The candidate in force as the metric's judge for the trial's agent (or every agent)."""
    row = metric_judge_set(
        project_id=trial.project_id,
        agent_name=trial.agent_name,
        metric=trial.metric,
        judge_model=trial.candidate.get("judge_model"),
        instructions=trial.candidate.get("prompt_template"),
        trial_id=trial.trial_id,
        author=author,
    )
    return {"metric_judge": row.as_dict()}
