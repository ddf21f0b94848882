"""Operations endpoints: who may scrape /metrics, bounded metric labels, health checks, API docs
access and deployment settings."""

import os
import secrets
import socket
import subprocess
import sys
import time

import pytest
from django.conf import settings
from prometheus_client import REGISTRY

pytestmark = pytest.mark.django_db

TOKEN = "scrape-" + "x" * 32


class TestMetricsAccess:
    def test_loopback_scraper_is_served_by_default(self, client):
        response = client.get("/metrics")
        assert response.status_code == 200 and b"django_http_requests" in response.content

    def test_anonymous_scrape_from_another_network_is_refused(self, client):
        response = client.get("/metrics", REMOTE_ADDR="203.0.113.7")
        assert response.status_code == 403
        assert b"vayu_agent" not in response.content and b"django_http" not in response.content

    def test_proxied_request_does_not_pass_as_loopback(self, client):
        # nginx on the same host connects from 127.0.0.1 for every visitor on the internet.
        response = client.get("/metrics", HTTP_X_FORWARDED_FOR="198.51.100.9")
        assert response.status_code == 403

    def test_with_a_token_it_is_required_even_from_loopback(self, client, settings):
        settings.EVALSITE_METRICS_TOKEN = TOKEN
        refused = client.get("/metrics")
        assert refused.status_code == 401 and refused["WWW-Authenticate"].startswith("Bearer")
        assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
        assert (
            client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", REMOTE_ADDR="203.0.113.7").status_code == 200
        )

    def test_allowed_networks(self, client, settings):
        settings.EVALSITE_METRICS_ALLOW = ["10.1.0.0/16"]
        assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
        assert client.get("/metrics", REMOTE_ADDR="10.2.0.1").status_code == 403
        # Listing networks replaces the loopback default.
        assert client.get("/metrics").status_code == 403


def method_label_values() -> dict[str, set[tuple]]:
    series: dict[str, set[tuple]] = {}
    for family in REGISTRY.collect():
        for sample in family.samples:
            if "method" in sample.labels:
                series.setdefault(sample.name, set()).add(tuple(sorted(sample.labels.items())))
    return series


def test_made_up_methods_add_at_most_one_series(client):
    client.generic("AUDITX0", "/healthz")  # the folded series may exist already; count from here
    before = method_label_values()
    for _ in range(50):
        client.generic(f"AUDITX{secrets.token_hex(4).upper()}", "/healthz")
    after = method_label_values()
    for name, labelsets in after.items():
        assert len(labelsets - before.get(name, set())) <= 1, name
    methods = {dict(labels)["method"] for labelsets in after.values() for labels in labelsets}
    assert not any(m.startswith("AUDITX") for m in methods)
    assert "other" in methods


def test_request_metrics_still_count_every_request(api):
    """The after-middleware caches labelled children; each request must still move its series."""

    def value(name, **labels):
        return REGISTRY.get_sample_value(name, labels) or 0.0

    view, method = "trace-detail", "GET"
    before = (
        value("django_http_responses_total_by_status_view_method_total", status="404", view=view, method=method),
        value("django_http_requests_latency_seconds_by_view_method_count", view=view, method=method),
        value("django_http_responses_total_by_status_total", status="404"),
    )
    for _ in range(3):
        assert api.get("/api/v1/metrics/trace/none").status_code == 404
    after = (
        value("django_http_responses_total_by_status_view_method_total", status="404", view=view, method=method),
        value("django_http_requests_latency_seconds_by_view_method_count", view=view, method=method),
        value("django_http_responses_total_by_status_total", status="404"),
    )
    assert [a - b for a, b in zip(after, before)] == [3, 3, 3]


