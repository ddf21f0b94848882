import shutil

import pytest

from apps.nlquery.schemas import MetricsQueryState
from tests.fakes.prometheus import EvalsiteMetricsServer, FakeGrafana, PrometheusProcess, canned_prometheus

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


@pytest.fixture
def canned_backend(settings):
    """A canned Prometheus API (real HTTP server) configured as PROMETHEUS_URL; tests set
    `fake.canned` to change its answers."""
    fake = FakeGrafana(canned=canned_prometheus(CANNED_METRICS))
    settings.PROMETHEUS_URL = fake.url
    yield fake
    fake.close()


@pytest.fixture(scope="session")
def prometheus():
    """A real Prometheus scraping itself and evalsite's /metrics every second, with samples in."""
    if shutil.which("prometheus") is None:
        pytest.skip(NO_BINARY)
    evalsite = EvalsiteMetricsServer()
    server = PrometheusProcess(extra_targets={"evalsite": evalsite.target})
    try:
        server.wait_ready()
        server.wait_for_samples("rate(process_cpu_seconds_total[2m])", min_series=2)
        server.wait_for_samples("django_http_requests_total_by_method_total")
        yield server
    finally:
        server.cleanup()
        evalsite.stop()


@pytest.fixture
def use_prometheus(settings, prometheus):
    settings.PROMETHEUS_URL = prometheus.url
    return prometheus
