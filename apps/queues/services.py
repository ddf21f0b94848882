"""Writes of review queues: create and edit queues, fill them by their rule or by hand, assign and
claim items, and record the review that finishes an item. The API and the console call these."""

import operator
import uuid
from functools import reduce

from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.agentic.judges.base import AGENTIC_METRICS
from apps.agentic.models import AgentEvaluation
from apps.core.errors import ConflictError, InvalidInputError, NotFoundError
from apps.core.models import project_pk
from apps.rag.models import TraceEvaluation
from apps.runs.models import EvaluationResult
from apps.runs.services import MAX_REVIEW_NOTE, verdict_review_create
from apps.scores.agreement import agreement_table, judge_human_pairs
from apps.scores.models import Score
from apps.scores.services import human_score_record
from apps.scores.vocabulary import JudgeStatus, ScoreKind, SubjectKind

from .models import QueueItem, QueueKind, ReviewQueue
from .selectors import PASS_THRESHOLD, REVIEWED_KINDS, queue_item_subject, subjects_of_project

INSERT_BATCH = 1000
SUBJECT_MODELS = {
    QueueKind.RUN_RESULT: EvaluationResult,
    QueueKind.AGENTIC_EVALUATION: AgentEvaluation,
    QueueKind.RAG_EVALUATION: TraceEvaluation,
}


def _check_rule(*, kind: str, score_below: float | None, sample_rate: float) -> None:
    if kind not in QueueKind.values:
        raise InvalidInputError(f"kind must be one of {', '.join(QueueKind.values)}")
    if score_below is not None and not 0 <= score_below <= 1:
        raise InvalidInputError("score_below must be between 0 and 1")
    if not 0 <= sample_rate <= 1:
        raise InvalidInputError("sample_rate must be between 0 and 1")


def queue_create(
    *,
    project,
    name: str,
    kind: str,
    description: str = "",
    include_unassessed: bool = False,
    score_below: float | None = None,
    disagreement_prone: bool = False,
    sample_rate: float = 0.0,
    created_by=None,
) -> ReviewQueue:
    """A queue of `project`; its name is unique in the project."""
    _check_rule(kind=kind, score_below=score_below, sample_rate=sample_rate)
    try:
        with transaction.atomic():
            return ReviewQueue.objects.create(
                project_id=project_pk(project),
                name=name.strip(),
                kind=kind,
                description=description,
                include_unassessed=include_unassessed,
                score_below=score_below,
                disagreement_prone=disagreement_prone,
                sample_rate=sample_rate,
                created_by=created_by,
            )
    except IntegrityError as exc:
        raise ConflictError(f"A queue named {name!r} already exists") from exc


def queue_update(
    *,
    queue: ReviewQueue,
    name: str,
    kind: str,
    description: str = "",
    include_unassessed: bool = False,
    score_below: float | None = None,
    disagreement_prone: bool = False,
    sample_rate: float = 0.0,
) -> ReviewQueue:
    _check_rule(kind=kind, score_below=score_below, sample_rate=sample_rate)
    # Items hold targets of the queue's kind; another kind would leave them unreviewable.
    if kind != queue.kind and queue.items.exists():
        raise ConflictError("This queue has items; its kind can no longer change")
    queue.name, queue.kind, queue.description = name.strip(), kind, description
    queue.include_unassessed, queue.score_below = include_unassessed, score_below
    queue.disagreement_prone, queue.sample_rate = disagreement_prone, sample_rate
    try:
        with transaction.atomic():
            queue.save()
    except IntegrityError as exc:
        raise ConflictError(f"A queue named {name!r} already exists") from exc
    return queue


def queue_delete(*, queue: ReviewQueue) -> None:
    """The queue and its items go; the reviews made through it stay with what they reviewed."""
    queue.delete()


