"""The node against a canned Prometheus API (a real local HTTP server): formatting, statistics,
backend failures, caching and the invariant."""

import math
import statistics
from datetime import UTC, datetime

import pytest

from apps.nlquery import agent
from apps.nlquery.agent import NODE_NAME, get_graph, run_query
from apps.nlquery.backends import get_backend
from apps.nlquery.schemas import initial_state
from tests.fakes.prometheus import canned_prometheus
from tests.nlquery.helpers import CANNED_METRICS, assert_invariant

NOW = datetime(2026, 1, 21, 12, 30, tzinfo=UTC)
T0 = NOW.timestamp() - 120


def series(labels, values):
    return {"metric": {"__name__": "x", **labels}, "values": [[T0 + 15 * i, v] for i, v in enumerate(values)]}


def test_graph_has_the_metrics_agent_node():
    assert NODE_NAME == "metrics_agent"
    assert NODE_NAME in get_graph().get_graph().nodes


def test_initial_state_matches_the_contract():
    assert initial_state("q") == {
        "user_query": "q",
        "parsed_query": None,
        "result": None,
        "error": None,
        "processing_time_ms": 0.0,
    }


def test_success_formats_sorted_points_and_statistics(canned_backend):
    values = ["3", "1.5", "NaN", "4", "+Inf"]
    canned_backend.canned = canned_prometheus(
        CANNED_METRICS, [series({"job": "b"}, values), series({"job": "a"}, ["2", "2"])]
    )
    state = run_query("Show CPU usage for the last hour", now=NOW)
    assert_invariant(state)
    result = state["result"]
    assert state["error"] is None
    assert result.promql == "rate(process_cpu_seconds_total[120s])"
    assert result.unit == "seconds/s"
    finite = [3, 1.5, 4, 2, 2]
    assert result.datapoint_count == len(result.datapoints) == 5
    assert [p.timestamp for p in result.datapoints] == sorted(p.timestamp for p in result.datapoints)
    assert result.datapoints[0].labels == {"job": "a"}  # same timestamp: ordered by series
    stats = result.statistics
    assert (stats.min, stats.max, stats.count) == (1.5, 4, 5)
    assert math.isclose(stats.mean, statistics.fmean(finite))
    assert stats.median == statistics.median(finite)
    assert math.isclose(stats.sum, sum(finite))
    assert not result.is_empty


def test_aggregation_filters_and_gauges_build_the_promql(canned_backend):
    state = run_query('Peak memory for job "api" since 12:00', now=NOW)
    assert_invariant(state)
    assert state["result"].promql == 'max(process_resident_memory_bytes{job="api"})'
    assert state["result"].unit == "bytes"


def test_label_values_are_escaped_in_promql(canned_backend):
    state = run_query("memory with job='a\"b\\c'", now=NOW)
    assert_invariant(state)
    assert state["parsed_query"].filters == {"job": 'a"b\\c'}
    assert state["result"].promql == 'process_resident_memory_bytes{job="a\\"b\\\\c"}'


def test_empty_result_has_null_statistics(canned_backend):
    state = run_query("Show CPU usage for the last hour", now=NOW)
    assert_invariant(state)
    assert state["result"].is_empty and state["result"].statistics is None
    assert state["result"].datapoint_count == 0


def test_unknown_metric_suggests_close_names(canned_backend):
    state = run_query("Show process_cpu_second for the last hour", now=NOW)
    assert_invariant(state)
    assert state["error"].error_type == "metric_not_found"
    assert "process_cpu_seconds_total" in state["error"].suggestion
    assert state["error"].details["suggestions"][0] == "process_cpu_seconds_total"


def test_backend_rejecting_the_query_is_invalid_query(canned_backend):
    canned_backend.canned = canned_prometheus(
        CANNED_METRICS,
        query_status=(400, {"status": "error", "errorType": "bad_data", "error": "parse error at char 5"}),
    )
    state = run_query("cpu", now=NOW)
    assert_invariant(state)
    assert state["error"].error_type == "invalid_query"
    assert "parse error at char 5" in state["error"].message
    assert state["parsed_query"] is not None


