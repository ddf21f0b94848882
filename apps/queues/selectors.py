"""Reads of review queues, each a fixed number of queries whatever the queue's size: the list with
progress, a queue's reviewers, what is left, agreement between judge and humans, and the items."""

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db.models import (
    Count,
    DateTimeField,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Q,
    Subquery,
    TextField,
    UUIDField,
)
from django.db.models.fields.json import KeyTextTransform

from apps.agentic.models import AgentEvaluation
from apps.core.errors import NotFoundError
from apps.core.models import DEFAULT_PROJECT_SLUG, Membership, ProjectRole
from apps.rag.models import TraceEvaluation
from apps.runs.models import EvaluationResult
from apps.scores.agreement import Agreement, agreement_table, judge_human_pairs
from apps.scores.models import Score
from apps.scores.selectors import human_in_force
from apps.scores.vocabulary import ScoreKind

from .filters import QueueItemFilter
from .models import QueueItem, QueueKind, ReviewQueue
from .scoring import AGENTIC_PASS, RAG_PASS


def queue_reviewer_names(*, project) -> list[str]:
    """The usernames of the people who may review in `project` (reviewer role or higher; in `default`
    also staff who belong to no project, who review there as before projects), by name. One query."""
    user_model = get_user_model()
    members = Membership.objects.filter(
        project=project, role__in=[role for role in ProjectRole if role.at_least(ProjectRole.REVIEWER)]
    )
    people = Q(Exists(members.filter(user=OuterRef("pk"))))
    if project.slug == DEFAULT_PROJECT_SLUG:
        people |= Q(is_staff=True) & ~Q(Exists(Membership.objects.filter(user=OuterRef("pk"))))
    return list(
        user_model.objects.filter(people, is_active=True).order_by("username").values_list("username", flat=True)
    )


def queue_list(*, project):
    return ReviewQueue.objects.filter(project=project).with_progress().select_related("created_by")


def queue_get(*, queue_id, project) -> ReviewQueue:
    """The queue of `project`; another project's is NotFoundError, as one that does not exist."""
    queue = queue_list(project=project).filter(pk=queue_id).first() if str(queue_id).isdigit() else None
    if queue is None:
        raise NotFoundError(f"No review queue {queue_id}")
    return queue


def subject_project_path(model) -> str | None:
    """The lookup from a subject (a run result, an agentic or RAG evaluation) to its project: its
    own `project`, or its run's or trace's. None while the subject's app has no project yet (then a
    queue cannot tell its project's subjects from others')."""
    fields = {f.name: f for f in model._meta.get_fields() if f.concrete}
    if "project" in fields:
        return "project"
    for parent in ("run", "trace"):
        field = fields.get(parent)
        if field is not None and field.is_relation and subject_project_path(field.related_model) == "project":
            return f"{parent}__project"
    return None


def subjects_of_project(model, project):
    """The rows of a subject `model` that belong to `project` (every row while its app has none)."""
    path = subject_project_path(model)
    return model.objects.filter(**{path: project}) if path else model.objects.all()


def _subjects(kind: str):
    """The subjects a queue of `kind` holds, with what their review page reads beside them."""
    if kind == QueueKind.RUN_RESULT:
        return EvaluationResult.objects.select_related("run")
    if kind == QueueKind.AGENTIC_EVALUATION:
        return AgentEvaluation.objects.select_related("trace")
    return TraceEvaluation.objects.all()


def _labelled(items, kind: str):
    """What names the subject in a list, read in the same query (a correlated subquery per column,
    over the page's rows only): a run result's item name, an agentic evaluation's session, a RAG
    evaluation's question (out of its payload, by the database). A run result also says which run
    and which attempt it is: its item name alone does not tell two runs of one test set, or the
    attempts of a run with repeats, apart."""
    subject = _subjects(kind).filter(pk=OuterRef("subject_id"))

    def column(expression, field):
        return Subquery(subject.annotate(column=expression).values("column")[:1], output_field=field)

    if kind == QueueKind.RUN_RESULT:
        return items.annotate(
            result_uuid=column(F("result_id"), UUIDField()),
            result_attempt=column(F("attempt"), IntegerField()),
            run_uuid=column(F("run__run_id"), UUIDField()),
            run_label=column(F("run__label"), TextField()),
            run_created_at=column(F("run__created_at"), DateTimeField()),
            run_repeats=column(F("run__repeats"), IntegerField()),
            target_label=column(F("item_name"), TextField()),
        )
    if kind == QueueKind.AGENTIC_EVALUATION:
        return items.annotate(target_label=column(F("session_id"), TextField()))
    return items.annotate(target_label=column(KeyTextTransform("question", "payload"), TextField()))


def queue_item_list(*, queue: ReviewQueue, filters: dict | None = None):
    """The queue's items in order, with their subjects' labels, chosen by QueueItemFilter (state)."""
    items = _labelled(queue.items.select_related("assigned_to", "reviewed_by", "queue"), queue.kind)
    return QueueItemFilter(filters or {}, items.order_by("id")).qs


def queue_item_get(*, queue: ReviewQueue, item_id) -> QueueItem:
    """One item with its subject (`item.subject`), or NotFoundError: also when the subject is gone."""
    item = (
        queue.items.select_related("assigned_to", "reviewed_by").filter(pk=item_id).first()
        if str(item_id).isdigit()
        else None
    )
    subject = _subjects(queue.kind).filter(pk=item.subject_id).first() if item is not None else None
    if subject is None:
        raise NotFoundError(f"No item {item_id} in queue {queue.pk}")
    item.queue, item.subject = queue, subject
    return item


def queue_item_subject(*, item: QueueItem):
    """The item's subject: read by queue_item_get already when the item came from there."""
    if getattr(item, "subject", None) is None:
        item.subject = _subjects(item.subject_kind).get(pk=item.subject_id)
    return item.subject


