"""POST /api/v1/metrics-query and the /metrics-query/ page."""

from xml.etree import ElementTree

import pytest
from django.contrib.auth.models import User

from tests.fakes.prometheus import canned_prometheus
from tests.nlquery.helpers import CANNED_METRICS

URL = "/api/v1/metrics-query"


@pytest.fixture
def answering_backend(canned_backend):
    import time

    now = time.time()
    canned_backend.canned = canned_prometheus(
        CANNED_METRICS,
        [
            {"metric": {"job": "a"}, "values": [[now - 60, "1"], [now - 30, "3"]]},
            {"metric": {"job": "b<script>"}, "values": [[now - 60, "2"]]},
        ],
    )
    return canned_backend


def test_requires_authentication(anon_api):
    assert anon_api.post(URL, {"query": "cpu"}, format="json").status_code in (401, 403)


@pytest.mark.parametrize(
    "body",
    [{"query": ""}, {"query": "   "}, {}, {"query": 5}, {"query": None}, {"query": "x" * 1001}, {"query": "cpu\x00"}],
)
def test_invalid_body_is_422(api, body):
    response = api.post(URL, body, format="json")
    assert response.status_code == 422
    assert "detail" in response.json()


def test_answer_is_the_state(api, answering_backend):
    response = api.post(URL, {"query": "Show CPU usage for the last hour"}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"user_query", "parsed_query", "result", "error", "processing_time_ms"}
    assert body["error"] is None
    assert body["parsed_query"]["metric_name"] == "process_cpu_seconds_total"
    assert set(body["parsed_query"]["time_range"]) == {"start_time", "end_time"}
    result = body["result"]
    assert result["promql"] == "rate(process_cpu_seconds_total[120s])"
    assert result["datapoint_count"] == 3 and result["statistics"]["count"] == 3
    assert set(result["statistics"]) == {"min", "max", "mean", "median", "sum", "count"}
    assert result["datapoints"][0]["timestamp"].endswith("Z") or "+00:00" in result["datapoints"][0]["timestamp"]


def test_failures_are_answers_with_error_and_no_details(api, answering_backend):
    response = api.post(URL, {"query": "Show anomalies in CPU usage"}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["result"] is None
    assert body["error"] == {
        "error_type": "unsupported_operation",
        "message": "Anomaly detection is not supported.",
        "suggestion": body["error"]["suggestion"],
    }


def test_endpoint_is_in_the_openapi_schema(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/v1/metrics-query"]["post"]
    assert "200" in operation["responses"]


@pytest.fixture
def user_client(client, db):
    # Asking a question needs the evaluate scope (a staff session); test_page_scope.py covers readers.
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    client.force_login(user)
    return client


def test_page_requires_login(client, db):
    response = client.get("/metrics-query/")
    assert response.status_code == 302 and response["Location"].startswith("/console/login/?next=")


def test_page_without_backend_says_how_to_configure(user_client):
    html = user_client.get("/metrics-query/").content.decode()
    assert 'id="setup"' in html and "PROMETHEUS_URL" in html and "GRAFANA_TOKEN" in html


def test_page_shows_chart_statistics_promql_and_examples(user_client, answering_backend):
    html = user_client.get("/metrics-query/", {"q": "Show CPU usage for the last hour"}).content.decode()
    start = html.index('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 760')
    svg = html[start : html.index("</svg>", start) + 6]
    root = ElementTree.fromstring(svg)  # well-formed, label text escaped
    assert len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 1  # job a: a line
    assert len(root.findall("{http://www.w3.org/2000/svg}circle")) == 1  # job b: one point
    assert 'id="statistics"' in html
    assert "rate(process_cpu_seconds_total[120s])" in html
    assert 'id="examples"' in html and "Show CPU usage for the last hour" in html
    assert "<script>" not in html  # label values are escaped inside the SVG and the legend


def test_page_shows_the_error_and_its_suggestion(user_client, answering_backend):
    html = user_client.get("/metrics-query/", {"q": "Show widgetz for the last hour"}).content.decode()
    assert 'id="query-error"' in html and "metric_not_found" in html
    assert "Metric &#x27;widgetz&#x27; was not found." in html
    assert "Did you mean: process_cpu_seconds_total" in html


def test_page_shows_an_empty_result(user_client, canned_backend):
    html = user_client.get("/metrics-query/", {"q": "cpu"}).content.decode()
    assert 'id="empty-result"' in html
