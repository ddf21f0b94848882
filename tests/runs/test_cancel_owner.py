"""Issue 21, low finding: any key with `evaluate` cancelled anyone's run. A run is cancelled by the
person who started it or by an admin (the admin scope), in the API and in the console."""

import pytest

from apps.runs.models import EvaluationRun
from tests.core.factories import ApiKeyFactory, UserFactory, client_with_key
from tests.runs.factories import EvaluationRunFactory

pytestmark = pytest.mark.django_db
Status = EvaluationRun.Status


def key_client(username, staff=False, scopes=None):
    return client_with_key(ApiKeyFactory(user__username=username, user__is_staff=staff, scopes=scopes))


def pending_run_of(username):
    return EvaluationRunFactory(status=Status.PENDING, created_by=UserFactory(username=username))


def test_another_users_evaluate_key_cannot_cancel_a_run():
    run = pending_run_of("alice")
    response = key_client("mallory").post(f"/api/v1/runs/{run.run_id}/cancel")
    assert response.status_code == 403
    assert "started this run" in response.json()["detail"]
    run.refresh_from_db()
    assert run.status == Status.PENDING


def test_the_creator_cancels_their_own_run():
    alice = key_client("alice")
    run = pending_run_of("alice")
    response = alice.post(f"/api/v1/runs/{run.run_id}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"


def test_an_admin_cancels_anyones_run_and_staff_without_admin_does_not(staff_api):
    run = pending_run_of("alice")
    no_admin = key_client("operator", staff=True, scopes=["read", "evaluate", "configure"])
    assert no_admin.post(f"/api/v1/runs/{run.run_id}/cancel").status_code == 403
    assert staff_api.post(f"/api/v1/runs/{run.run_id}/cancel").status_code == 200
    run.refresh_from_db()
    assert run.status == Status.CANCELLED


def test_a_run_nobody_owns_is_cancelled_by_an_admin_only(staff_api):
    run = EvaluationRunFactory(status=Status.PENDING, created_by=None)
    assert key_client("someone").post(f"/api/v1/runs/{run.run_id}/cancel").status_code == 403
    assert staff_api.post(f"/api/v1/runs/{run.run_id}/cancel").status_code == 200


def test_the_console_applies_the_same_rule(client):
    """A console session holds read (not evaluate) unless staff, and staff hold admin: a reader gets
    the forbidden page, staff cancel; the service's owner check runs behind both."""
    run = pending_run_of("alice")
    client.force_login(run.created_by)
    assert client.post(f"/console/runs/{run.run_id}/cancel/").status_code == 403
    run.refresh_from_db()
    assert run.status == Status.PENDING
    client.force_login(UserFactory(username="boss", is_staff=True))
    client.post(f"/console/runs/{run.run_id}/cancel/")
    run.refresh_from_db()
    assert run.status == Status.CANCELLED


def test_the_service_refuses_a_non_admin_who_did_not_start_the_run():
    from apps.core.errors import ForbiddenError
    from apps.runs import services

    run = pending_run_of("alice")
    with pytest.raises(ForbiddenError):
        services.run_cancel(run=run, requested_by=UserFactory(username="bob"), admin=False)
    assert services.run_cancel(run=run, requested_by=run.created_by, admin=False).status == Status.CANCELLED
