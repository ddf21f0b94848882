"""The rule-based parser, table-driven; every case also goes through the whole node against a
canned Prometheus so the node's invariant is checked on each."""

from datetime import UTC, datetime, timedelta

import pytest

from apps.nlquery.agent import run_query
from apps.nlquery.errors import QueryFailure
from apps.nlquery.parser import parse_question
from tests.nlquery.helpers import CANNED_METRICS, assert_invariant

NOW = datetime(2026, 1, 21, 12, 30, tzinfo=UTC)
AVAILABLE = sorted(CANNED_METRICS)
HOUR = timedelta(hours=1)


def at(hh, mm=0, day=21):
    return datetime(2026, 1, day, hh, mm, tzinfo=UTC)


# (question, expected fields or error_type). Times are (start, end).
CASES = [
    # times
    ("Show CPU usage for the last hour", {"metric_name": "process_cpu_seconds_total", "time": (NOW - HOUR, NOW)}),
    ("memory over the past 30 minutes", {"time": (NOW - timedelta(minutes=30), NOW)}),
    (
        "Show go_goroutines for the last 7 days",
        {"metric_name": "go_goroutines", "time": (NOW - timedelta(days=7), NOW)},
    ),
    ("cpu last 2h", {"time": (NOW - 2 * HOUR, NOW)}),
    ("cpu in the past five minutes", {"time": (NOW - timedelta(minutes=5), NOW)}),
    ("Show memory yesterday", {"time": (at(0, day=20), at(0))}),
    ("Show memory today", {"time": (at(0), NOW)}),
    ("cpu since 09:00", {"time": (at(9), NOW)}),
    ("cpu since 9am", {"time": (at(9), NOW)}),
    ("Show memory between 10:00 and 11:00", {"time": (at(10), at(11))}),
    ("memory from 2026-01-20 10:00 to 2026-01-20 12:00", {"time": (at(10, day=20), at(12, day=20))}),
    ("Show memory", {"time": (NOW - HOUR, NOW)}),
    ("cpu every 5 minutes over the last day", {"step": 300, "time": (NOW - timedelta(days=1), NOW)}),
    ("cpu for the last hour", {"step": 15}),
    # aggregations
    ("Average memory over the past 30 minutes", {"aggregation": "avg"}),
    ("mean cpu", {"aggregation": "avg"}),
    ("Peak memory today", {"aggregation": "max"}),
    ("maximum open files", {"aggregation": "max", "metric_name": "process_open_fds"}),
    ("lowest memory", {"aggregation": "min"}),
    (
        "Total requests in the last 15 minutes",
        {"aggregation": "sum", "metric_name": "django_http_requests_total_by_method_total"},
    ),
    ("Show process_cpu_seconds_total", {"aggregation": "none", "metric_name": "process_cpu_seconds_total"}),
    # filters
    ("Show CPU usage on instance web-1", {"filters": {"instance": "web-1"}}),
    ("Peak requests for job api since 09:00", {"filters": {"job": "api"}, "aggregation": "max", "time": (at(9), NOW)}),
    ("memory where job is node", {"filters": {"job": "node"}}),
    (
        'Show process_open_fds{instance="web-1"} between 10:00 and 11:00',
        {"metric_name": "process_open_fds", "filters": {"instance": "web-1"}, "time": (at(10), at(11))},
    ),
    ("cpu with job=api and instance='localhost:9090'", {"filters": {"job": "api", "instance": "localhost:9090"}}),
    (
        "sessions for agent billing-bot",
        {"metric_name": "vayu_agent_sessions_total", "filters": {"agent_name": "billing-bot"}},
    ),
    # synonyms and word matching
    ("How much RAM is used", {"metric_name": "process_resident_memory_bytes"}),
    ("Show HTTP requests", {"metric_name": "django_http_requests_total_by_method_total"}),
    ("goroutines", {"metric_name": "go_goroutines"}),
    ("scrape duration for the last 10 minutes", {"metric_name": "scrape_duration_seconds"}),
    ("Show the widgets for the last hour", {"metric_name": "widgets"}),
    # unsupported operations
    ("Show anomalies in CPU usage", "unsupported_operation"),
    ("forecast memory for tomorrow", "unsupported_operation"),
    ("predict requests next week", "unsupported_operation"),
    ("correlate cpu with memory", "unsupported_operation"),
    ("compare cpu and memory", "unsupported_operation"),
    ("why is cpu high", "unsupported_operation"),
    ('cpu with job!="api"', "unsupported_operation"),
    ("delete the cpu metric", "unsupported_operation"),
    # gibberish and the unparseable
    ("asdf qwerty zxcv", "parsing_error"),
    ("?!?", "parsing_error"),
    ("   ", "parsing_error"),
    ("show me", "parsing_error"),
    ("cpu between lunch and dinner", "parsing_error"),
    ("cpu since 25:00", "parsing_error"),
]


def _check(query, expected):
    for field, value in expected.items():
        if field == "time":
            assert (query.time_range.start_time, query.time_range.end_time) == value
        else:
            assert getattr(query, field) == value, field


@pytest.mark.parametrize("question,expected", CASES, ids=[c[0] for c in CASES])
def test_parser_table(question, expected, canned_backend):
    if isinstance(expected, str):
        with pytest.raises(QueryFailure) as caught:
            parse_question(question, available_metrics=AVAILABLE, now=NOW, tz=UTC)
        assert caught.value.error.error_type == expected
        assert caught.value.error.suggestion
    else:
        _check(parse_question(question, available_metrics=AVAILABLE, now=NOW, tz=UTC), expected)

    # In a project: without one, evalsite's own metrics (vayu_*) are refused (test_project_isolation.py).
    state = run_query(question, now=NOW, parser="rules", project="default")
    assert_invariant(state)
    if isinstance(expected, str):
        assert state["error"].error_type == expected
        assert state["parsed_query"] is None
    elif expected.get("metric_name") == "widgets":
        assert state["error"].error_type == "metric_not_found"
    else:
        # Parsing succeeded; the node went on to the canned backend and answered.
        assert state["error"] is None, state["error"]
        assert state["parsed_query"] is not None
        _check(state["parsed_query"], {k: v for k, v in expected.items() if k != "step"})


def test_since_a_time_still_to_come_is_an_invalid_time_range(canned_backend):
    state = run_query("cpu since 13:00", now=NOW)
    assert_invariant(state)
    assert state["error"].error_type == "invalid_time_range"


def test_reversed_range_is_an_invalid_time_range(canned_backend):
    state = run_query("memory between 11:00 and 10:00", now=NOW)
    assert_invariant(state)
    assert state["error"].error_type == "invalid_time_range"
    assert state["parsed_query"] is not None


@pytest.mark.parametrize(
    "question", ["cpu for the last 400 days", "cpu for the last 0 minutes", "cpu every 1 second over the last 7 days"]
)
def test_too_large_or_empty_ranges(question, canned_backend):
    state = run_query(question, now=NOW)
    assert_invariant(state)
    assert state["error"].error_type == "invalid_time_range"


def test_very_small_range(canned_backend):
    state = run_query("cpu for the last 10 seconds", now=NOW)
    assert_invariant(state)
    assert state["error"] is None
    assert state["parsed_query"].step == 1
