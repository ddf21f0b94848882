"""Operations endpoints: who may scrape /metrics, bounded metric labels, health checks, API docs
access and deployment settings."""

import secrets

import pytest
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
        assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
                          REMOTE_ADDR="203.0.113.7").status_code == 200

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


class TestApiDocsAccess:
    def test_schema_needs_a_key_or_a_session(self, client, api, admin_client):
        assert client.get("/api/schema/").status_code in (401, 403)
        assert api.get("/api/schema/").status_code == 200
        assert admin_client.get("/api/schema/").status_code == 200

    def test_docs_page_sends_a_browser_to_log_in(self, client, admin_client):
        response = client.get("/api/docs/")
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/?next=/api/docs/")
        # A logged-in reviewer reads the page, and its browser fetches the schema with the same session.
        assert admin_client.get("/api/docs/").status_code == 200

    def test_both_open_when_anonymous_use_is_allowed(self, client, allow_anonymous):
        assert client.get("/api/schema/").status_code == 200
        assert client.get("/api/docs/").status_code == 200
