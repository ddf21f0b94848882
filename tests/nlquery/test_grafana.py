"""The Grafana datasource-proxy backend, against a fake Grafana (a real local HTTP server speaking
/api/datasources/proxy/uid/<uid>/api/v1/... with Bearer-token checks)."""

import logging
from datetime import UTC, datetime

import pytest

from apps.nlquery.agent import run_query
from apps.nlquery.backends import GrafanaProxyBackend, backend_config, get_backend
from tests.fakes.prometheus import FakeGrafana, canned_prometheus
from tests.nlquery.helpers import CANNED_METRICS, assert_invariant

TOKEN = "glsa_secret-token-value-123"
NOW = datetime(2026, 1, 21, 12, 30, tzinfo=UTC)


@pytest.fixture
def grafana(settings):
    values = [[NOW.timestamp() - 60, "41"], [NOW.timestamp() - 30, "43"]]
    fake = FakeGrafana(
        uid="prom-uid",
        token=TOKEN,
        canned=canned_prometheus(CANNED_METRICS, [{"metric": {"job": "node"}, "values": values}]),
    )
    settings.GRAFANA_URL = fake.url + "/"
    settings.GRAFANA_DATASOURCE_UID = "prom-uid"
    settings.GRAFANA_TOKEN = TOKEN
    yield fake
    fake.close()


def test_queries_go_through_the_datasource_proxy_with_the_token(grafana, caplog):
    caplog.set_level(logging.DEBUG)
    state = run_query("Show go_goroutines for the last 5 minutes", now=NOW)
    assert_invariant(state)
    assert state["error"] is None, state["error"]
    assert [p.value for p in state["result"].datapoints] == [41, 43]
    assert isinstance(get_backend(), GrafanaProxyBackend)
    paths = [path for path, _ in grafana.requests]
    assert any(p.startswith("/api/datasources/proxy/uid/prom-uid/api/v1/query_range?") for p in paths)
    assert all(headers.get("Authorization") == f"Bearer {TOKEN}" for _, headers in grafana.requests)
    assert TOKEN not in caplog.text
    assert TOKEN not in repr(get_backend())


def test_wrong_token_is_grafana_unavailable_and_the_token_stays_secret(grafana, settings, caplog):
    caplog.set_level(logging.DEBUG)
    settings.GRAFANA_TOKEN = "glsa_wrong-token-456"
    state = run_query("Show go_goroutines", now=NOW)
    assert_invariant(state)
    assert state["error"].error_type == "grafana_unavailable"
    assert "401" in state["error"].message and "GRAFANA_TOKEN" in state["error"].suggestion
    dumped = state["error"].model_dump_json()
    assert "glsa_" not in dumped and "glsa_" not in caplog.text


def test_unknown_datasource_uid_is_grafana_unavailable(grafana, settings):
    settings.GRAFANA_DATASOURCE_UID = "other-uid"
    state = run_query("Show go_goroutines", now=NOW)
    assert_invariant(state)
    assert state["error"].error_type == "grafana_unavailable"
    assert "GRAFANA_DATASOURCE_UID" in state["error"].suggestion


def test_proxy_forwards_to_a_real_prometheus(use_prometheus, settings):
    fake = FakeGrafana(uid="real", token=TOKEN, upstream=use_prometheus.url)
    try:
        settings.PROMETHEUS_URL = ""
        settings.GRAFANA_URL, settings.GRAFANA_DATASOURCE_UID, settings.GRAFANA_TOKEN = fake.url, "real", TOKEN
        state = run_query("Show CPU usage for the last hour")
        assert_invariant(state)
        assert state["error"] is None, state["error"]
        assert state["result"].datapoint_count > 0
        assert get_backend().kind == "grafana"
    finally:
        fake.close()


def test_partial_grafana_configuration_says_what_is_missing(settings):
    settings.GRAFANA_URL = "http://grafana.invalid"
    config = backend_config()
    assert not config.configured
    assert "GRAFANA_DATASOURCE_UID" in config.problem and "GRAFANA_TOKEN" in config.problem
    assert get_backend() is None


def test_prometheus_url_wins_over_grafana(settings, grafana):
    settings.PROMETHEUS_URL = "http://127.0.0.1:9"
    assert backend_config().kind == "prometheus"


@pytest.mark.parametrize(
    "setting, value",
    [
        ("PROMETHEUS_URL", "http://[::1"),  # httpx cannot even build a client for it
        ("PROMETHEUS_URL", "prometheus:9090"),
        ("PROMETHEUS_URL", "ftp://prometheus.example"),
        ("GRAFANA_URL", "grafana.example"),
    ],
)
def test_malformed_backend_url_is_reported_as_configuration(settings, setting, value, api, admin_client):
    if setting == "GRAFANA_URL":
        settings.GRAFANA_DATASOURCE_UID, settings.GRAFANA_TOKEN = "uid", TOKEN
    setattr(settings, setting, value)
    config = backend_config()
    assert not config.configured and setting in config.problem
    state = run_query("Show CPU usage for the last hour", now=NOW)
    assert_invariant(state)
    assert state["error"].error_type == "grafana_unavailable"
    assert setting in state["error"].message and "PROMETHEUS_URL" in state["error"].suggestion
    response = api.post("/api/v1/metrics-query", {"query": "cpu"}, format="json")
    assert response.status_code == 200 and response.json()["error"]["error_type"] == "grafana_unavailable"
    page = admin_client.get("/metrics-query/", {"q": "cpu"})
    assert page.status_code == 200 and 'id="setup"' in page.content.decode()
    assert setting in page.content.decode() and TOKEN not in page.content.decode()
