"""Writes of review queues: create and edit queues, fill them by their rule or by hand, assign and
claim items, and record the review that finishes an item. The API and the console call these."""

import uuid

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.agentic.judges.base import AGENTIC_METRICS
from apps.agentic.models import AgentEvaluation, MetricStatus
from apps.core.errors import ConflictError, InvalidInputError, NotFoundError
from apps.rag.models import TraceEvaluation, TraceEvaluationTest
from apps.runs.judging.types import CRITERION, RULE, Verdict
from apps.runs.models import EvaluationResult
from apps.runs.services import MAX_REVIEW_NOTE, verdict_review_create
from apps.scores.agreement import judge_human_pairs
from apps.scores.vocabulary import JudgeStatus, SubjectKind

from .models import MetricReview, QueueItem, QueueKind, ReviewQueue
from .scoring import AGENTIC_PASS, RAG_PASS, metric_passed

RULE_FIELDS = ("name", "description", "kind", "include_unassessed", "score_below", "disagreement_prone",
               "sample_percent")
INSERT_BATCH = 1000


def _check_rule(*, kind: str, score_below: float | None, sample_percent: float) -> None:
    if kind not in QueueKind.values:
        raise InvalidInputError(f"kind must be one of {', '.join(QueueKind.values)}")
    if score_below is not None and not 0 <= score_below <= 1:
        raise InvalidInputError("score_below must be between 0 and 1")
    if not 0 <= sample_percent <= 100:
        raise InvalidInputError("sample_percent must be between 0 and 100")


def queue_create(*, name: str, kind: str, description: str = "", include_unassessed: bool = False,
                 score_below: float | None = None, disagreement_prone: bool = False, sample_percent: float = 0.0,
                 created_by=None) -> ReviewQueue:
    _check_rule(kind=kind, score_below=score_below, sample_percent=sample_percent)
    try:
        with transaction.atomic():
            return ReviewQueue.objects.create(
                name=name.strip(), kind=kind, description=description, include_unassessed=include_unassessed,
                score_below=score_below, disagreement_prone=disagreement_prone, sample_percent=sample_percent,
                created_by=created_by)
    except IntegrityError as exc:
        raise ConflictError(f"A queue named {name!r} already exists") from exc


def queue_update(*, queue: ReviewQueue, name: str, kind: str, description: str = "", include_unassessed: bool = False,
                 score_below: float | None = None, disagreement_prone: bool = False,
                 sample_percent: float = 0.0) -> ReviewQueue:
    _check_rule(kind=kind, score_below=score_below, sample_percent=sample_percent)
    # Items hold targets of the queue's kind; another kind would leave them unreviewable.
    if kind != queue.kind and queue.items.exists():
        raise ConflictError("This queue has items; its kind can no longer change")
    queue.name, queue.kind, queue.description = name.strip(), kind, description
    queue.include_unassessed, queue.score_below = include_unassessed, score_below
    queue.disagreement_prone, queue.sample_percent = disagreement_prone, sample_percent
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
    field = f"{queue.target_field}_id"
    before = queue.items.count()
    batch = []
    for pk in target_pks:
        batch.append(QueueItem(queue=queue, origin=QueueItem.Origin.RULE, **{field: pk}))
        if len(batch) >= INSERT_BATCH:
            QueueItem.objects.bulk_create(batch, ignore_conflicts=True)
            batch = []
    if batch:
        QueueItem.objects.bulk_create(batch, ignore_conflicts=True)
    return queue.items.count() - before


def _disagreeing_verdicts() -> set[tuple[str, str]]:
    """(kind, key) of criteria and rules on which a reviewer once disagreed with the judge."""
    rows = judge_human_pairs(SubjectKind.RUN_RESULT, kinds=("criterion", "rule"))
    return {(kind, key) for kind, key, human, _, status, judge, _ in rows
            if status == JudgeStatus.OK and judge is not None and judge != human}


def _disagreeing_metrics(target: str, threshold: float) -> set[str]:
    rows = MetricReview.objects.filter(**{f"{target}__isnull": False}, judge_status="ok")
    disagreeing = set()
    for review in rows.only("metric", "score", "passed", "judge_score"):
        human = review.passed if review.passed is not None else metric_passed(review.score, threshold)
        if metric_passed(review.judge_score, threshold) != human:
            disagreeing.add(review.metric)
    return disagreeing


def _result_targets(queue: ReviewQueue) -> list:
    disagreeing = _disagreeing_verdicts() if queue.disagreement_prone else set()
    done = EvaluationResult.objects.filter(state=EvaluationResult.State.DONE).exclude(
        pk__in=queue.items.values("result_id"))
    chosen = []
    for result in done.only("pk", "error").with_verdicts():
        pk, error = result.pk, result.error
        verdicts = [Verdict.from_score(row) for row in result.verdict_rows if row.kind in (CRITERION, RULE)]
        assessed = [v for v in verdicts if v.status == "ok"]
        if ((queue.include_unassessed and (error or len(assessed) < len(verdicts)))
                or (queue.score_below is not None and assessed
                    and sum(bool(v.passed) for v in assessed) / len(assessed) < queue.score_below)
                or (disagreeing and any((v.kind, v.key) in disagreeing for v in verdicts))
                or queue.sampled(pk)):
            chosen.append(pk)
    return chosen


