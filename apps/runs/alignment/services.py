"""The alignment loop's writes: start a trial of a candidate judge for one rubric rule, judge its
held-out items (the Celery job), and publish the candidate when it agrees better with the reviewers.

A candidate changes one thing about how the rule is judged and keeps the rest as each item was
judged: a rubric version (the rule's text), a judge model, or the instructions an LLM judge reads
(a prompt template). The baseline is the judge's verdict as stored, what every page shows today."""

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.errors import ConflictError, InvalidInputError
from apps.core.llm.client import get_llm_client, llm_configured
from apps.core.llm.usage import usage_scope
from apps.rubrics.models import Rubric
from apps.rubrics.schemas import RubricContent
from apps.rubrics.selectors import rubric_version_snapshot
from apps.rubrics.services import rubric_publish_version, rule_judge_set
from apps.scores.vocabulary import JudgeStatus

from .. import tasks
from ..executor import JudgeChoice, judge_one_rule, rule_judge, snapshot_context, stored_transcript
from ..judging.types import Verdict
from ..models import AlignmentTrial, EvaluationResult, EvaluationRun
from ..schemas import AlignmentTrialIn
from . import metrics
from .candidates import HEURISTIC, judge_candidate_check, trial_queue
from .selectors import MIN_LABELS, labelled_items, metric_labelled_items, rule_scope, split, trial_report

logger = logging.getLogger(__name__)


def _rules_of(rubric: Rubric, version: int | None) -> dict[str, dict]:
    return {
        rule["id"]: rule for rule in rubric_version_snapshot(rubric.pk, version, project=rubric.project_id)[1]["rules"]
    }


def _candidate_check(rubric: Rubric, rule_id: str, candidate: dict) -> None:
    if "rubric_version" in candidate:
        version = candidate["rubric_version"]
        if not rubric.versions.filter(version=version).exists():
            raise InvalidInputError(f"The rubric has no version {version}.")
        if rule_id not in _rules_of(rubric, version):
            raise InvalidInputError(f"Version {version} of the rubric has no rule {rule_id}.")
    else:
        judge_candidate_check(candidate)


@transaction.atomic
def trial_create(*, rubric: Rubric, data: AlignmentTrialIn, created_by=None, api_key=None) -> AlignmentTrial:
    """A pending trial of `data.candidate` on `data.rule`, its labelled items split into train and
    held-out test halves, judged by a Celery job once the transaction commits. Refused (422) for a
    rule the rubric never had labelled MIN_LABELS times, or a candidate that cannot be judged here."""
    rule_id = data.rule
    if rule_id not in _rules_of(rubric, None):
        raise InvalidInputError(f"The rubric (version {rubric.current_version}) has no rule {rule_id}.")
    candidate = data.candidate.as_dict
    _candidate_check(rubric, rule_id, candidate)
    items = labelled_items(rubric_id=rubric.pk, rule_id=rule_id)
    if len(items) < MIN_LABELS:
        raise InvalidInputError(
            f"A trial needs at least {MIN_LABELS} items a reviewer labelled for rule {rule_id}; it has {len(items)}."
        )
    train, test = split(items, scope=rule_scope(rubric.pk, rule_id))
    if "judge_model" not in candidate and not llm_configured():
        _llm_judged_check([item.result for item in test], rule_id)
    return trial_queue(
        project_id=rubric.project_id,
        rubric=rubric,
        rule_id=rule_id,
        candidate=candidate,
        train=train,
        test=test,
        created_by=created_by,
        api_key=api_key,
    )


