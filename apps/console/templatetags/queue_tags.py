"""`{% add_to_queue "agentic_evaluation" e.pk %}`: the "add to queue" form for any list row."""

from django import template

from apps.console.access import REVIEW, may
from apps.core.projects.resolution import project_of
from apps.queues.models import ReviewQueue, per_cent

register = template.Library()


def _queues_of_kind(request, kind: str) -> list:
    """The queues of one kind in the session's project, read once per request: the run page's live
    endpoint renders each of its rows as a template of its own, so a cache in one render's context
    would read them per row."""
    cache = request.__dict__.setdefault("_review_queues_by_kind", {})
    if kind not in cache:
        queues = ReviewQueue.objects.filter(project=project_of(request), kind=kind)
        cache[kind] = list(queues.only("pk", "name"))
    return cache[kind]


@register.inclusion_tag("console/_add_to_queue.html", takes_context=True)
def add_to_queue(
    context, kind: str, target_id, label: str = "", next: str = "", compact: bool = False, menu: bool = False
):
    """`label` names the row for screen readers (several forms on a page); `next` is where to come
    back to, when that is not the page being rendered (a row rendered for the live endpoint);
    `compact` for a table cell under a column that says what the button does; `menu` folds the form
    into a small drop-down (a wide table that must not scroll sideways)."""
    request = context.get("request")
    # Decided by the person's role in the session's project, not by a flag of the page's context: a row rendered alone
    # (the live endpoint) has no page context, and the view refuses the same users anyway.
    if request is None or not may(request, REVIEW):
        return {"can_review": False}
    return {
        "can_review": True,
        "queues": _queues_of_kind(request, kind),
        "kind": kind,
        "target_id": target_id,
        "label": label,
        "next": next or request.get_full_path(),
        "compact": compact,
        "menu": menu,
        "csrf_token": context.get("csrf_token"),
    }


@register.simple_tag(takes_context=True)
def review_queues(context, kind: str) -> list:
    """`{% review_queues "rag_evaluation" as queues %}`: the queues of a kind the user may add to
    (none for readers); what an "add selected" form and its checkboxes need."""
    request = context.get("request")
    if request is None or not may(request, REVIEW):
        return []
    return _queues_of_kind(request, kind)


@register.filter
def sample_per_cent(queue) -> float:
    """A queue's sample rate (0..1) as the per cent its rule is shown in."""
    return per_cent(queue.sample_rate)
