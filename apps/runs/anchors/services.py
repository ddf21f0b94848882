"""The judge anchors' writes: mark a test-set version as anchors, start a check (the Celery job judges
the reference run's stored transcripts again with the judge in force), and the beat task that starts
one whenever the judge in force differs from the judge the anchors were last judged by.

The transcripts never change, so every verdict that moves between the reference run and a check is
the judge's doing: its model, its prompt, evalsite's judging logic, a rule's own judge. That is the
judge's drift, measured apart from the bot's."""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.errors import ConflictError, DomainError, InvalidInputError
from apps.core.llm.usage import usage_scope
from apps.core.versioning.selectors import version_get
from apps.rubrics.selectors import rubric_version_snapshot, rule_judges_of
from apps.scores.models import Score
from apps.scores.vocabulary import SubjectKind
from apps.testsets.models import TestSet

from .. import tasks
from ..executor import JudgeChoice, judge_one_criterion, judge_one_rule, rule_judge, snapshot_context, stored_transcript
from ..judging.types import CRITERION, RULE, Transcript, Verdict
from ..models import AnchorCheck, AnchorSet, EvaluationResult, EvaluationRun
from .selectors import (
    check_report,
    identity_in_force,
    judge_identity,
    judge_in_force,
    last_identity,
    reference_judges,
    reference_verdicts,
)

logger = logging.getLogger(__name__)

# The most results a reference run may have. Every judge change judges each of them again, by
# itself and billed to no key: anchors are a fixed sample (a few dozen to a few hundred items), not a
# whole nightly run.
MAX_ANCHOR_RESULTS = 500


def _reference_run(test_set: TestSet, version: int, run_id) -> EvaluationRun:
    runs = EvaluationRun.objects.filter(
        project_id=test_set.project_id, test_set_id=test_set.pk, test_set_version=version
    )
    if run_id is None:
        run = runs.filter(status=EvaluationRun.Status.COMPLETED).newest_first().first()
        if run is None:
            raise InvalidInputError(f"Version {version} of the test set has no completed run to take transcripts from.")
        return run
    run = runs.filter(run_id=run_id).first()
    if run is None:
        raise InvalidInputError(f"Run {run_id} is not a run of version {version} of this test set.")
    if not run.is_finished:
        raise InvalidInputError(f"Run {run_id} is {run.status}: only a finished run's transcripts are anchors.")
    return run


def _anchored_results(run: EvaluationRun) -> list[int]:
    """The run's finished results that stored a conversation and have criterion or rule verdicts. A
    result whose bot failed stored no messages: there is nothing to judge again."""
    done = EvaluationResult.objects.filter(run=run).done().order_by("position", "attempt")
    if done.count() > MAX_ANCHOR_RESULTS:
        raise InvalidInputError(
            f"Run {run.run_id} has {done.count()} results; anchors hold at most {MAX_ANCHOR_RESULTS} (every judge "
            "change judges each of them again): mark a smaller test set's version."
        )
    judged = set(
        Score.objects.of(SubjectKind.RUN_RESULT, done.values("pk"))
        .machine()
        .filter(kind__in=(CRITERION, RULE))
        .values_list("subject_id", flat=True)
    )
    return [pk for pk, output in done.values_list("pk", "output") if (output or {}).get("messages") and pk in judged]


@transaction.atomic
def anchor_set_mark(*, test_set: TestSet, version: int, run_id=None, created_by=None) -> AnchorSet:
    """Mark version `version` of `test_set` as anchors, with the transcripts of run `run_id` (else of
    the version's newest completed run). Refused with 409 when the version is anchors already, 422
    when there is no such version, no such run, or the run stored no judged transcripts."""
    try:
        version_get(test_set, version)
    except DomainError:
        raise InvalidInputError(f"The test set has no version {version}.") from None
    if AnchorSet.objects.filter(project_id=test_set.project_id, test_set_id=test_set.pk, test_set_version=version):
        raise ConflictError(f"Version {version} of the test set is anchors already.")
    run = _reference_run(test_set, version, run_id)
    results = _anchored_results(run)
    if not results:
        raise InvalidInputError(
            f"Run {run.run_id} stored no judged conversations (its bot failed, or its verdicts are gone): "
            "there is nothing to judge again."
        )
    keys = set(
        Score.objects.of(SubjectKind.RUN_RESULT, results)
        .machine()
        .filter(kind__in=(CRITERION, RULE))
        .values_list("kind", "key")
        .distinct()
    )
    try:
        with transaction.atomic():  # a savepoint: a concurrent mark of the same version is a 409, not a 500
            return AnchorSet.objects.create(
                project_id=test_set.project_id,
                test_set_id=test_set.pk,
                test_set_version=version,
                reference_run=run,
                rubric_id=run.rubric_id,
                rubric_version=run.rubric_version,
                results=results,
                rule_ids=sorted(key for kind, key in keys if kind == RULE),
                has_criteria=any(kind == CRITERION for kind, _ in keys),
                reference_judges=reference_judges(results),
                created_by=created_by,
            )
    except IntegrityError:
        raise ConflictError(f"Version {version} of the test set is anchors already.") from None


