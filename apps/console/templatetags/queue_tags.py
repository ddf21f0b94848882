"""`{% add_to_queue "agentic_evaluation" e.pk %}`: the "add to queue" form for any list row."""

from django import template

from apps.queues.models import ReviewQueue

register = template.Library()


@register.inclusion_tag("console/_add_to_queue.html", takes_context=True)
def add_to_queue(context, kind: str, target_id):
    if not context.get("can_review"):
        return {"can_review": False}
    # One query per page and kind, however many rows carry the form.
    cache = context.render_context.setdefault("queues_by_kind", {})
    if kind not in cache:
        cache[kind] = list(ReviewQueue.objects.filter(kind=kind).only("pk", "name"))
    return {"can_review": True, "queues": cache[kind], "target_id": target_id, "request": context.get("request"),
            "csrf_token": context.get("csrf_token")}