def _insert(queue: ReviewQueue, target_pks) -> int:
    """Adds the targets not yet in the queue; returns how many entered. ON CONFLICT DO NOTHING (INSERT
    OR IGNORE on SQLite) against the unique constraints makes an object added meanwhile by hand a
    no-op rather than a duplicate or an error."""
    before = queue.items.count()
    batch = []
    for pk in target_pks:
        batch.append(
            QueueItem(queue=queue, origin=QueueItem.Origin.RULE, subject_kind=queue.subject_kind, subject_id=pk)
        )
        if len(batch) >= INSERT_BATCH:
            QueueItem.objects.bulk_create(batch, ignore_conflicts=True)
            batch = []
    if batch:
        QueueItem.objects.bulk_create(batch, ignore_conflicts=True)
    return queue.items.count() - before


def _machine_scores(queue: ReviewQueue, **filters):
    """The judge's scores of the candidate subject the outer query is at, of the kinds reviewed."""
    return Score.objects.machine().filter(
        subject_kind=queue.subject_kind, subject_id=OuterRef("pk"), kind__in=REVIEWED_KINDS[queue.kind], **filters
    )


def _disagreeing_keys(queue: ReviewQueue) -> list[tuple[str, str]]:
    """(kind, key) on which a reviewer's score in force disagrees with the judge's, anywhere: the
    rules and metrics the judge is known to get wrong, in the queue's project (another project's
    reviews choose nothing here). Over the one agreement path."""
    subjects = subjects_of_project(SUBJECT_MODELS[queue.kind], queue.project_id).values("pk")
    pairs = judge_human_pairs(queue.subject_kind, subjects, kinds=REVIEWED_KINDS[queue.kind])
    return [
        (row.kind, row.key)
        for row in agreement_table(pairs, threshold=PASS_THRESHOLD.get(queue.kind))
        if row.judge_pass_human_fail or row.judge_fail_human_pass
    ]


def _passed_share_below(queue: ReviewQueue):
    """Run results: the share of passed verdicts among those the judge assessed, under score_below."""

    def count(**filters):
        counted = (
            _machine_scores(queue, status=JudgeStatus.OK, **filters)
            .order_by()
            .values("subject_id")
            .annotate(n=Count("id"))
            .values("n")
        )
        return Coalesce(Subquery(counted, output_field=IntegerField()), 0)

    return count(), count(passed=True)


def _candidates(queue: ReviewQueue):
    """The subjects of the queue's project a queue's rule looks at, less those already in it."""
    subjects = subjects_of_project(SUBJECT_MODELS[queue.kind], queue.project_id)
    if queue.kind == QueueKind.RUN_RESULT:
        subjects = subjects.filter(state=EvaluationResult.State.DONE)
    return subjects.exclude(
        Exists(QueueItem.objects.filter(queue=queue, subject_kind=queue.subject_kind, subject_id=OuterRef("pk")))
    )


def _rule_targets(queue: ReviewQueue) -> list:
    """The subjects the queue's rule takes: each enabled part is a condition on the subject's Score
    rows (an EXISTS, or counts for a run result's share passed), one query on any database."""
    candidates = _candidates(queue)
    conditions = []
    if queue.include_unassessed:
        conditions.append(Exists(_machine_scores(queue).exclude(status=JudgeStatus.OK)))
        if queue.kind == QueueKind.RUN_RESULT:
            conditions.append(Q(error__isnull=False) & ~Q(error=""))
    if queue.score_below is not None:
        if queue.kind == QueueKind.RUN_RESULT:
            assessed, passing = _passed_share_below(queue)
            candidates = candidates.annotate(assessed=assessed, passing=passing)
            conditions.append(Q(assessed__gt=0, passing__lt=F("assessed") * queue.score_below))
        elif queue.kind == QueueKind.AGENTIC_EVALUATION:
            # The evaluation's stored overall: the seed's weighted mean of its three metric scores.
            conditions.append(Q(overall_score__lt=queue.score_below))
        else:
            conditions.append(Exists(_machine_scores(queue, status=JudgeStatus.OK, value__lt=queue.score_below)))
    if queue.disagreement_prone and (keys := _disagreeing_keys(queue)):
        disagreeing = reduce(operator.or_, (Q(kind=kind, key=key) for kind, key in keys))
        conditions.append(Exists(_machine_scores(queue, status=JudgeStatus.OK).filter(disagreeing)))
    chosen = set()
    if conditions:
        chosen = set(candidates.filter(reduce(operator.or_, conditions)).values_list("pk", flat=True).iterator())
    if queue.sample_rate > 0:
        chosen |= {pk for pk in candidates.values_list("pk", flat=True).iterator() if queue.sampled(pk)}
    return sorted(chosen)


