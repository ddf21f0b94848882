"""vayu_agentic_* and evalsite_online_evaluations_total stay small whatever agent names and rule
names there are: the most frequent values keep their series, the rest are summed under `other`."""

import pytest
from django.db.models import Sum

from apps.agentic.metrics import SCORE_BUCKETS, SCORED
from apps.agentic.models import AgentEvaluation, OnlineEvaluationCount
from apps.agentic.selectors import with_metric_columns
from apps.agentic.services import evaluation_rollup_rebuild
from tests.agentic.factories import AgentEvaluationFactory, evaluations_bulk_create
from tests.prometheus_text import series

TAIL_AGENTS = 3_000
HEAVY_AGENTS = 10
HISTOGRAM_LINES = len(SCORE_BUCKETS) + 1 + 2  # the buckets, +Inf, _sum and _count
RATINGS = ("excellent", "good", "acceptable", "poor", "failed")


def _scrape(client) -> str:
    client.get("/metrics")
    response = client.get("/metrics")
    assert response.status_code == 200
    return response.content.decode()


def _evaluation(i: int, agent: str, score: float | None) -> AgentEvaluation:
    rating = None if score is None else next(r for r, low in zip(RATINGS, (0.9, 0.75, 0.6, 0.4, 0.0)) if score >= low)
    return AgentEvaluationFactory.build(
        trace=None,
        session_id=f"s{i}",
        source=AgentEvaluation.Source.MANUAL,
        agent_name=agent,
        operation=f"op-{i}",
        task_adherence=score,
        task_adherence_status="ok" if score is not None else "skipped",
        tool_call_accuracy=score,
        tool_call_accuracy_status="ok" if score is not None else "skipped",
        intent_resolution=None,
        intent_resolution_status="skipped",
        overall_score=score,
        rating=rating,
        judge="heuristic:v1",
        fingerprint=f"{i:064d}",
    )


@pytest.mark.django_db
def test_three_thousand_agent_names_keep_agentic_metrics_small_and_totals_exact(client, settings):
    settings.EVALSITE_METRICS_MAX_LABEL_VALUES = n = 50
    baseline = len(_scrape(client).splitlines())
    rows = [_evaluation(i, f"tail-agent-{i:04d}", None if i % 11 == 0 else (i % 100) / 100) for i in range(TAIL_AGENTS)]
    rows += [_evaluation(TAIL_AGENTS + i, f"Heavy{i % HEAVY_AGENTS}", 0.95) for i in range(HEAVY_AGENTS * 4)]
    evaluations_bulk_create(rows)
    evaluation_rollup_rebuild()
    OnlineEvaluationCount.objects.bulk_create(
        [
            OnlineEvaluationCount(rule_name=f"rule-{i:04d}", outcome=outcome, count=1 + i % 3)
            for i in range(TAIL_AGENTS)
            for outcome in ("evaluated", "skipped")
        ],
        batch_size=1_000,
    )
    text = _scrape(client)

    # Per family: (N kept + other) agents × (5 ratings + unrated); a histogram per scored metric;
    # (N kept + other) rules × 2 outcomes.
    bound = (n + 1) * 6 + len(SCORED) * (n + 1) * HISTOGRAM_LINES + (n + 1) * 2
    lines = len(text.splitlines())
    assert lines <= baseline + bound, (lines, baseline, bound)

    evaluations = series(text, "vayu_agentic_evaluations_total")
    agents = {labels["agent_name"] for labels, _ in evaluations}
    assert len(agents) <= n + 1 and "other" in agents
    assert sum(v for _, v in evaluations) == AgentEvaluation.objects.count()
    assert sum(v for labels, v in evaluations if labels["agent_name"] == "Heavy3") == 4
    assert (
        sum(v for labels, v in evaluations if labels["score_category"] == "unrated")
        == AgentEvaluation.objects.filter(rating__isnull=True).count()
    )

    for metric in SCORED:
        column = "overall_score" if metric == "overall" else metric
        # The metrics as the flat columns they were, from their Score rows.
        scored = with_metric_columns(AgentEvaluation.objects.all()).filter(**{f"{column}__isnull": False})
        name = f"vayu_agentic_{metric}_score"
        counts = series(text, f"{name}_count")
        assert sum(v for _, v in counts) == scored.count()
        if scored.exists():
            assert {labels["agent_name"] for labels, _ in counts} <= agents
            assert sum(v for _, v in series(text, f"{name}_sum")) == pytest.approx(scored.aggregate(s=Sum(column))["s"])
            buckets = series(text, f"{name}_bucket")
            for bound_score in SCORE_BUCKETS:
                assert (
                    sum(v for labels, v in buckets if labels["le"] == str(bound_score))
                    == scored.filter(**{f"{column}__lte": bound_score}).count()
                )
    overall = {labels["agent_name"]: v for labels, v in series(text, "vayu_agentic_overall_score_count")}
    assert overall["Heavy0"] == 4

    online = series(text, "evalsite_online_evaluations_total")
    rules = {labels["rule"] for labels, _ in online}
    assert len(rules) <= n + 1 and "other" in rules
    for outcome in ("evaluated", "skipped"):
        assert (
            sum(v for labels, v in online if labels["outcome"] == outcome)
            == OnlineEvaluationCount.objects.filter(outcome=outcome).aggregate(s=Sum("count"))["s"]
        )
    # The busiest rules (count 3 per outcome: i % 3 == 2) are the ones kept, exact.
    kept = {labels["rule"]: v for labels, v in online if labels["rule"] != "other"}
    assert kept and all(v == 3 for v in kept.values())