@pytest.mark.parametrize("status", [500, 502, 503])
def test_backend_5xx_is_grafana_unavailable(canned_backend, status):
    canned_backend.canned = canned_prometheus(
        CANNED_METRICS, query_status=(status, {"status": "error", "errorType": "timeout", "error": "query timed out"})
    )
    state = run_query("cpu", now=NOW)
    assert_invariant(state)
    assert state["error"].error_type == "grafana_unavailable"


def test_backend_timeout_is_grafana_unavailable(canned_backend, settings):
    settings.METRICS_BACKEND_TIMEOUT_SECONDS = 1
    canned_backend.delay = 1.3
    state = run_query("cpu", now=NOW)
    assert_invariant(state)
    assert state["error"].error_type == "grafana_unavailable"
    assert "in time" in state["error"].message


def test_not_configured_is_grafana_unavailable_with_instructions(db):
    state = run_query("cpu")
    assert_invariant(state)
    assert state["error"].error_type == "grafana_unavailable"
    assert "PROMETHEUS_URL" in state["error"].suggestion


def test_too_many_series_asks_for_a_filter(canned_backend):
    canned_backend.canned = canned_prometheus(CANNED_METRICS, [series({"i": str(n)}, ["1"]) for n in range(51)])
    state = run_query("memory", now=NOW)
    assert_invariant(state)
    assert state["error"].error_type == "invalid_query"
    assert "filter" in state["error"].suggestion


def test_unexpected_formatting_failure_is_invalid_query(canned_backend, monkeypatch):
    canned_backend.canned = canned_prometheus(CANNED_METRICS, [{"metric": {}, "values": [[T0, "not a number"]]}])
    state = run_query("memory", now=NOW)
    assert_invariant(state)
    assert state["error"].error_type == "invalid_query"
    assert state["error"].message == "Could not format results"
    assert state["error"].suggestion == "Contact administrator"


def test_metric_list_is_cached_for_five_minutes(canned_backend, monkeypatch):
    run_query("cpu", now=NOW)
    run_query("memory", now=NOW)
    listed = [path for path, _ in canned_backend.requests if path.startswith("/api/v1/label/__name__/values")]
    assert len(listed) == 1
    backend = get_backend()
    clock = {"t": backend._fetched_at + 301}
    monkeypatch.setattr("apps.nlquery.backends.time.monotonic", lambda: clock["t"])
    run_query("cpu", now=NOW)
    listed = [path for path, _ in canned_backend.requests if path.startswith("/api/v1/label/__name__/values")]
    assert len(listed) == 2


def test_one_client_is_reused(canned_backend):
    first = get_backend()
    run_query("cpu", now=NOW)
    assert get_backend() is first
    assert first._client is get_backend()._client


def test_errors_are_not_retried(canned_backend):
    canned_backend.canned = canned_prometheus(CANNED_METRICS, query_status=(503, {"status": "error", "error": "x"}))
    run_query("cpu", now=NOW)
    assert len([p for p, _ in canned_backend.requests if p.startswith("/api/v1/query_range")]) == 1


def test_step_timings_cover_the_five_steps(canned_backend):
    timings = {}
    state = run_query("cpu", now=NOW, step_timings=timings)
    assert_invariant(state)
    assert set(timings) == set(agent.STEPS)
    assert sum(timings.values()) <= state["processing_time_ms"] + 1


def test_node_called_directly_keeps_invariant_on_empty_query(db):
    state = agent.metrics_agent(initial_state(""))
    assert_invariant(state)
    assert state["error"].error_type == "parsing_error"


def test_evalsite_metrics_need_a_project_and_infrastructure_does_not(canned_backend):
    # The node run in-process without a project (a composed graph, the benchmark): evalsite's own
    # metrics are refused rather than read across every project; the shared machines' are answered.
    refused = run_query("Show vayu_agent_sessions_total for the last hour", now=NOW)
    assert_invariant(refused)
    assert refused["error"].error_type == "invalid_query" and "project" in refused["error"].message
    assert not any(path.startswith("/api/v1/query_range") for path, _ in canned_backend.requests)
    scoped = run_query("Show vayu_agent_sessions_total for the last hour", now=NOW, project="team-b")
    assert scoped["result"].promql == 'rate(vayu_agent_sessions_total{project="team-b"}[120s])'
    infrastructure = run_query("Show CPU usage for the last hour", now=NOW)
    assert (
        infrastructure["error"] is None and infrastructure["result"].promql == "rate(process_cpu_seconds_total[120s])"
    )
