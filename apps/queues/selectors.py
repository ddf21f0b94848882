"""Reads of review queues, each a fixed number of queries whatever the queue's size: the list with
progress, a queue's reviewers, what is left, agreement between judge and humans, and the items."""

from collections import defaultdict

from django.db.models import Count, F, Q, TextField, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce

from apps.agentic.judges.base import AGENTIC_METRICS
from apps.core.errors import NotFoundError
from apps.scores.agreement import Agreement, agreement_table, cohen_kappa, judge_human_pairs
from apps.scores.vocabulary import SubjectKind

from .models import TARGET_FIELD, MetricReview, QueueItem, QueueKind, ReviewQueue
from .scoring import AGENTIC_PASS, RAG_PASS, metric_passed


def queue_list():
    return ReviewQueue.objects.with_progress().select_related("created_by")


def queue_get(*, queue_id) -> ReviewQueue:
    queue = queue_list().filter(pk=queue_id).first() if str(queue_id).isdigit() else None
    if queue is None:
        raise NotFoundError(f"No review queue {queue_id}")
    return queue


def queue_item_list(*, queue: ReviewQueue, state: str | None = None):
    # What names the target in a list, read in the same query: a run result's item name, an agentic
    # evaluation's session, a RAG evaluation's question (out of its payload, by the database).
    # A run result also says which run and which attempt it is: its item name alone does not tell
    # two runs of one test set, or the attempts of a run with repeats, apart.
    items = queue.items.select_related("assigned_to", "reviewed_by", "queue").annotate(
        result_uuid=F("result__result_id"), result_attempt=F("result__attempt"),
        run_uuid=F("result__run__run_id"), run_label=F("result__run__label"),
        run_created_at=F("result__run__created_at"), run_repeats=F("result__run__repeats"),
        target_label=Coalesce(F("result__item_name"), F("agent_evaluation__session_id"),
                              KeyTextTransform("question", "rag_evaluation__payload"), Value(""),
                              output_field=TextField()))
    if state == "left":
        items = items.filter(done_at__isnull=True)
    elif state == "done":
        items = items.filter(done_at__isnull=False)
    return items.order_by("id")


def queue_item_get(*, queue: ReviewQueue, item_id) -> QueueItem:
    related = {QueueKind.RUN_RESULT: ("result__run",), QueueKind.AGENTIC_EVALUATION: ("agent_evaluation__trace",),
               QueueKind.RAG_EVALUATION: ("rag_evaluation",)}[queue.kind]
    item = (queue.items.select_related("assigned_to", "reviewed_by", *related).filter(pk=item_id).first()
            if str(item_id).isdigit() else None)
    if item is None:
        raise NotFoundError(f"No item {item_id} in queue {queue.pk}")
    item.queue = queue
    return item


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
    assigned = dict(queue.items.filter(assigned_to__isnull=False).values_list("assigned_to__username")
                    .annotate(n=Count("id")).values_list("assigned_to__username", "n"))
    left = dict(queue.items.filter(assigned_to__isnull=False, done_at__isnull=True)
                .values_list("assigned_to__username").annotate(n=Count("id")).values_list("assigned_to__username", "n"))
    done = dict(queue.items.filter(reviewed_by__isnull=False).values_list("reviewed_by__username")
                .annotate(n=Count("id")).values_list("reviewed_by__username", "n"))
    names = sorted(set(assigned) | set(done))
    return [{"reviewer": name, "assigned": assigned.get(name, 0), "done": done.get(name, 0),
             "left": left.get(name, 0)} for name in names]


def queue_left(*, queue: ReviewQueue) -> dict:
    counts = queue.items.aggregate(
        total=Count("id"), done=Count("id", filter=Q(done_at__isnull=False)),
        unassigned=Count("id", filter=Q(done_at__isnull=True, assigned_to__isnull=True)),
        assigned=Count("id", filter=Q(done_at__isnull=True, assigned_to__isnull=False)))
    counts["left"] = counts["total"] - counts["done"]
    return counts


def _metric_agreement(reviews, target: str, threshold: float) -> list[Agreement]:
    """Per metric, the judge's pass/fail against the newest human review of each evaluation (for
    agentic metrics both scores are cut at `threshold`)."""
    latest = {}
    for review in reviews:
        latest[(getattr(review, f"{target}_id"), review.metric)] = review
    rows: dict[str, Agreement] = {}
    pairs: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for (_, metric), review in latest.items():
        row = rows.setdefault(metric, Agreement(kind="metric", key=metric, label=metric.replace("_", " ")))
        judge = metric_passed(review.judge_score, threshold)
        if review.judge_status != "ok" or judge is None:
            row.judge_unassessed += 1
            continue
        human = review.passed if review.passed is not None else metric_passed(review.score, threshold)
        row.reviewed += 1
        row.agreed += judge == human
        row.judge_pass_human_fail += judge and not human
        row.judge_fail_human_pass += human and not judge
        pairs[metric][0].append(judge)
        pairs[metric][1].append(human)
    for metric, row in rows.items():
        row.kappa = cohen_kappa(*pairs[metric])
    order = {metric: n for n, metric in enumerate(AGENTIC_METRICS)}
    return sorted(rows.values(), key=lambda r: (order.get(r.key, len(order)), r.key))


def queue_agreement(*, queue: ReviewQueue) -> list[Agreement]:
    """κ and counts between judge and humans over the queue's targets: per criterion and rule for
    run results, per metric for agentic and RAG evaluations. One query."""
    field = queue.target_field
    targets = queue.items.values(f"{field}_id")
    if queue.kind == QueueKind.RUN_RESULT:
        return agreement_table(judge_human_pairs(SubjectKind.RUN_RESULT, targets, kinds=("criterion", "rule")))
    reviews = MetricReview.objects.filter(**{f"{field}__in": targets}).order_by("created_at", "id")
    threshold = AGENTIC_PASS if queue.kind == QueueKind.AGENTIC_EVALUATION else RAG_PASS
    return _metric_agreement(reviews, field, threshold)


def metric_reviews_in_force(**target) -> dict:
    """The newest human review of each metric of one evaluation (`agent_evaluation=` or
    `rag_evaluation=`), by metric name: one query."""
    latest = {}
    for review in MetricReview.objects.filter(**target).select_related("reviewer").order_by("created_at", "id"):
        latest[review.metric] = review
    return latest


def target_queue_items(*, kind: str, target_pk) -> list[QueueItem]:
    """The queues one object is in, each with its item there (to open it for review): one query."""
    return list(QueueItem.objects.filter(**{f"{TARGET_FIELD[kind]}_id": target_pk}).select_related("queue", "reviewed_by")
                .order_by("queue__name"))
