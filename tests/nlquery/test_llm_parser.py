"""The LLM parsing path's conversion of a structured answer into a MetricsQuery. The call through
apps/core/llm.py itself is not exercised here (see the report: the shared client had not landed)."""

from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from apps.nlquery.errors import QueryFailure
from apps.nlquery.llm_parser import LLMExtraction, extraction_to_query, metrics_for_prompt

NOW = datetime(2026, 1, 21, 12, 30, tzinfo=timezone.utc)


def test_full_extraction_becomes_a_query():
    query = extraction_to_query(LLMExtraction(
        metric_name="process_cpu_seconds_total", start_time="2026-01-21T11:00:00Z", end_time="2026-01-21T12:00:00Z",
        aggregation="max", filters={"job": "api"}), NOW)
    assert query.metric_name == "process_cpu_seconds_total"
    assert query.time_range.end_time - query.time_range.start_time == timedelta(hours=1)
    assert (query.aggregation, query.filters, query.step) == ("max", {"job": "api"}, 15)


def test_missing_times_mean_the_last_hour():
    query = extraction_to_query(LLMExtraction(metric_name="up"), NOW)
    assert (query.time_range.start_time, query.time_range.end_time) == (NOW - timedelta(hours=1), NOW)


def test_unsupported_operation_is_reported_as_such():
    with pytest.raises(QueryFailure) as caught:
        extraction_to_query(LLMExtraction(unsupported_operation="anomaly detection", metric_name="up"), NOW)
    assert caught.value.error.error_type == "unsupported_operation"
    assert caught.value.error.message == "Anomaly detection is not supported."


def test_no_metric_is_a_parsing_error():
    with pytest.raises(QueryFailure) as caught:
        extraction_to_query(LLMExtraction(), NOW)
    assert caught.value.error.error_type == "parsing_error"


def test_a_metric_name_promql_cannot_hold_fails_validation():
    with pytest.raises(ValidationError):
        extraction_to_query(LLMExtraction(metric_name="cpu usage; drop"), NOW)


def test_reversed_times_are_left_to_the_validation_step():
    query = extraction_to_query(LLMExtraction(metric_name="up", start_time="2026-01-21T12:00:00Z",
                                              end_time="2026-01-21T11:00:00Z"), NOW)
    assert query.time_range.end_time < query.time_range.start_time


def test_prompt_metric_list_is_bounded_and_relevant_first():
    available = [f"metric_{i}_total" for i in range(1000)] + ["process_cpu_seconds_total", "disk_io_seconds"]
    chosen = metrics_for_prompt("disk io", available)
    assert len(chosen) == 200
    assert chosen[:2] == ["process_cpu_seconds_total", "disk_io_seconds"]
