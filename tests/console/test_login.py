"""The console's own login (issue 15: readers could not log in at the admin's) and the compare
page's entry: a landing page to pick two runs, and 404s for ids that are not runs."""

import uuid

import pytest

from apps.runs.models import EvaluationRun
from tests.core.factories import UserFactory
from tests.runs.factories import EvaluationRunFactory
from tests.testsets.factories import SuiteFactory

pytestmark = pytest.mark.django_db


def test_a_reader_logs_in_reads_and_logs_out(client):
    UserFactory(username="reader")
    page = client.get("/console/login/")
    assert page.status_code == 200 and 'id="login-form"' in page.content.decode()
    wrong = client.post("/console/login/", {"username": "reader", "password": "nope"})
    assert wrong.status_code == 200 and "errornote" in wrong.content.decode()
    response = client.post(
        "/console/login/?next=/console/traces/", {"username": "reader", "password": "pw", "next": "/console/traces/"}
    )
    assert response.status_code == 302 and response["Location"] == "/console/traces/"
    dashboard = client.get("/console/")
    assert dashboard.status_code == 200
    html = dashboard.content.decode()
    assert 'action="/console/logout/"' in html and "Launch a run" not in html and 'href="/admin/"' not in html
    assert client.get("/console/runs/new/").status_code == 403
    # Readers are not let into the admin, which stays staff's.
    assert client.get("/admin/").status_code == 302
    out = client.post("/console/logout/")
    assert out.status_code == 302 and out["Location"] == "/console/login/"
    assert client.get("/console/").status_code == 302


def test_staff_log_in_and_also_launch(client):
    UserFactory(username="boss", is_staff=True)
    assert client.post("/console/login/", {"username": "boss", "password": "pw"})["Location"] == "/console/"
    html = client.get("/console/").content.decode()
    assert "Launch a run" in html and 'href="/admin/"' in html
    assert client.get("/console/runs/new/").status_code == 200


def test_a_logged_in_user_is_sent_on_from_the_login_page(reader_client):
    assert reader_client.get("/console/login/")["Location"] == "/console/"


def test_an_inactive_user_cannot_log_in(client):
    UserFactory(username="gone", is_active=False)
    assert client.post("/console/login/", {"username": "gone", "password": "pw"}).status_code == 200
    assert client.get("/console/").status_code == 302


@pytest.mark.parametrize(
    "query",
    [
        "base={run}&head=nope",
        "base=nope&head={run}",
        "base=&head=x",
        "base={missing}&head={run}",
        "base={run}&head={run}x",
    ],
)
def test_compare_with_a_bad_id_is_404(staff_client, query):
    run = EvaluationRunFactory()
    url = "/console/runs/compare/?" + query.format(run=run.run_id, missing=uuid.uuid4())
    assert staff_client.get(url).status_code == 404


def test_compare_landing_offers_recent_runs_by_name(staff_client, django_assert_max_num_queries):
    test_set = SuiteFactory(name="PTO questions")
    older = EvaluationRunFactory(test_set_id=test_set.pk, test_set_version=2)
    newer = EvaluationRunFactory(test_set_id=test_set.pk, test_set_version=2)
    page = staff_client.get("/console/runs/compare/")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="compare-pick"' in html
    assert "PTO questions v2" in html and html.count(f'value="{older.run_id}"') == 2
    # The newest run is the head, the one before it the base.
    assert f'value="{newer.run_id}" selected' in html.split('name="head"')[1].split("</select>")[0]
    assert f'value="{older.run_id}" selected' in html.split('name="base"')[1].split("</select>")[0]
    # One run given: the other is to pick, the given one preselected.
    one = staff_client.get(f"/console/runs/compare/?base={newer.run_id}").content.decode()
    assert f'value="{newer.run_id}" selected' in one.split('name="base"')[1].split("</select>")[0]
    EvaluationRunFactory.create_batch(30, test_set_id=test_set.pk)
    with django_assert_max_num_queries(6):
        assert staff_client.get("/console/runs/compare/").status_code == 200


def test_compare_landing_without_runs(staff_client):
    assert not EvaluationRun.objects.exists()
    assert "No runs yet" in staff_client.get("/console/runs/compare/").content.decode()
