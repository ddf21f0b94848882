from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from apps.core.charts import column_chart, line_chart
from apps.core.projects.resolution import project_of

from .. import selectors
from ..context import console_context


@login_required
@require_GET
def dashboard(request):
    project = project_of(request)
    runs = selectors.run_recent_list(project=project)
    bots = selectors.bot_recent_runs_list(runs=runs)
    agentic = selectors.agentic_score_trend(project=project)
    distribution = selectors.agentic_score_distribution(project=project)
    # Charts are built by apps.core.charts, which escapes every text it draws.
    run_trend = mark_safe(line_chart(selectors.run_pass_rate_trend(runs=runs), title="Run pass rate per test set"))
    return render(
        request,
        "console/dashboard.html",
        console_context(
            request,
            title="Dashboard",
            **{
                "bots": bots,
                "run_trend_chart": run_trend,
                "agentic_chart": mark_safe(line_chart(agentic, title="Agentic overall score per agent")),
                "distribution_chart": mark_safe(column_chart(distribution, title="Agentic evaluations per rating")),
                "distribution_total": sum(n for _, n in distribution),
                "failed_results": selectors.result_failed_list(project=project),
                "unassessed_results": selectors.result_unassessed_list(project=project),
                "outcome_totals": selectors.result_outcome_totals(project=project),
                "poor_evaluations": selectors.evaluation_poor_list(project=project),
                "run_counts": selectors.run_counts(project=project),
                "spend_days": selectors.spend_per_day(project=project),
            },
        ),
    )
