"""Reads of the alignment loop: which items a rule's trial can use, how they split, and what a trial
found (its report is computed here from its stored verdicts, once, when it finishes)."""

import hashlib
from dataclasses import dataclass

from django.db.models import Q
from django.urls import reverse

from apps.agentic.models import AgentEvaluation
from apps.agentic.scoring import METRIC_PASS
from apps.agentic.selectors import project_evaluations
from apps.core.selectors import object_get
from apps.scores.agreement import (
    cohen_kappa,
    judge_human_pairs,
    kappa_difference_interval,
    kappa_interval,
    passed_at,
)
from apps.scores.vocabulary import JudgeStatus, ScoreKind, SubjectKind

from ..judging.types import RULE, stored_assessed
from ..models import AlignmentTrial, EvaluationResult

# A trial needs this many labelled items of its rule (train and test halves together): with ten
# held-out items kappa's interval is about a unit wide, which no candidate can beat at 95%.
MIN_LABELS = 20
# The newest labels a trial uses at most (each held-out one costs a judge call).
MAX_LABELS = 1000


@dataclass(frozen=True)
class Labelled:
    """An item a reviewer labelled for a rule: the result, the reviewer's verdict, and the judge's
    verdict in force on it (the newest machine score of the same result and rule)."""

    result: int
    human: bool
    judge_status: str | None
    judge_passed: bool | None


def labelled_items(*, rubric_id, rule_id: str) -> list[Labelled]:
    """The results of runs with `rubric_id` that a reviewer gave a pass/fail verdict on `rule_id`,
    newest review first (at most MAX_LABELS), with the judge's verdict beside it. Only results that
    stored a conversation can be judged again."""
    results = EvaluationResult.objects.filter(run__rubric_id=rubric_id, output__isnull=False).values("pk")
    pairs = judge_human_pairs(SubjectKind.RUN_RESULT, results, kinds=(RULE,)).filter(key=rule_id, passed__isnull=False)
    return [
        Labelled(result=subject, human=human, judge_status=status, judge_passed=passed)
        for _kind, _key, human, _value, status, passed, _judge_value, subject in pairs[:MAX_LABELS]
    ]


def rule_scope(rubric_id, rule_id: str) -> str:
    """What a rule trial's split hashes with each item: every trial of the rule is tested on the same
    results."""
    return f"{rubric_id}:{rule_id}"


def metric_scope(project_id: int, agent_name: str, metric: str) -> str:
    """What a metric trial's split hashes with each item: every trial of the metric for the agent is
    tested on the same evaluations."""
    return f"metric:{project_id}:{agent_name}:{metric}"


def metric_labelled_items(*, project_id: int, metric: str, agent_name: str = "") -> list[Labelled]:
    """The project's evaluations (of `agent_name`, if given) that a reviewer scored or passed/failed on
    `metric`, newest review first (at most MAX_LABELS), with the judge's verdict beside it. Only those
    that can be judged again: their trace is still stored, or they were manual (their request is)."""
    evaluations = project_evaluations(project_id).filter(Q(trace__isnull=False) | Q(manual_input__isnull=False))
    if agent_name:
        evaluations = evaluations.filter(agent_name=agent_name)
    pairs = (
        judge_human_pairs(SubjectKind.AGENTIC_EVALUATION, evaluations.values("pk"), kinds=(ScoreKind.METRIC,))
        .filter(key=metric)
        .filter(Q(passed__isnull=False) | Q(value__isnull=False))
    )
    return [
        Labelled(
            result=subject,
            human=bool(passed_at(h_passed, h_value, METRIC_PASS)),
            judge_status=status,
            judge_passed=passed_at(j_passed, j_value, METRIC_PASS),
        )
        for _kind, _key, h_passed, h_value, status, j_passed, j_value, subject in pairs[:MAX_LABELS]
    ]


def split(items: list[Labelled], *, scope: str) -> tuple[list[Labelled], list[Labelled]]:
    """(train, test): the items in the order of a hash of (scope, item), the scope naming what is
    judged (rule_scope, metric_scope), the first half (rounded up) held out for testing. The order
    does not depend on when a label was given, so an item stays on its side as labels are added
    (only the boundary moves) and every trial of a rule or metric is tested on the same items: a
    candidate written from the train half's disagreements is measured on items its author was not
    shown."""

    def place(item: Labelled) -> str:
        return hashlib.sha256(f"{scope}:{item.result}".encode()).hexdigest()

    ordered = sorted(items, key=place)
    cut = (len(ordered) + 1) // 2
    return ordered[cut:], ordered[:cut]


def _metric_labels(trial: AlignmentTrial) -> dict[int, Labelled]:
    return {
        item.result: item
        for item in metric_labelled_items(project_id=trial.project_id, metric=trial.metric, agent_name=trial.agent_name)
    }


def trial_get(trial_id, *, project) -> AlignmentTrial:
    """The trial of `project`; another project's is NotFoundError, as one that does not exist."""
    return object_get(
        AlignmentTrial.objects.filter(project=project).select_related("rubric"), trial_id, field="trial_id"
    )