def _agentic_targets(queue: ReviewQueue) -> list:
    matches = Q(pk__in=[])
    if queue.include_unassessed:
        for metric in AGENTIC_METRICS:
            matches |= ~Q(**{f"{metric}_status": MetricStatus.OK})
    if queue.score_below is not None:
        matches |= Q(overall_score__lt=queue.score_below)
    if queue.disagreement_prone:
        for metric in _disagreeing_metrics("agent_evaluation", AGENTIC_PASS):
            matches |= Q(**{f"{metric}_status": MetricStatus.OK})
    candidates = AgentEvaluation.objects.exclude(pk__in=queue.items.values("agent_evaluation_id"))
    chosen = set(candidates.filter(matches).values_list("pk", flat=True))
    if queue.sample_percent > 0:
        chosen |= {pk for pk in candidates.values_list("pk", flat=True).iterator() if queue.sampled(pk)}
    return sorted(chosen)


def _rag_targets(queue: ReviewQueue) -> list:
    Status = TraceEvaluationTest.Status
    matches = Q(pk__in=[])
    if queue.include_unassessed:
        matches |= Q(status__in=[Status.ERROR, Status.SKIPPED])
    if queue.score_below is not None:
        matches |= Q(status=Status.SCORED, score__lt=queue.score_below)
    if queue.disagreement_prone:
        matches |= Q(status=Status.SCORED, name__in=_disagreeing_metrics("rag_evaluation", RAG_PASS))
    candidates = TraceEvaluation.objects.exclude(pk__in=queue.items.values("rag_evaluation_id"))
    chosen = set(TraceEvaluationTest.objects.filter(matches, evaluation__in=candidates)
                 .values_list("evaluation_id", flat=True))
    if queue.sample_percent > 0:
        chosen |= {pk for pk in candidates.values_list("pk", flat=True).iterator() if queue.sampled(pk)}
    return sorted(chosen)


TARGETS = {QueueKind.RUN_RESULT: _result_targets, QueueKind.AGENTIC_EVALUATION: _agentic_targets,
           QueueKind.RAG_EVALUATION: _rag_targets}


def queue_fill(*, queue: ReviewQueue) -> int:
    """Applies the queue's rule to the objects that exist now; returns how many entered. Filling
    again adds only what is new, and never an object twice."""
    with transaction.atomic():
        # Two fills of one queue take turns, so each counts only what it added itself.
        ReviewQueue.objects.select_for_update().filter(pk=queue.pk).first()
        return _insert(queue, TARGETS[queue.kind](queue))


def _target_pk(queue: ReviewQueue, target_id: str):
    if queue.kind == QueueKind.RUN_RESULT:
        found = EvaluationResult.objects.filter(result_id=target_id) if _is_uuid(target_id) else None
    else:
        model = AgentEvaluation if queue.kind == QueueKind.AGENTIC_EVALUATION else TraceEvaluation
        found = model.objects.filter(pk=int(target_id)) if str(target_id).isdigit() else None
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
    """"Run results" as "run results" in a sentence; "RAG evaluations" stays as it is."""
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
    target = {f"{queue.target_field}_id": _target_pk(queue, target_id)}
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
        assigned_to=user, claimed_at=timezone.now())
    item.refresh_from_db()
    if not claimed:
        raise ConflictError(f"This item is assigned to {item.assigned_to.get_username()}")
    return item


def _review_run_result(item, reviewer, verdicts, note):
    for verdict in verdicts:
        if verdict.get("passed") is None:
            raise InvalidInputError(f"{verdict.get('key')!r}: give passed true or false")
        verdict_review_create(result=item.result, kind=verdict.get("kind") or "", key=verdict.get("key") or "",
                              passed=verdict["passed"], note=note, reviewer=reviewer)


def _review_agentic(item, reviewer, verdicts, note):
    evaluation = item.agent_evaluation
    for verdict in verdicts:
        metric, score = verdict.get("key"), verdict.get("score")
        if metric not in AGENTIC_METRICS:
            raise InvalidInputError(f"metric must be one of {', '.join(AGENTIC_METRICS)}")
        if score is None or not 0 <= score <= 1:
            raise InvalidInputError(f"{metric}: give a score between 0 and 1")
        MetricReview.objects.create(
            agent_evaluation=evaluation, metric=metric, score=score, note=note, reviewer=reviewer,
            judge_score=getattr(evaluation, metric), judge_status=getattr(evaluation, f"{metric}_status"))


def _review_rag(item, reviewer, verdicts, note):
    rows = {row.name: row for row in item.rag_evaluation.test_rows.all()}
    for verdict in verdicts:
        row = rows.get(verdict.get("key"))
        if row is None:
            raise InvalidInputError(f"This evaluation has no metric {verdict.get('key')!r}")
        if verdict.get("passed") is None:
            raise InvalidInputError(f"{row.name}: give passed true or false")
        MetricReview.objects.create(
            rag_evaluation=item.rag_evaluation, metric=row.name, passed=verdict["passed"], note=note,
            reviewer=reviewer, judge_score=row.score,
            judge_status="ok" if row.status == TraceEvaluationTest.Status.SCORED else row.status)


REVIEWERS = {QueueKind.RUN_RESULT: _review_run_result, QueueKind.AGENTIC_EVALUATION: _review_agentic,
             QueueKind.RAG_EVALUATION: _review_rag}


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
