"""/metrics stays small whatever agent names and operations are ingested: each label taken from
ingested data keeps its N most frequent values and counts the rest under `other`, with every total
across the series unchanged."""

from datetime import timedelta

import pytest
from django.db.models import Sum
from django.utils import timezone

from apps.core.metrics.labels import PAIRS_PER_KEPT_VALUE
from apps.traces.metrics import DURATION_BUCKETS
from apps.traces.models import AgentTrace
from tests.prometheus_text import series

TAIL_AGENTS = 3_000
HEAVY_AGENTS = 10
HEAVY_TRACES = 5
HISTOGRAM_LINES = len(DURATION_BUCKETS) + 1 + 2  # the buckets, +Inf, _sum and _count


def _scrape(client) -> str:
    client.get("/metrics")  # the first scrape adds django-prometheus' own series for this view
    response = client.get("/metrics")
    assert response.status_code == 200
    return response.content.decode()


def _bulk_traces():
    """3,000 agents seen once each, every one with its own operation, and 10 agents seen 5 times."""
    now = timezone.now()
    rows = []
    for i in range(TAIL_AGENTS):
        active = i % 7 == 0
        seconds = (i % 700) / 10
        rows.append(
            AgentTrace(
                session_id=f"tail-{i}",
                agent_name=f"tail-agent-{i:04d}",
                user_query="q",
                operation=f"op-{i:04d}",
                status=AgentTrace.Status.ACTIVE if active else AgentTrace.Status.COMPLETED,
                success=None if active else True,
                start_time=now,
                end_time=None if active else now + timedelta(seconds=seconds),
                duration_seconds=None if active else seconds,
            )
        )
    for a in range(HEAVY_AGENTS):
        for t in range(HEAVY_TRACES):
            failed = t == 0
            rows.append(
                AgentTrace(
                    session_id=f"heavy-{a}-{t}",
                    agent_name=f"Heavy{a}",
                    user_query="q",
                    operation="list" if t % 2 else "get",
                    status=AgentTrace.Status.FAILED if failed else AgentTrace.Status.COMPLETED,
                    success=not failed,
                    start_time=now,
                    end_time=now + timedelta(seconds=t + 0.5),
                    duration_seconds=t + 0.5,
                )
            )
    AgentTrace.objects.bulk_create(rows, batch_size=1_000)


def _values(samples, label) -> set[str]:
    return {labels[label] for labels, _ in samples}


@pytest.mark.django_db
def test_three_thousand_agent_names_keep_metrics_small_and_totals_exact(client, settings):
    settings.EVALSITE_METRICS_MAX_LABEL_VALUES = n = 50
    baseline = len(_scrape(client).splitlines())
    _bulk_traces()
    text = _scrape(client)

    # Sessions: (N kept + other) agents × 3 statuses; active: N + other; duration: at most 4N kept
    # (agent, operation) pairs, plus each kept agent's remaining operations and one (other, other).
    bound = 3 * (n + 1) + (n + 1) + (PAIRS_PER_KEPT_VALUE * n + n + 1) * HISTOGRAM_LINES
    lines = len(text.splitlines())
    assert lines <= baseline + bound, (lines, baseline, bound)

    sessions = series(text, "vayu_agent_sessions_total")
    active = series(text, "vayu_agent_active_sessions")
    counts = series(text, "vayu_agent_execution_duration_seconds_count")
    assert len(_values(sessions, "agent_name")) <= n + 1 and "other" in _values(sessions, "agent_name")
    assert len(_values(active, "agent_name")) <= n + 1 and "other" in _values(active, "agent_name")
    assert len(_values(counts, "agent_name")) <= n + 1 and "other" in _values(counts, "agent_name")
    assert len(_values(counts, "operation")) <= n + 1 and "other" in _values(counts, "operation")
    assert len(counts) <= PAIRS_PER_KEPT_VALUE * n + n + 1

    # Totals over all series are the true totals, per status and per bucket.
    for status in AgentTrace.Status.values:
        assert (
            sum(v for labels, v in sessions if labels["status"] == status)
            == AgentTrace.objects.filter(status=status).count()
        )
    assert sum(v for _, v in active) == AgentTrace.objects.active().count()
    finished = AgentTrace.objects.filter(duration_seconds__isnull=False)
    assert sum(v for _, v in counts) == finished.count()
    assert sum(v for _, v in series(text, "vayu_agent_execution_duration_seconds_sum")) == pytest.approx(
        finished.aggregate(s=Sum("duration_seconds"))["s"]
    )
    buckets = series(text, "vayu_agent_execution_duration_seconds_bucket")
    for bound_seconds in DURATION_BUCKETS:
        assert (
            sum(v for labels, v in buckets if labels["le"] == str(bound_seconds))
            == finished.filter(duration_seconds__lte=bound_seconds).count()
        )

    # The most frequent agents keep their own series, exact.
    for a in range(HEAVY_AGENTS):
        mine = [(labels, v) for labels, v in sessions if labels["agent_name"] == f"Heavy{a}"]
        assert dict((labels["status"], v) for labels, v in mine) == {"completed": 4, "failed": 1}
        mine = {labels["operation"]: v for labels, v in counts if labels["agent_name"] == f"Heavy{a}"}
        assert sum(mine.values()) == HEAVY_TRACES


