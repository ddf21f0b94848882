"""The /metrics-query/ page in the console's layout (issue 15, point 9): console navigation, one h1,
the question kept in its box with or without a backend, and a scrape job for evalsite's /metrics."""

import re

import pytest
from django.contrib.auth.models import User

from tests.fakes.prometheus import canned_prometheus
from tests.nlquery.helpers import CANNED_METRICS

QUESTION = "Show CPU usage for the last hour"


@pytest.fixture
def reader_client(client, db):
    # Asking a question needs the evaluate scope (a staff session); test_page_scope.py covers readers.
    client.force_login(User.objects.create_user("viewer", password="pw", is_staff=True))
    return client


def question_box(html: str) -> str:
    return re.search(r'<input type="text" name="q" value="([^"]*)"', html).group(1)


def test_without_a_backend_the_question_stays_and_is_answered_in_place(reader_client, settings):
    settings.PROMETHEUS_URL = settings.GRAFANA_URL = ""
    html = reader_client.get("/metrics-query/", {"q": QUESTION}).content.decode()
    assert question_box(html) == QUESTION
    assert 'id="setup"' in html and "No metrics backend is configured, so this question cannot be answered yet" in html
    # The console's layout, not the admin's: its navigation, its title, a single h1.
    assert 'class="console-nav"' in html and "Django administration" not in html
    assert html.count("<h1") == 1 and "Metrics query | evalsite console" in html


def test_with_a_backend_the_answer_sits_under_the_kept_question(reader_client, canned_backend):
    import time

    now = time.time()
    canned_backend.canned = canned_prometheus(
        CANNED_METRICS, [{"metric": {"job": "a"}, "values": [[now - 60, "1"], [now - 30, "3"]]}]
    )
    html = reader_client.get("/metrics-query/", {"q": QUESTION}).content.decode()
    assert question_box(html) == QUESTION and 'id="setup"' not in html
    assert 'id="statistics"' in html and 'class="console-nav"' in html and html.count("<h1") == 1


def test_the_question_is_escaped_in_its_box(reader_client, settings):
    settings.PROMETHEUS_URL = settings.GRAFANA_URL = ""
    html = reader_client.get("/metrics-query/", {"q": '"><script>alert(1)</script>'}).content.decode()
    assert "<script>alert(1)" not in html and question_box(html) == "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.mark.parametrize("token", ["", "s3cret-token-value"])
def test_scrape_snippet_for_evalsites_own_metrics(reader_client, settings, token):
    settings.EVALSITE_METRICS_TOKEN = token
    settings.ALLOWED_HOSTS = ["evals.example.com"]
    html = reader_client.get("/metrics-query/", HTTP_HOST="evals.example.com").content.decode()
    snippet = re.search(r'<pre id="scrape-snippet">(.*?)</pre>', html, re.S).group(1)
    assert "job_name: evalsite" in snippet and "metrics_path: /metrics" in snippet
    assert "targets: [&quot;evals.example.com&quot;]" in snippet and "credentials_file:" in snippet
    assert "EVALSITE_METRICS_TOKEN" in snippet
    assert "s3cret" not in html  # the page names the token, never shows it
    assert ("is set here" in html) == bool(token) and ("is not set" in html) == (not token)