class TestApiDocsAccess:
    def test_schema_needs_a_key_or_a_session(self, client, api, admin_client):
        assert client.get("/api/schema/").status_code in (401, 403)
        assert api.get("/api/schema/").status_code == 200
        assert admin_client.get("/api/schema/").status_code == 200

    def test_docs_page_sends_a_browser_to_log_in(self, client, admin_client):
        response = client.get("/api/docs/")
        assert response.status_code == 302 and response["Location"].startswith(
            "/console/login/?next=/api/docs/"
        )  # settings.LOGIN_URL, the console's login
        # A logged-in reviewer reads the page, and its browser fetches the schema with the same session.
        assert admin_client.get("/api/docs/").status_code == 200

    def test_both_open_when_anonymous_use_is_allowed(self, client, allow_anonymous):
        assert client.get("/api/schema/").status_code == 200
        assert client.get("/api/docs/").status_code == 200


PRODUCTION_ENV = {
    "DEBUG": "0",
    "SECRET_KEY": "prod-" + "k7Qz9mWx2Lp4Rt6Yv8Bn3Jc5Hd1Fg0SaEu" * 2,
    "ALLOWED_HOSTS": "evals.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://evals.example.com",
    # An opt-in of the domain's owner (see settings); everything else is the DEBUG-off default.
    "SECURE_HSTS_PRELOAD": "1",
}


def check_deploy(env: dict, tmp_path) -> subprocess.CompletedProcess:
    """`manage.py check --deploy` in a fresh process: settings are read from the environment once,
    at import, so only a new process sees a production environment."""
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("SECURE_", "SESSION_", "CSRF_", "DJANGO_SETTINGS"))
    }
    full = {**base, "EVALSITE_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "evalsite.settings", **env}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=settings.BASE_DIR,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.subprocess
def test_check_deploy_is_clean_with_debug_off(tmp_path):
    result = check_deploy(PRODUCTION_ENV, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "security.W" not in result.stdout + result.stderr


@pytest.mark.subprocess
def test_check_deploy_names_what_an_operator_turned_off(tmp_path):
    result = check_deploy(
        {**PRODUCTION_ENV, "SECURE_SSL_REDIRECT": "0", "SESSION_COOKIE_SECURE": "0", "SECURE_HSTS_SECONDS": "0"},
        tmp_path,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "security.W008" in output and "security.W012" in output and "security.W004" in output


def test_https_behind_the_proxy(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 31_536_000
    assert client.get("/console/")["Location"].startswith("https://")
    forwarded = client.get("/console/", HTTP_X_FORWARDED_PROTO="https")
    assert forwarded.status_code != 301 and "max-age=31536000" in forwarded["Strict-Transport-Security"]
    # Health checks come straight from the load balancer, over plain HTTP.
    assert client.get("/healthz").status_code == 200


class TestHealth:
    def test_healthz_is_anonymous_and_needs_no_database(self, client, django_assert_num_queries):
        with django_assert_num_queries(0):
            response = client.get("/healthz")
        assert response.status_code == 200 and response.json() == {"status": "ok"}

    def test_readyz_checks_database_and_broker(self, client):
        response = client.get("/readyz")
        assert response.status_code == 200
        assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok"}}

    def test_readyz_names_an_unreachable_broker(self, client, settings):
        from evalsite.celery import app

        # A real refused connection: nothing listens on this port.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            free_port = probe.getsockname()[1]
        original = app.conf.broker_url
        app.conf.broker_url = f"redis://127.0.0.1:{free_port}/0"
        try:
            started = time.monotonic()
            response = client.get("/readyz")
        finally:
            app.conf.broker_url = original
        assert response.status_code == 503
        body = response.json()
        assert body["checks"]["database"] == "ok" and body["checks"]["broker"].startswith("unreachable")
        assert str(free_port) not in response.content.decode()
        assert time.monotonic() - started < 5

    def test_readyz_names_an_unreachable_database(self, client, monkeypatch):
        from apps.core.http import views

        def broken():
            raise views.connections["default"].Database.OperationalError("connection refused")

        monkeypatch.setitem(views.READINESS_CHECKS, "database", broken)
        response = client.get("/readyz")
        assert response.status_code == 503 and response.json()["checks"]["database"].startswith("unreachable")
