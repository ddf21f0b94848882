"""What the metrics-query tests share: the canned backend's metric list and the contract's invariant."""

from apps.nlquery.schemas import MetricsQueryState

NO_BINARY = "the prometheus binary is not on PATH (install the Debian package 'prometheus'; .ci/run does)"

# What a typical Prometheus + Django target lists, with the metadata Prometheus would give.
CANNED_METRICS = {
    "process_cpu_seconds_total": {"type": "counter", "help": "CPU time", "unit": ""},
    "process_resident_memory_bytes": {"type": "gauge", "help": "RSS", "unit": ""},
    "process_open_fds": {"type": "gauge", "help": "open fds", "unit": ""},
    "prometheus_http_requests_total": {"type": "counter", "help": "requests", "unit": ""},
    "django_http_requests_total_by_method_total": {"type": "counter", "help": "requests", "unit": ""},
    "go_goroutines": {"type": "gauge", "help": "goroutines", "unit": ""},
    "scrape_duration_seconds": {"type": "gauge", "help": "scrape", "unit": ""},
    "up": {"type": "gauge", "help": "up", "unit": ""},
    "vayu_agent_sessions_total": {"type": "counter", "help": "agent sessions", "unit": ""},
}


def assert_invariant(state: MetricsQueryState) -> None:
    """The contract: exactly one of success (parsed_query and result, no error) or failure
    (error, no result)."""
    success = state["parsed_query"] is not None and state["result"] is not None and state["error"] is None
    failure = state["error"] is not None and state["result"] is None
    assert success != failure, state
    assert state["processing_time_ms"] > 0
    assert set(state) == {"user_query", "parsed_query", "result", "error", "processing_time_ms"}