@pytest.mark.django_db
def test_below_the_limit_every_name_is_its_own_series(client, settings):
    settings.EVALSITE_METRICS_MAX_LABEL_VALUES = 50
    now = timezone.now()
    AgentTrace.objects.bulk_create(
        [
            AgentTrace(
                session_id=f"s{i}",
                agent_name=f"A{i}",
                user_query="q",
                operation=None,
                status=AgentTrace.Status.COMPLETED,
                success=True,
                start_time=now,
                end_time=now,
                duration_seconds=0.2,
            )
            for i in range(5)
        ]
    )
    text = _scrape(client)
    assert _values(series(text, "vayu_agent_sessions_total"), "agent_name") == {f"A{i}" for i in range(5)}
    # No operation reads as an empty label, as before.
    counts = series(text, "vayu_agent_execution_duration_seconds_count")
    assert sorted((labels["agent_name"], labels["operation"], v) for labels, v in counts) == [
        (f"A{i}", "", 1.0) for i in range(5)
    ]


@pytest.mark.django_db
def test_a_name_spelled_other_is_counted_with_the_rest(client, settings):
    """An agent (or operation) really called "other" never gets a second `other` series: it is
    counted under the one that holds the names beyond the limit."""
    settings.EVALSITE_METRICS_MAX_LABEL_VALUES = 2
    now = timezone.now()
    names = ["other"] * 5 + ["other"] * 5 + ["Big"] * 4 + ["Mid"] * 3 + ["small1", "small2"]
    operations = ["other"] * 10 + ["get"] * 4 + ["other", "list", "list"] + ["x", "y"]
    AgentTrace.objects.bulk_create(
        [
            AgentTrace(
                session_id=f"s{i}",
                agent_name=name,
                user_query="q",
                operation=op,
                status=AgentTrace.Status.COMPLETED,
                success=True,
                start_time=now,
                end_time=now,
                duration_seconds=1,
            )
            for i, (name, op) in enumerate(zip(names, operations))
        ]
    )
    text = _scrape(client)
    sessions = series(text, "vayu_agent_sessions_total")
    assert sorted((labels["agent_name"], v) for labels, v in sessions) == [("Big", 4), ("Mid", 3), ("other", 12)]
    counts = series(text, "vayu_agent_execution_duration_seconds_count")
    keys = [(labels["agent_name"], labels["operation"]) for labels, _ in counts]
    assert len(keys) == len(set(keys))
    assert {key: v for (key, v) in zip(keys, (v for _, v in counts))} == {
        ("Big", "get"): 4,
        ("Mid", "list"): 2,
        ("Mid", "other"): 1,
        ("other", "other"): 12,
    }


@pytest.mark.django_db
def test_every_kept_agent_with_every_kept_operation_is_still_bounded(client, settings):
    """N agents each seen with the same N operations: each label alone stays within N values, and
    the pairs are capped too, so the histogram cannot reach N² series."""
    settings.EVALSITE_METRICS_MAX_LABEL_VALUES = n = 6
    now = timezone.now()
    AgentTrace.objects.bulk_create(
        [
            AgentTrace(
                session_id=f"s{a}-{o}-{k}",
                agent_name=f"A{a}",
                user_query="q",
                operation=f"op{o}",
                status=AgentTrace.Status.COMPLETED,
                success=True,
                start_time=now,
                end_time=now,
                duration_seconds=a + o,
            )
            for a in range(n)
            for o in range(n)
            for k in range(1 + (a + o) % 3)
        ]
    )
    text = _scrape(client)
    counts = series(text, "vayu_agent_execution_duration_seconds_count")
    assert len(counts) <= PAIRS_PER_KEPT_VALUE * n + n < n * n
    assert len(_values(counts, "operation")) <= n + 1
    # Each agent's operations beyond the kept pairs are under (agent, other): its total is exact.
    for a in range(n):
        assert (
            sum(v for labels, v in counts if labels["agent_name"] == f"A{a}")
            == AgentTrace.objects.filter(agent_name=f"A{a}").count()
        )


@pytest.mark.django_db
def test_a_limit_of_zero_counts_everything_under_other(client, settings):
    settings.EVALSITE_METRICS_MAX_LABEL_VALUES = 0
    _bulk_traces()
    text = _scrape(client)
    sessions = series(text, "vayu_agent_sessions_total")
    assert _values(sessions, "agent_name") == {"other"}
    assert sum(v for _, v in sessions) == AgentTrace.objects.count()
    counts = series(text, "vayu_agent_execution_duration_seconds_count")
    assert [(labels["agent_name"], labels["operation"]) for labels, _ in counts] == [("other", "other")]
