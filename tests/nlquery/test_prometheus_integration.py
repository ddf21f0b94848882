"""Against a real Prometheus (the Debian package's binary) scraping itself and evalsite's /metrics.
Skipped, with the reason, only where the binary is absent."""

import shutil
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.nlquery.agent import run_query
from apps.nlquery.backends import get_backend
from apps.nlquery.selectors import example_questions
from tests.fakes.prometheus import PrometheusProcess, wait_until
from tests.nlquery.helpers import NO_BINARY, assert_invariant

pytestmark = pytest.mark.prometheus


def test_cpu_usage_for_the_last_hour_has_datapoints_and_statistics(use_prometheus):
    state = run_query("Show CPU usage for the last hour")
    assert_invariant(state)
    assert state["error"] is None, state["error"]
    result = state["result"]
    assert result.metric_name == "process_cpu_seconds_total"
    assert result.promql == "rate(process_cpu_seconds_total[120s])"
    assert result.datapoint_count > 0 and not result.is_empty
    jobs = {p.labels.get("job") for p in result.datapoints}
    assert jobs == {"prometheus", "evalsite"}
    values = [p.value for p in result.datapoints]
    assert result.statistics.count == len(values)
    assert result.statistics.min == min(values) and result.statistics.max == max(values)
    assert all(v >= 0 for v in values)


def test_average_over_evalsite_requests(use_prometheus):
    state = run_query("Average requests for job evalsite over the past 30 minutes")
    assert_invariant(state)
    assert state["error"] is None, state["error"]
    assert state["result"].promql.startswith('avg(rate(django_http_requests_total_by_method_total{job="evalsite"}')
    assert state["result"].datapoint_count > 0
    assert {p.labels.get("job") for p in state["result"].datapoints} == {None}


def test_unknown_metric_is_metric_not_found_with_suggestions(use_prometheus):
    state = run_query("Show process_cpu_secs_total for the last hour")
    assert_invariant(state)
    assert state["error"].error_type == "metric_not_found"
    assert "process_cpu_seconds_total" in state["error"].suggestion


def test_anomalies_are_an_unsupported_operation(use_prometheus):
    state = run_query("Show anomalies in CPU usage")
    assert_invariant(state)
    assert state["error"].error_type == "unsupported_operation"
    assert state["parsed_query"] is None


def test_empty_result_is_empty_with_null_statistics(use_prometheus):
    # A window days before the test's Prometheus started: "yesterday" holds its first samples when
    # the suite crosses midnight.
    day = (timezone.now() - timedelta(days=3)).date().isoformat()
    for question in ("Show CPU usage for job no-such-job", f"Show memory from {day} 10:00 to {day} 12:00"):
        state = run_query(question)
        assert_invariant(state)
        assert state["error"] is None, state["error"]
        assert state["result"].is_empty and state["result"].statistics is None
        assert state["result"].datapoints == []


def test_query_prometheus_refuses_is_invalid_query(use_prometheus, monkeypatch):
    # Our own check normally stops this first; lifted, the question reaches Prometheus, which
    # refuses more than 11,000 points per series with a bad_data error.
    monkeypatch.setattr("apps.nlquery.agent.MAX_POINTS_PER_SERIES", 10**9)
    state = run_query("Show memory every 1 second over the last 7 days")
    assert_invariant(state)
    assert state["error"].error_type == "invalid_query"
    assert "11,000" in state["error"].message or "11000" in state["error"].message


def test_examples_come_from_real_metric_names(use_prometheus):
    examples = example_questions(get_backend())
    assert "Show CPU usage for the last hour" in examples
    for example in examples:
        state = run_query(example)
        assert_invariant(state)
        assert state["error"] is None, (example, state["error"])


def test_stopped_prometheus_is_grafana_unavailable(settings):
    if shutil.which("prometheus") is None:
        pytest.skip(NO_BINARY)
    server = PrometheusProcess()
    try:
        server.wait_ready()
        wait_until(
            lambda: "go_goroutines" in (server.api("/api/v1/label/__name__/values") or {}).get("data", []),
            20,
            "the first self-scrape",
        )
        settings.PROMETHEUS_URL = server.url
        before = run_query("Show goroutines for the last 5 minutes")
        assert_invariant(before)
        assert before["error"] is None, before["error"]
        server.stop()
        # The metric list is still cached: the query itself finds nobody answering.
        after = run_query("Show goroutines for the last 5 minutes")
        assert_invariant(after)
        assert after["error"].error_type == "grafana_unavailable"
        assert "unreachable" in after["error"].message
        get_backend().invalidate_cache()
        uncached = run_query("Show goroutines for the last 5 minutes")
        assert_invariant(uncached)
        assert uncached["error"].error_type == "grafana_unavailable"
    finally:
        server.cleanup()


def test_api_answers_from_the_real_prometheus(use_prometheus, api):
    response = api.post("/api/v1/metrics-query", {"query": "Show CPU usage for the last hour"}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"user_query", "parsed_query", "result", "error", "processing_time_ms"}
    assert body["error"] is None, body["error"]
    assert body["parsed_query"]["metric_name"] == "process_cpu_seconds_total"
    result = body["result"]
    assert result["promql"] == "rate(process_cpu_seconds_total[120s])"
    assert result["datapoint_count"] == len(result["datapoints"]) > 0 and result["is_empty"] is False
    assert result["statistics"]["count"] == result["datapoint_count"]
    assert {p["labels"]["job"] for p in result["datapoints"]} == {"prometheus", "evalsite"}
    timestamps = [p["timestamp"] for p in result["datapoints"]]
    assert timestamps == sorted(timestamps)

    failed = api.post(
        "/api/v1/metrics-query", {"query": "Show process_cpu_secs_total for the last hour"}, format="json"
    ).json()
    assert failed["result"] is None
    assert set(failed["error"]) == {"error_type", "message", "suggestion"}  # details stay in the logs
    assert failed["error"]["error_type"] == "metric_not_found"
    assert "process_cpu_seconds_total" in failed["error"]["suggestion"]


def test_page_answers_from_the_real_prometheus(use_prometheus, admin_client):
    html = admin_client.get("/metrics-query/", {"q": "Show CPU usage for the last hour"}).content.decode()
    assert 'id="setup"' not in html and 'id="query-error"' not in html
    # A young Prometheus may hold one rate point per series: drawn as a dot rather than a line.
    assert 'class="nlq-chart"' in html and ("<polyline" in html or "<circle" in html)
    assert 'id="statistics"' in html
    assert "rate(process_cpu_seconds_total[120s])" in html
    # Example questions name metrics this Prometheus really has.
    assert 'id="examples"' in html and "Show CPU usage for the last hour" in html
    names = set(get_backend().get_available_metrics())
    shown = [e for e in example_questions(get_backend()) if e.startswith("Show ") and "_" in e]
    assert shown and all(e.split()[1] in names for e in shown)

    error_html = admin_client.get("/metrics-query/", {"q": "Show anomalies in CPU usage"}).content.decode()
    assert 'id="query-error"' in error_html and "unsupported_operation" in error_html
    assert "Try asking for raw metric data instead" in error_html