def trial_list(*, rubric, limit: int = 50) -> list[AlignmentTrial]:
    """A rubric's trials, newest first."""
    return list(AlignmentTrial.objects.filter(rubric=rubric).order_by("-created_at", "-id")[:limit])


def metric_trial_list(*, project, agent_name: str | None = None, limit: int = 50) -> list[AlignmentTrial]:
    """The project's trials of agentic metrics (of `agent_name`'s evaluations only, if given), newest first."""
    trials = AlignmentTrial.objects.filter(project=project).exclude(metric="")
    if agent_name is not None:
        trials = trials.filter(agent_name=agent_name)
    return list(trials.order_by("-created_at", "-id")[:limit])


def _figures(humans: list[bool], verdicts: list[bool | None]) -> dict:
    pairs = [(h, v) for h, v in zip(humans, verdicts, strict=True) if v is not None]
    judge, human = [v for _, v in pairs], [h for h, _ in pairs]
    return {
        "n": len(pairs),
        "unassessed": len(verdicts) - len(pairs),
        "kappa": cohen_kappa(judge, human),
        "kappa_ci": kappa_interval(judge, human),
        "agreement": round(sum(j == h for j, h in pairs) / len(pairs), 4) if pairs else None,
    }


def trial_report(verdicts: list[dict], *, seed: int) -> dict:
    """The figures of a finished trial over its held-out items (`verdicts`, as AlignmentTrial keeps
    them): kappa with the reviewers before (the judge's stored verdicts) and after (the candidate's),
    each over the items it assessed, and the difference over the items both assessed with its paired
    bootstrap interval. `better` only when that interval lies above zero and the candidate leaves no
    more items unassessed than the judge did: a candidate that skips the hard items is not better."""
    humans = [v["human"] for v in verdicts]
    before = [stored_assessed(v["before"]) for v in verdicts]
    after = [stored_assessed(v["after"]) for v in verdicts]
    baseline, candidate = _figures(humans, before), _figures(humans, after)
    both = [(h, b, a) for h, b, a in zip(humans, before, after, strict=True) if b is not None and a is not None]
    human, base, head = [h for h, _, _ in both], [b for _, b, _ in both], [a for _, _, a in both]
    kappa_base, kappa_head = cohen_kappa(base, human), cohen_kappa(head, human)
    interval = kappa_difference_interval(human, base, head, seed=seed)
    return {
        "baseline": baseline,
        "candidate": candidate,
        "difference": {
            "n": len(both),
            "kappa": None if kappa_base is None or kappa_head is None else round(kappa_head - kappa_base, 4),
            "kappa_ci": interval,
        },
        "better": interval is not None and interval[0] > 0 and candidate["unassessed"] <= baseline["unassessed"],
    }


def changed_items(trial: AlignmentTrial) -> list[dict]:
    """The held-out items whose verdict the candidate changed (status or pass/fail), with the
    reviewer's verdict and both judges', linked to their result pages."""
    changed = []
    for v in trial.verdicts:
        if (v["before"]["status"], v["before"]["passed"]) == (v["after"]["status"], v["after"]["passed"]):
            continue
        page = "console:trace" if trial.of_metric else "console:result-detail"
        changed.append(
            {
                "id": v["result_id"],
                "url": reverse(page, args=[v["result_id"]]),
                "human": v["human"],
                "before": v["before"],
                "after": v["after"],
            }
        )
    return changed


def train_disagreements(trial: AlignmentTrial) -> list[dict]:
    """The train half's items where the judge's stored verdict disagrees with the reviewer: what a
    reviewer reads to write the next candidate (the held-out half is never listed before it is judged)."""
    if trial.of_metric:
        return metric_train_disagreements(trial)
    labels = {item.result: item for item in labelled_items(rubric_id=trial.rubric_id, rule_id=trial.rule_id)}
    disagreeing = [
        pk
        for pk in trial.train
        if pk in labels
        and labels[pk].judge_status == JudgeStatus.OK
        and labels[pk].judge_passed is not None
        and labels[pk].judge_passed != labels[pk].human
    ]
    ids = dict(EvaluationResult.objects.filter(pk__in=disagreeing).values_list("pk", "result_id"))
    return [
        {"id": str(ids[pk]), "url": reverse("console:result-detail", args=[ids[pk]]), "human": labels[pk].human}
        for pk in disagreeing
        if pk in ids
    ]


def _trace_link(session_id: str) -> dict:
    return {"id": session_id, "url": reverse("console:trace", args=[session_id])}


def metric_train_disagreements(trial: AlignmentTrial) -> list[dict]:
    """train_disagreements of a metric's trial, linked to the evaluations' trace pages."""
    labels = _metric_labels(trial)
    disagreeing = [
        pk
        for pk in trial.train
        if pk in labels
        and labels[pk].judge_status == JudgeStatus.OK
        and labels[pk].judge_passed not in (None, labels[pk].human)
    ]
    sessions = dict(AgentEvaluation.objects.filter(pk__in=disagreeing).values_list("pk", "session_id"))
    return [{**_trace_link(sessions[pk]), "human": labels[pk].human} for pk in disagreeing if pk in sessions]
