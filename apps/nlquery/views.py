from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils.safestring import mark_safe

from .api.schemas import MAX_QUERY_LENGTH
from .backends import backend_config, get_backend
from .chart import legend, render_svg
from .selectors import example_questions, metrics_query_answer


@login_required
def metrics_query_page(request):
    """The question box and its answer. A GET with ?q= so answers can be bookmarked and shared."""
    question = (request.GET.get("q") or "").strip()[:MAX_QUERY_LENGTH]
    config = backend_config()
    backend = get_backend()
    context = {
        "question": question,
        "configured": config.configured,
        "config_problem": config.problem,
        "backend_kind": config.kind,
        "examples": example_questions(backend) if backend else [],
        "max_length": MAX_QUERY_LENGTH,
        "has_permission": True,
        "title": "Metrics query",
    }
    if question and config.configured:
        state = metrics_query_answer(question=question)
        context["state"] = state
        result = state["result"]
        if result is not None:
            context["chart_svg"] = mark_safe(render_svg(result))  # every text in it is escaped
            context["legend"] = legend(result) if len({tuple(p.labels.items()) for p in result.datapoints}) > 1 else []
    return render(request, "nlquery/query.html", context)