def _llm_judged_check(result_pks: list[int], rule_id: str) -> None:
    """Refuse (422) a trial that keeps the items' judge when some were judged by an LLM and none is
    configured now: every one of their verdicts would be an error, and the trial could say nothing."""
    runs = EvaluationRun.objects.filter(results__pk__in=result_pks).distinct().values_list("judge", "rule_judges")
    models = {judge for judge, _ in runs if judge not in HEURISTIC}
    models |= {
        f"openai:{override['judge_model']}"
        for _, overrides in runs
        if (override := (overrides or {}).get(rule_id)) and override.get("judge_model") not in (None, *HEURISTIC)
    }
    if models:
        raise InvalidInputError(
            f"The held-out items were judged by {', '.join(sorted(models))}: judging them again needs an LLM "
            "(set OPENAI_API_KEY or OPENAI_BASE_URL), or try a judge_model."
        )


def _candidate_judge(candidate: dict, run_judge: str, override: dict | None) -> tuple[JudgeChoice, str | None]:
    """The judge and instructions that judge an item again: as the item was judged (its run's judge,
    with the rule judge the run recorded), with the candidate's one change."""
    if "judge_model" in candidate:
        # The items' own judge is not needed (nor its LLM): only the rule's published instructions,
        # which an LLM candidate reads as the runs would.
        model = candidate["judge_model"]
        if model in HEURISTIC:
            return JudgeChoice(), None
        return JudgeChoice(get_llm_client(model=model)), (override or {}).get("instructions") or None
    judge, instructions = rule_judge(JudgeChoice.from_label(run_judge), override)
    if "prompt_template" in candidate:
        # The heuristic judge reads no prompt: a template is tried with the configured LLM judge.
        judge = judge if judge.client is not None else JudgeChoice(get_llm_client())
        instructions = candidate["prompt_template"]
    return judge, instructions


def _judge_again(trial: AlignmentTrial, result: EvaluationResult, rules: dict) -> Verdict:
    run = result.run
    version = trial.candidate.get("rubric_version") or run.rubric_version
    if version not in rules:
        rules[version] = _rules_of(trial.rubric, version)
    rule = rules[version].get(trial.rule_id)
    if rule is None:
        return Verdict.error(run.judge, f"Version {version} of the rubric has no rule {trial.rule_id}.")
    try:
        judge, instructions = _candidate_judge(trial.candidate, run.judge, (run.rule_judges or {}).get(trial.rule_id))
        transcript = stored_transcript(result.output, run.bot_snapshot or {})
        return judge_one_rule(
            rule, transcript, snapshot_context(run.bot_snapshot or {}), judge, version, instructions=instructions
        )
    except Exception as exc:  # one item's fault is that item's error verdict, not the trial's end
        logger.exception("an alignment trial item could not be judged")
        return Verdict.error(run.judge, f"Judge error: {type(exc).__name__}: {exc}")


def _before(items) -> dict[int, dict]:
    """The reviewer's and the stored judge's verdicts of the held-out items, as they are now."""
    return {
        item.result: {"human": item.human, "before": {"status": item.judge_status, "passed": item.judge_passed}}
        for item in items
    }


def _rule_items(trial: AlignmentTrial) -> tuple[dict, dict, Callable[[Any], tuple[str, dict]]]:
    """(labels, the held-out results, how one is judged again: its result_id and kept verdict)."""
    rules: dict = {}

    def judge(result: EvaluationResult) -> tuple[str, dict]:
        return str(result.result_id), _judge_again(trial, result, rules).kept()

    labels = _before(labelled_items(rubric_id=trial.rubric_id, rule_id=trial.rule_id))
    return labels, EvaluationResult.objects.select_related("run").in_bulk(trial.test), judge


def _metric_items(trial: AlignmentTrial) -> tuple[dict, dict, Callable[[Any], tuple[str, dict]]]:
    """(labels, the held-out evaluations, how one is judged again: its session id and kept verdict)."""
    published = metrics.published_judges(trial)

    def judge(evaluation) -> tuple[str, dict]:
        try:
            return evaluation.session_id, metrics.judge_again(trial, evaluation, published)
        except Exception as exc:  # one item's fault is that item's error verdict, not the trial's end
            logger.exception("an alignment trial item could not be judged")
            return evaluation.session_id, {
                "status": JudgeStatus.ERROR,
                "passed": None,
                "value": None,
                "reasoning": f"Judge error: {type(exc).__name__}: {exc}",
                "judge": "",
            }

    items = metric_labelled_items(project_id=trial.project_id, metric=trial.metric, agent_name=trial.agent_name)
    return _before(items), metrics.subjects_of(trial), judge


