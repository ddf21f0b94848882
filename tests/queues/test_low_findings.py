"""Issue 21, low findings on review queues: a DELETE needs the admin scope like every other DELETE,
and an item assigned to someone else cannot be reviewed (409, like claiming it)."""

import pytest

from apps.queues.models import QueueItem, ReviewQueue
from tests.core.factories import ApiKeyFactory, UserFactory, client_with_key
from tests.runs.factories import verdict_reviews

from .factories import QueueItemFactory, ReviewQueueFactory

pytestmark = pytest.mark.django_db
QUEUES = "/api/v1/queues"


def staff_client(username, scopes):
    return client_with_key(ApiKeyFactory(user__username=username, user__is_staff=True, scopes=scopes))


def test_deleting_a_queue_needs_the_admin_scope(staff_api):
    queue = ReviewQueueFactory()
    configure_only = staff_client("configurer", ["read", "configure"])
    refused = configure_only.delete(f"{QUEUES}/{queue.pk}")
    assert refused.status_code == 403 and "admin" in refused.json()["detail"]
    assert ReviewQueue.objects.filter(pk=queue.pk).exists()
    assert staff_api.delete(f"{QUEUES}/{queue.pk}").status_code == 204
    assert not ReviewQueue.objects.filter(pk=queue.pk).exists()


def test_reviewing_an_item_assigned_to_someone_else_is_409_like_claiming_it(staff_api):
    item = QueueItemFactory(assigned_to=UserFactory(username="alice", is_staff=True))
    body = {"verdicts": [{"kind": "rule", "key": "USES_KB", "passed": True}]}
    claim = staff_api.post(f"{QUEUES}/{item.queue_id}/items/{item.pk}/claim")
    review = staff_api.post(f"{QUEUES}/{item.queue_id}/items/{item.pk}/review", body, format="json")
    assert claim.status_code == review.status_code == 409
    assert review.json() == {"detail": "This item is assigned to alice"}
    item.refresh_from_db()
    assert item.done_at is None and item.reviewed_by is None and not verdict_reviews().exists()


def test_the_assignee_and_anyone_on_an_unassigned_item_still_review(staff_api):
    body = {"verdicts": [{"kind": "rule", "key": "USES_KB", "passed": True}]}
    mine = QueueItemFactory(assigned_to=UserFactory(username="staff-user", is_staff=True))
    free = QueueItemFactory()
    for item in (mine, free):
        response = staff_api.post(f"{QUEUES}/{item.queue_id}/items/{item.pk}/review", body, format="json")
        assert response.status_code == 200 and response.json()["reviewed_by"] == "staff-user"
    assert QueueItem.objects.get(pk=free.pk).assigned_to.username == "staff-user"


def test_the_console_refuses_to_review_an_item_assigned_to_someone_else(client):
    reviewer = UserFactory(username="bob", is_staff=True)
    item = QueueItemFactory(assigned_to=UserFactory(username="alice", is_staff=True))
    client.force_login(reviewer)
    response = client.post(
        f"/console/queues/{item.queue_id}/items/{item.pk}/",
        {"rows": "1", "v-0-kind": "rule", "v-0-key": "USES_KB", "v-0-passed": "pass"},
        follow=True,
    )
    assert "assigned to alice" in response.content.decode()
    item.refresh_from_db()
    assert item.done_at is None and not verdict_reviews().exists()


@pytest.mark.parametrize(
    "query", ["offset=6518572988410869546501250317490847744", "limit=99999999999999999999999", "offset=-1", "limit=0"]
)
def test_out_of_range_paging_is_422_not_500(staff_api, query):
    """Found by the fuzzer (bin/fuzz-api): an offset past 64 bits reached the database as a 500."""
    item = QueueItemFactory()
    response = staff_api.get(f"{QUEUES}/{item.queue_id}/items?{query}")
    assert response.status_code == 422 and "detail" in response.json()