def queue_item_neighbours(*, item: QueueItem) -> tuple[int | None, int | None]:
    """(previous, next) item ids in queue order."""
    items = QueueItem.objects.filter(queue_id=item.queue_id)
    previous = items.filter(pk__lt=item.pk).order_by("-pk").values_list("pk", flat=True).first()
    following = items.filter(pk__gt=item.pk).order_by("pk").values_list("pk", flat=True).first()
    return previous, following


def queue_item_next(*, queue: ReviewQueue, user, after: int | None = None) -> int | None:
    """The next item `user` should review: not done, assigned to them or to nobody; after `after`
    when given, wrapping round to the start."""
    left = queue.items.filter(Q(assigned_to__isnull=True) | Q(assigned_to=user), done_at__isnull=True).order_by("pk")
    if after is not None:
        found = left.filter(pk__gt=after).values_list("pk", flat=True).first()
        if found is not None:
            return found
    return left.values_list("pk", flat=True).first()


def queue_reviewer_progress(*, queue: ReviewQueue) -> list[dict]:
    """Per reviewer: items assigned to them, done by them, and left of theirs."""
    assigned = dict(
        queue.items.filter(assigned_to__isnull=False)
        .values_list("assigned_to__username")
        .annotate(n=Count("id"))
        .values_list("assigned_to__username", "n")
    )
    left = dict(
        queue.items.filter(assigned_to__isnull=False, done_at__isnull=True)
        .values_list("assigned_to__username")
        .annotate(n=Count("id"))
        .values_list("assigned_to__username", "n")
    )
    done = dict(
        queue.items.filter(reviewed_by__isnull=False)
        .values_list("reviewed_by__username")
        .annotate(n=Count("id"))
        .values_list("reviewed_by__username", "n")
    )
    names = sorted(set(assigned) | set(done))
    return [
        {"reviewer": name, "assigned": assigned.get(name, 0), "done": done.get(name, 0), "left": left.get(name, 0)}
        for name in names
    ]


def queue_left(*, queue: ReviewQueue) -> dict:
    counts = queue.items.aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(done_at__isnull=False)),
        unassigned=Count("id", filter=Q(done_at__isnull=True, assigned_to__isnull=True)),
        assigned=Count("id", filter=Q(done_at__isnull=True, assigned_to__isnull=False)),
    )
    counts["left"] = counts["total"] - counts["done"]
    return counts


# Where a score counts as a pass for agreement, per kind of queue; run verdicts pass or fail as given.
PASS_THRESHOLD = {QueueKind.AGENTIC_EVALUATION: AGENTIC_PASS, QueueKind.RAG_EVALUATION: RAG_PASS}
# What a person reviews of each kind of subject.
REVIEWED_KINDS = {
    QueueKind.RUN_RESULT: (ScoreKind.CRITERION, ScoreKind.RULE),
    QueueKind.AGENTIC_EVALUATION: (ScoreKind.METRIC,),
    QueueKind.RAG_EVALUATION: (ScoreKind.METRIC,),
}


def queue_agreement(*, queue: ReviewQueue) -> list[Agreement]:
    """κ and counts between judge and humans over the queue's subjects: per criterion and rule for
    run results, per metric for agentic and RAG evaluations. The one agreement path of
    apps.scores.agreement: each human score in force against the machine score of the same
    subject, kind and key (the judge's verdict is never copied into a review). One query."""
    pairs = judge_human_pairs(queue.subject_kind, queue.items.values("subject_id"), kinds=REVIEWED_KINDS[queue.kind])
    rows = agreement_table(pairs, threshold=PASS_THRESHOLD.get(queue.kind))
    for row in rows:
        if row.kind == ScoreKind.METRIC:
            row.label = row.key.replace("_", " ")
    return rows


@dataclass(frozen=True)
class MetricReviewShown:
    """A person's score in force on one metric, in the words the pages use."""

    metric: str
    score: float | None  # agentic metrics, 0..1
    passed: bool | None  # RAG metrics
    note: str
    reviewer: object  # the user, None if the account is gone
    created_at: datetime


def metric_reviews_in_force(*, subject_kind: str, subject_id: int) -> dict[str, MetricReviewShown]:
    """The human score in force on each metric of one evaluation, by metric name: one query."""
    rows = human_in_force(subject_kind, [subject_id]).filter(kind=ScoreKind.METRIC).select_related("author")
    return {
        row.key: MetricReviewShown(
            metric=row.key,
            score=row.value,
            passed=row.passed,
            note=row.reasoning,
            reviewer=row.author,
            created_at=row.created_at,
        )
        for row in rows
    }


def judge_scores(*, subject_kind: str, subject_id: int, kinds=(ScoreKind.METRIC,)) -> dict[tuple[str, str], Score]:
    """What the judge said on one subject, per (kind, key), in the order it was asked: the newest
    machine score of each key (a re-judged subject keeps its older rows as history). One query."""
    newest: dict[tuple[str, str], Score] = {}
    rows = Score.objects.of(subject_kind, [subject_id]).machine().filter(kind__in=kinds).order_by("created_at", "id")
    for row in rows:
        newest[(row.kind, row.key)] = row
    return dict(sorted(newest.items(), key=lambda pair: (pair[1].kind, pair[1].position, pair[1].id)))


def target_queue_items(*, kind: str, target_pk, project) -> list[QueueItem]:
    """The queues of `project` one subject is in, each with its item there (to open it for review):
    one query."""
    return list(
        QueueItem.objects.filter(queue__project=project, subject_kind=kind, subject_id=target_pk)
        .select_related("queue", "reviewed_by")
        .order_by("queue__name")
    )