# How often a running trial writes the verdicts judged so far: the list is one JSON value rewritten
# whole, so writing it after each of 500 items would write it 500 times.
VERDICTS_EVERY = 25


def trial_execute(*, trial_pk: int) -> None:
    """Judge the trial's held-out items with its candidate, one by one, recording progress after each,
    then write its report. Runs once: a trial that is not pending is left as it is."""
    with transaction.atomic():
        trial = (
            AlignmentTrial.objects.select_for_update(of=("self",)).select_related("rubric").filter(pk=trial_pk).first()
        )
        if trial is None or trial.status != AlignmentTrial.Status.PENDING:
            return
        trial.status, trial.started_at = AlignmentTrial.Status.RUNNING, timezone.now()
        trial.heartbeat_at, trial.attempts = trial.started_at, trial.attempts + 1
        trial.verdicts, trial.judged = [], 0  # a trial taken up again starts over
        trial.save(update_fields=["status", "started_at", "heartbeat_at", "attempts", "verdicts", "judged"])
    try:
        labels, subjects, judge = _metric_items(trial) if trial.of_metric else _rule_items(trial)
        with usage_scope(api_key_id=trial.api_key_id):
            for pk in trial.test:
                if pk not in subjects or pk not in labels:
                    continue  # deleted, or no longer labelled, since the trial was created
                public_id, after = judge(subjects[pk])
                trial.verdicts.append({"result": pk, "result_id": public_id, **labels[pk], "after": after})
                trial.judged += 1
                trial.heartbeat_at = timezone.now()
                # Progress after every item; the verdicts (a JSON list rewritten whole) every few.
                fields = ["judged", "heartbeat_at"] + (["verdicts"] if trial.judged % VERDICTS_EVERY == 0 else [])
                trial.save(update_fields=fields)
        trial.report = trial_report(trial.verdicts, seed=trial.trial_id.int % 2**32)
        trial.status = AlignmentTrial.Status.DONE
    except Exception as exc:
        logger.exception("alignment trial %s failed", trial.trial_id)
        trial.status, trial.error = AlignmentTrial.Status.FAILED, f"{type(exc).__name__}: {exc}"
    trial.finished_at = timezone.now()
    trial.save(update_fields=["report", "status", "error", "finished_at", "verdicts"])


# A trial taken up this many times by a worker that then died is failed, not started again.
MAX_TRIAL_ATTEMPTS = 2


def trials_reap() -> int:
    """Trials whose worker died (no heartbeat for EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS while
    running) go back to pending and are queued again, once; then they fail, saying so. Pending ones
    whose message was lost (pending that long) are queued again. Returns how many were touched.
    Called by the run reaper's beat task."""
    stale_before = timezone.now() - timedelta(seconds=settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS)
    touched = 0
    with transaction.atomic():
        stale = AlignmentTrial.objects.select_for_update(skip_locked=True).filter(
            Q(status=AlignmentTrial.Status.RUNNING, heartbeat_at__lt=stale_before)
            | Q(status=AlignmentTrial.Status.PENDING, heartbeat_at__lt=stale_before)
            | Q(status=AlignmentTrial.Status.PENDING, heartbeat_at__isnull=True, created_at__lt=stale_before)
        )
        for trial in stale:
            touched += 1
            if trial.status == AlignmentTrial.Status.RUNNING and trial.attempts >= MAX_TRIAL_ATTEMPTS:
                trial.status, trial.finished_at = AlignmentTrial.Status.FAILED, timezone.now()
                timeout = settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS
                trial.error = f"Worker lost: no progress for {timeout} s, {trial.attempts} times"
                trial.save(update_fields=["status", "finished_at", "error"])
                continue
            # Pending again (a running one's partial verdicts are dropped when it starts over); its
            # heartbeat, as the time it was queued, keeps a lost message from being queued every pass.
            AlignmentTrial.objects.filter(pk=trial.pk).update(
                status=AlignmentTrial.Status.PENDING, heartbeat_at=timezone.now()
            )
            transaction.on_commit(lambda pk=trial.pk: tasks.run_alignment_trial.delay(pk))
    return touched