def anchor_set_unmark(*, anchor_set: AnchorSet) -> None:
    """The version is no longer anchors: the anchor set and its checks go (a check's report is about
    anchors that no longer exist). Refused with 409 while a check is pending or running, whose worker
    would find its anchors gone. Audited by the registry (RunsConfig)."""
    with transaction.atomic():
        locked = AnchorSet.objects.select_for_update().filter(pk=anchor_set.pk).first()
        if locked is None:
            return
        if locked.checks.filter(status__in=AnchorCheck.IN_FLIGHT).exists():
            raise ConflictError("A check of these anchors is pending or running: unmark them when it has finished.")
        locked.delete()


def anchor_check_start(
    *,
    anchor_set: AnchorSet,
    judge: JudgeChoice | None = None,
    trigger: str = AnchorCheck.Trigger.MANUAL,
    created_by=None,
    api_key=None,
) -> AnchorCheck:
    """A pending check of `anchor_set` by `judge` (default: the judge in force) with the rubric's
    rule judges in force, judged by a Celery job once the transaction commits. 409 while another
    check of the anchor set is pending or running."""
    label = judge.label if judge is not None else judge_in_force()[0]
    rule_judges = rule_judges_of(anchor_set.rubric_id) if anchor_set.rubric_id else {}
    with transaction.atomic():
        # The row lock serialises a reviewer's start and the beat task's; the partial unique
        # constraint stops a second check in flight where the lock does not (SQLite has none).
        AnchorSet.objects.select_for_update().filter(pk=anchor_set.pk).first()
        if anchor_set.checks.filter(status__in=AnchorCheck.IN_FLIGHT).exists():
            raise ConflictError("A check of these anchors is pending or running already.")
        try:
            with transaction.atomic():
                check = AnchorCheck.objects.create(
                    anchor_set=anchor_set,
                    trigger=trigger,
                    judge=label,
                    rule_judges=rule_judges,
                    judges=judge_identity(anchor_set=anchor_set, judge_label=label, rule_judges=rule_judges),
                    total=sum(len(rows) for rows in reference_verdicts(anchor_set).values()),
                    created_by=created_by,
                    api_key=api_key,
                )
        except IntegrityError:
            raise ConflictError("A check of these anchors is pending or running already.") from None
        transaction.on_commit(lambda: tasks.run_anchor_check.delay(check.pk))
    return check


class _Judge:
    """The check's judge, rebuilt from its label in the worker. A judge that cannot be built (an LLM
    label with no LLM configured any more) makes every verdict an error saying why, not a crash."""

    def __init__(self, label: str):
        self.label = label
        try:
            self.choice: JudgeChoice | None = JudgeChoice.from_label(label)
            self.error = ""
        except Exception as exc:
            self.choice, self.error = None, f"Judge error: {type(exc).__name__}: {exc}"


def _rules_of(anchor_set: AnchorSet) -> dict[str, dict]:
    """The reference run's rubric version's rules by id; none where the rubric is gone."""
    if anchor_set.rubric_id is None:
        return {}
    try:
        _, rubric = rubric_version_snapshot(
            anchor_set.rubric_id, anchor_set.rubric_version, project=anchor_set.project_id
        )
    except DomainError:
        return {}
    return {rule["id"]: rule for rule in rubric["rules"]}


def _judge_again(
    row: Score, judge: _Judge, check: AnchorCheck, rules: dict, transcript: Transcript, context: str, expected: dict
) -> Verdict:
    """One reference verdict judged again: the same criterion or rule, the same transcript, the check's judge."""
    if judge.choice is None:
        return Verdict.error(judge.label, judge.error)
    try:
        if row.kind == CRITERION:
            return judge_one_criterion(
                row.key, transcript, judge.choice, expected_outcome=expected.get("expected_outcome", "")
            )
        rule = rules.get(row.key)
        if rule is None:
            version = check.anchor_set.rubric_version
            return Verdict.error(judge.label, f"Rule {row.key} is not in version {version} of the rubric any more.")
        choice, instructions = rule_judge(judge.choice, check.rule_judges.get(row.key))
        return judge_one_rule(
            rule, transcript, context, choice, check.anchor_set.rubric_version, instructions=instructions
        )
    except Exception as exc:  # one verdict's fault is that verdict's error, not the check's end
        logger.exception("an anchor verdict could not be judged")
        return Verdict.error(judge.label, f"Judge error: {type(exc).__name__}: {exc}")


