from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils.safestring import mark_safe

from apps.core.auth.permissions import scopes_of
from apps.core.charts import legend, metric_chart
from apps.core.http.pages import layout_context
from apps.core.models import SCOPE_EVALUATE
from apps.core.projects.resolution import project_of

from ..api.schemas import MAX_QUERY_LENGTH
from ..backends import backend_config, get_backend
from ..selectors import example_questions, metrics_query_answer


def scrape_snippet(request) -> str:
    """A Prometheus scrape job for evalsite's own /metrics at the address this page was opened on.
    The token is the EVALSITE_METRICS_TOKEN variable's value, read from a file on the Prometheus
    host: the page names it and never shows it."""
    lines = [
        "scrape_configs:",
        "  - job_name: evalsite",
        f"    scheme: {request.scheme}",
        "    metrics_path: /metrics",
        "    authorization:",
        "      type: Bearer",
        "      credentials_file: /etc/prometheus/evalsite-metrics-token  # the EVALSITE_METRICS_TOKEN value",
        "    static_configs:",
        f'      - targets: ["{request.get_host()}"]',
    ]
    return "\n".join(lines)


@login_required
def metrics_query_page(request):
    """The question box and its answer. A GET with ?q= so answers can be bookmarked and shared; the
    question stays in the box whatever the answer, including that no backend is configured."""
    question = (request.GET.get("q") or "").strip()[:MAX_QUERY_LENGTH]
    config = backend_config()
    # Answering spends a platform LLM call and backend queries: the `evaluate` scope, as the API
    # (POST /api/v1/metrics-query) asks. The question box stays readable to everyone signed in; the
    # examples (read from the backend) are for those who may ask.
    may_ask = SCOPE_EVALUATE in scopes_of(request)
    backend = get_backend() if config.configured and may_ask else None
    context = {
        **layout_context(request, title="Metrics query"),
        "question": question,
        "configured": config.configured,
        "config_problem": config.problem,
        "backend_kind": config.kind,
        "examples": example_questions(backend) if backend else [],
        "max_length": MAX_QUERY_LENGTH,
        "scrape_snippet": scrape_snippet(request),
        "metrics_token_set": bool(settings.EVALSITE_METRICS_TOKEN),
    }
    if question and not may_ask:
        context["denied_scope"] = SCOPE_EVALUATE
        return render(request, "nlquery/query.html", context, status=403)
    if question and config.configured:
        # In the project chosen with the console's switcher, as every console page.
        state = metrics_query_answer(question=question, project=project_of(request).slug)
        context["state"] = state
        result = state["result"]
        if result is not None:
            series = result.series()
            context["chart_svg"] = mark_safe(
                metric_chart(  # every text in it is escaped
                    series,
                    start=result.time_range.start_time,
                    end=result.time_range.end_time,
                    title=result.metric_name,
                    unit=result.unit,
                )
            )
            context["legend"] = legend([name for name, _ in series]) if len(series) > 1 else []
    return render(request, "nlquery/query.html", context)
