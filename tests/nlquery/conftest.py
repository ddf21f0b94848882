import shutil

import pytest

from tests.fakes.prometheus import EvalsiteMetricsServer, FakeGrafana, PrometheusProcess, canned_prometheus
from tests.nlquery.helpers import CANNED_METRICS, NO_BINARY


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