def queue_fill(*, queue: ReviewQueue) -> int:
    """Applies the queue's rule to the objects that exist now; returns how many entered. Filling
    again adds only what is new, and never an object twice."""
    with transaction.atomic():
        # Two fills of one queue take turns, so each counts only what it added itself.
        ReviewQueue.objects.select_for_update().filter(pk=queue.pk).first()
        return _insert(queue, _rule_targets(queue))


def _target_pk(queue: ReviewQueue, target_id: str):
    """The subject `target_id` names, in the queue's project: another project's is NotFoundError,
    as one that does not exist."""
    subjects = subjects_of_project(SUBJECT_MODELS[queue.kind], queue.project_id)
    if queue.kind == QueueKind.RUN_RESULT:
        found = subjects.filter(result_id=target_id) if _is_uuid(target_id) else None
    else:
        found = subjects.filter(pk=int(target_id)) if str(target_id).isdigit() else None
    pk = found.values_list("pk", flat=True).first() if found is not None else None
    if pk is None:
        raise NotFoundError(f"No {queue.kind.replace('_', ' ')} {target_id!r}")
    return pk


def _is_uuid(value) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def _kind_words(kind: str) -> str:
    """ "Run results" as "run results" in a sentence; "RAG evaluations" stays as it is."""
    if kind not in QueueKind.values:
        return repr(kind)
    label = QueueKind(kind).label
    return label if label[:2].isupper() else label[0].lower() + label[1:]


def queue_item_add(*, queue: ReviewQueue, target_id: str, kind: str | None = None) -> tuple[QueueItem, bool]:
    """Puts one object in the queue by hand; (the item, whether it is new). Adding an object that
    is already in the queue returns its item. `kind`, when the caller knows it, is the kind of
    object `target_id` names: agentic and RAG evaluations are both numbered from 1, so without it
    an agentic evaluation's id sent to a RAG queue would quietly add whichever RAG evaluation has
    that number."""
    if kind is not None and kind != queue.kind:
        raise InvalidInputError(f"The queue {queue.name!r} holds {_kind_words(queue.kind)}, not {_kind_words(kind)}")
    target = {"subject_kind": queue.subject_kind, "subject_id": _target_pk(queue, target_id)}
    try:
        # A savepoint: a racing add of the same object hits the unique constraint, and this one then
        # returns the item the other made.
        with transaction.atomic():
            return QueueItem.objects.create(queue=queue, origin=QueueItem.Origin.HAND, **target), True
    except IntegrityError:
        return queue.items.get(**target), False


MAX_ADD_AT_ONCE = 200


def queue_items_add(*, queue: ReviewQueue, target_ids: list[str], kind: str | None = None) -> tuple[int, int]:
    """Puts several objects in the queue by hand ("add selected" on a list): all of them or, when
    one names nothing, none. Returns (how many entered, how many were already in the queue)."""
    if not target_ids:
        raise InvalidInputError("Choose at least one thing to add")
    if len(target_ids) > MAX_ADD_AT_ONCE:
        raise InvalidInputError(f"Add at most {MAX_ADD_AT_ONCE} at once")
    entered = already = 0
    with transaction.atomic():
        for target_id in dict.fromkeys(target_ids):  # a repeated id counts once
            _, created = queue_item_add(queue=queue, target_id=target_id, kind=kind)
            entered += created
            already += not created
    return entered, already


def queue_item_assign(*, item: QueueItem, user) -> QueueItem:
    """Assigns the item to a reviewer (or to nobody, with None)."""
    item.assigned_to = user
    item.claimed_at = None
    item.save(update_fields=["assigned_to", "claimed_at"])
    return item


