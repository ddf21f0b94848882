from apps.scores.vocabulary import SubjectKind

from ..models import QueueItem, ReviewQueue, per_cent
from ..selectors import queue_item_subject


def _name(user) -> str | None:
    return user.get_username() if user is not None else None


def queue_data(queue: ReviewQueue) -> dict:
    total, done = getattr(queue, "total", None), getattr(queue, "done", None)
    if total is None:
        total, done = queue.items.count(), queue.items.filter(done_at__isnull=False).count()
    return {
        **{
            f: getattr(queue, f)
            for f in (
                "id",
                "name",
                "kind",
                "description",
                "include_unassessed",
                "score_below",
                "disagreement_prone",
                "created_at",
            )
        },
        "sample_percent": per_cent(queue.sample_rate),
        "created_by": _name(queue.created_by),
        "total": total,
        "done": done,
        "left": total - done,
    }


def item_data(item: QueueItem) -> dict:
    # Lists annotate the result's public id (queue_item_list); a single item reads it from its subject.
    target = getattr(item, "result_uuid", None)
    if target is None:
        target = (
            item.subject_id if item.subject_kind != SubjectKind.RUN_RESULT else queue_item_subject(item=item).result_id
        )
    return {
        "id": item.pk,
        "queue_id": item.queue_id,
        "kind": item.queue.kind,
        "target_id": str(target),
        "origin": item.origin,
        "assigned_to": _name(item.assigned_to),
        "claimed_at": item.claimed_at,
        "done_at": item.done_at,
        "reviewed_by": _name(item.reviewed_by),
        "created_at": item.created_at,
        **_run_of(item),
    }


def _run_of(item: QueueItem) -> dict:
    """A run result's run and attempt: annotated on lists (queue_item_list), else read from the result."""
    if item.subject_kind != SubjectKind.RUN_RESULT:
        return {}
    if hasattr(item, "run_uuid"):
        return {
            "run_id": item.run_uuid,
            "run_label": item.run_label,
            "attempt": item.result_attempt,
            "repeats": item.run_repeats,
        }
    result = queue_item_subject(item=item)
    return {
        "run_id": result.run.run_id,
        "run_label": result.run.label,
        "attempt": result.attempt,
        "repeats": result.run.repeats,
    }