def _publish_rule_text(trial: AlignmentTrial, author: str) -> dict:
    """The rubric's head with the rule's text from the candidate version, published as a new version
    (or none, when the head already has that text)."""
    rubric = Rubric.objects.select_for_update().get(pk=trial.rubric_id)
    current, head = rubric_version_snapshot(rubric.pk, None, project=rubric.project_id)
    version = trial.candidate["rubric_version"]
    rule = _rules_of(rubric, version)[trial.rule_id]
    positions = [n for n, r in enumerate(head["rules"]) if r["id"] == trial.rule_id]
    if not positions:
        raise ConflictError(f"Rule {trial.rule_id} is no longer in the rubric (version {current}).")
    if head["rules"][positions[0]] == rule:
        return {"rubric_version": current, "new_version": False}
    head["rules"][positions[0]] = rule
    report = trial.report or {}
    before, after = report["baseline"]["kappa"], report["candidate"]["kappa"]
    rubric, _ = rubric_publish_version(
        rubric=rubric,
        content=RubricContent.model_validate({k: head[k] for k in RubricContent.model_fields if k in head}),
        changelog=f"Rule {trial.rule_id} from version {version}: alignment trial {trial.trial_id} "
        f"(kappa {before} -> {after} on {report['difference']['n']} held-out items)",
        author=author,
        expected_version=current,
    )
    return {"rubric_version": rubric.current_version, "new_version": True}


@transaction.atomic
def trial_publish(*, trial: AlignmentTrial, author: str = "") -> AlignmentTrial:
    """Put the candidate in force: the rule's new text as a new rubric version, or the rule's judge
    model or instructions (RuleJudge) for the runs created from now on, or a metric's (MetricJudge)
    for the agent's evaluations made from now on. Refused (409) unless the
    trial is done, not yet published, and found the candidate better at 95%."""
    trial = AlignmentTrial.objects.select_for_update(of=("self",)).select_related("rubric").get(pk=trial.pk)
    if trial.status != AlignmentTrial.Status.DONE:
        raise ConflictError(f"The trial is {trial.status}: only a finished trial can be published.")
    if trial.published_at is not None:
        raise ConflictError("The trial's candidate is published already.")
    report = trial.report or {}
    if not report.get("better"):
        interval = (report.get("difference") or {}).get("kappa_ci")
        raise ConflictError(
            "The candidate is not better than the judge at 95%: "
            + (
                f"the interval of its kappa gain is [{interval[0]}, {interval[1]}], which does not lie above 0."
                if interval and interval[0] <= 0
                else "it leaves more held-out items unassessed than the judge."
                if interval
                else "kappa's gain is undefined on these items (too few, or one class only)."
            )
        )
    if trial.of_metric:
        published = metrics.publish(trial, author)
    elif "rubric_version" in trial.candidate:
        published = _publish_rule_text(trial, author)
    else:
        row = rule_judge_set(
            rubric=trial.rubric,
            rule_id=trial.rule_id,
            judge_model=trial.candidate.get("judge_model"),
            instructions=trial.candidate.get("prompt_template"),
            trial_id=trial.trial_id,
            author=author,
        )
        published = {"rule_judge": row.as_dict()}
    trial.published, trial.published_at = published, timezone.now()
    trial.save(update_fields=["published", "published_at"])
    return trial