def queue_item_claim(*, item: QueueItem, user) -> QueueItem:
    """Takes an unassigned item, or confirms one assigned to `user`. One conditional UPDATE, so of
    two reviewers claiming together one wins and the other is told."""
    claimed = QueueItem.objects.filter(Q(assigned_to__isnull=True) | Q(assigned_to=user), pk=item.pk).update(
        assigned_to=user, claimed_at=timezone.now()
    )
    item.refresh_from_db()
    if not claimed:
        raise ConflictError(f"This item is assigned to {item.assigned_to.get_username()}")
    return item


def _review_run_result(item, reviewer, verdicts, note):
    for verdict in verdicts:
        if verdict.get("passed") is None:
            raise InvalidInputError(f"{verdict.get('key')!r}: give passed true or false")
        verdict_review_create(
            result=queue_item_subject(item=item),
            kind=verdict.get("kind") or "",
            key=verdict.get("key") or "",
            passed=verdict["passed"],
            note=note,
            reviewer=reviewer,
        )


def _review_agentic(item, reviewer, verdicts, note):
    evaluation = queue_item_subject(item=item)
    for verdict in verdicts:
        metric, score = verdict.get("key"), verdict.get("score")
        if metric not in AGENTIC_METRICS:
            raise InvalidInputError(f"metric must be one of {', '.join(AGENTIC_METRICS)}")
        if score is None or not 0 <= score <= 1:
            raise InvalidInputError(f"{metric}: give a score between 0 and 1")
        human_score_record(
            subject_kind=SubjectKind.AGENTIC_EVALUATION,
            subject_id=evaluation.pk,
            kind=ScoreKind.METRIC,
            key=metric,
            value=score,
            note=note,
            author=reviewer,
        )


def _review_rag(item, reviewer, verdicts, note):
    # The metrics a RAG evaluation has are those its judge scored (or could not): its Score rows.
    metrics = set(
        Score.objects.of(SubjectKind.RAG_EVALUATION, [item.subject_id])
        .machine()
        .filter(kind=ScoreKind.METRIC)
        .values_list("key", flat=True)
    )
    for verdict in verdicts:
        metric = verdict.get("key")
        if metric not in metrics:
            raise InvalidInputError(f"This evaluation has no metric {metric!r}")
        if verdict.get("passed") is None:
            raise InvalidInputError(f"{metric}: give passed true or false")
        human_score_record(
            subject_kind=SubjectKind.RAG_EVALUATION,
            subject_id=item.subject_id,
            kind=ScoreKind.METRIC,
            key=metric,
            passed=verdict["passed"],
            note=note,
            author=reviewer,
        )


REVIEWERS = {
    QueueKind.RUN_RESULT: _review_run_result,
    QueueKind.AGENTIC_EVALUATION: _review_agentic,
    QueueKind.RAG_EVALUATION: _review_rag,
}


def queue_item_review(*, item: QueueItem, reviewer, verdicts: list[dict], note: str = "") -> QueueItem:
    """Records the reviewer's verdicts on the item's target and marks the item done, all or nothing.
    `verdicts`: for run results {kind, key, passed}, agentic {key: metric, score}, RAG {key: metric, passed}."""
    if not verdicts:
        raise InvalidInputError("Review at least one verdict")
    if len(note) > MAX_REVIEW_NOTE:
        raise InvalidInputError(f"note is longer than {MAX_REVIEW_NOTE} characters")
    with transaction.atomic():
        # The same rule as claiming: an item assigned to someone else is theirs to review. Locked, so
        # an assignment made while this review is written cannot slip in between.
        assignee_id = QueueItem.objects.select_for_update().values_list("assigned_to_id", flat=True).get(pk=item.pk)
        if assignee_id is not None and assignee_id != reviewer.pk:
            item.refresh_from_db()
            raise ConflictError(f"This item is assigned to {item.assigned_to.get_username()}")
        item.assigned_to_id = assignee_id
        REVIEWERS[item.queue.kind](item, reviewer, verdicts, note.strip())
        item.done_at, item.reviewed_by = timezone.now(), reviewer
        if item.assigned_to_id is None:
            item.assigned_to = reviewer
        item.save(update_fields=["done_at", "reviewed_by", "assigned_to"])
    return item