def _progress(check: AnchorCheck) -> bool:
    """Record progress; False when the check is no longer running (failed as stale meanwhile)."""
    return bool(
        AnchorCheck.objects.filter(pk=check.pk, status=AnchorCheck.Status.RUNNING).update(
            judged=check.judged, heartbeat_at=timezone.now()
        )
    )


def anchor_check_execute(*, check_pk: int) -> None:
    """Judge every reference verdict of the check's anchors again, recording progress after each,
    then write its report. Runs once: a check that is not pending is left as it is. The verdicts
    are written once, at the end: rewriting a growing JSON list after every verdict would cost the
    square of their number."""
    with transaction.atomic():
        check = (
            AnchorCheck.objects.select_for_update()
            .select_related("anchor_set", "anchor_set__reference_run")
            .filter(pk=check_pk)
            .first()
        )
        if check is None or check.status != AnchorCheck.Status.PENDING:
            return
        check.status = AnchorCheck.Status.RUNNING
        check.started_at = check.heartbeat_at = timezone.now()
        check.save(update_fields=["status", "started_at", "heartbeat_at"])
    anchor_set = check.anchor_set
    snapshot = anchor_set.reference_run.bot_snapshot or {}
    try:
        before = reference_verdicts(anchor_set)
        results = EvaluationResult.objects.in_bulk(anchor_set.results)
        rules, judge, context = _rules_of(anchor_set), _Judge(check.judge), snapshot_context(snapshot)
        verdicts = []
        with usage_scope(api_key_id=check.api_key_id):
            for pk in anchor_set.results:
                if pk not in results or pk not in before:
                    continue  # deleted since the anchors were marked
                result = results[pk]
                transcript = stored_transcript(result.output, snapshot)
                expected = (result.item or {}).get("expected") or {}
                for row in before[pk]:
                    verdict = _judge_again(row, judge, check, rules, transcript, context, expected)
                    verdicts.append(
                        {
                            "result": pk,
                            "result_id": str(result.result_id),
                            "kind": row.kind,
                            "key": row.key,
                            "before": {"status": row.status, "passed": row.passed},
                            "after": verdict.kept(),
                        }
                    )
                    check.judged += 1
                    if not _progress(check):
                        return
        fields = {
            "verdicts": verdicts,
            "report": check_report(verdicts, before_judges=anchor_set.reference_judges),
            "status": AnchorCheck.Status.DONE,
        }
    except Exception as exc:
        logger.exception("anchor check %s failed", check.check_id)
        fields = {"status": AnchorCheck.Status.FAILED, "error": f"{type(exc).__name__}: {exc}"}
    AnchorCheck.objects.filter(pk=check.pk, status=AnchorCheck.Status.RUNNING).update(
        **fields, judged=check.judged, finished_at=timezone.now()
    )


def _fail_stale_checks() -> int:
    """Fail the running checks whose worker stopped (no progress for the run heartbeat timeout): a
    check left running would hold off every later check of its anchors. Pending ones whose Celery
    message was lost (pending that long) are queued again; their heartbeat, as the time they were
    last queued, keeps one from being queued at every beat (running it twice is harmless: only a
    pending check starts)."""
    stale = timezone.now() - timedelta(seconds=settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS)
    lost = AnchorCheck.objects.filter(status=AnchorCheck.Status.PENDING).filter(
        Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True, created_at__lt=stale)
    )
    for pk in list(lost.values_list("pk", flat=True)):
        if AnchorCheck.objects.filter(pk=pk, status=AnchorCheck.Status.PENDING).update(heartbeat_at=timezone.now()):
            tasks.run_anchor_check.delay(pk)
    return AnchorCheck.objects.filter(status=AnchorCheck.Status.RUNNING, heartbeat_at__lt=stale).update(
        status=AnchorCheck.Status.FAILED,
        error="The worker stopped: no verdict was judged for "
        f"{settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS} seconds.",
        finished_at=timezone.now(),
    )


def anchors_watch() -> int:
    """The beat task's service: for each anchor set, a check when the judge in force would
    fingerprint its verdicts otherwise than the judge of its last check (or, before any check, the
    reference run's judge). Returns how many checks it started. Idempotent: the same judge starts
    nothing, and a check in flight is left to finish (the next beat compares with its judge)."""
    _fail_stale_checks()
    started = 0
    # A list, not a cursor held open across the checks' transactions; the result lists are read only
    # for the anchor sets a check starts on.
    for anchor_set in list(AnchorSet.objects.order_by("pk").defer("results")):
        try:
            _label, _rule_judges, identity = identity_in_force(anchor_set)
            if identity == last_identity(anchor_set):
                continue
            anchor_check_start(anchor_set=anchor_set, trigger=AnchorCheck.Trigger.JUDGE_CHANGED)
            started += 1
        except ConflictError:
            continue
        except Exception:  # one anchor set's fault must not keep the others from being checked
            logger.exception("anchors %s could not be checked", anchor_set.anchor_id)
    return started
