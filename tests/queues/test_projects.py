"""Projects and review queues: a queue and its items belong to one project. A key of project B
(staff, admin there: every queue write allowed) cannot see, edit, fill, delete or work project A's
queue (404, as for one that does not exist), cannot put A's run results or evaluations in its own
queue, and a queue's rule fills it from its own project only."""

import pytest

from apps.core.models import ALL_SCOPES, ProjectRole
from apps.queues.models import QueueItem, ReviewQueue
from tests.core.factories import ApiKeyFactory, MembershipFactory, ProjectFactory, UserFactory, client_with_key
from tests.runs.factories import EvaluationRunFactory

from .factories import QueueItemFactory, ReviewQueueFactory, reviewable_result

pytestmark = pytest.mark.django_db
QUEUES = "/api/v1/queues"


@pytest.fixture
def a():
    project = ProjectFactory(slug="team-a", name="Team A")
    run = EvaluationRunFactory(project=project)
    result = reviewable_result(run=run)
    queue = ReviewQueueFactory(project=project, name="A's triage", include_unassessed=True)
    item = QueueItemFactory(queue=queue, subject=result)
    return {"project": project, "queue": queue, "item": item, "result": result}


def _staff_admin_client(project, username):
    user = UserFactory(username=username, is_staff=True, password=None)
    MembershipFactory(project=project, user=user, role=ProjectRole.ADMIN)
    client = client_with_key(ApiKeyFactory(user=user, project=project, scopes=list(ALL_SCOPES)))
    client.project = project
    return client


@pytest.fixture
def b():
    return _staff_admin_client(ProjectFactory(slug="team-b", name="Team B"), "b-admin")


def test_b_sees_and_works_nothing_of_a_s_queue(a, b):
    queue, item = a["queue"], a["item"]
    assert b.get(QUEUES).json() == []
    for path in [f"{QUEUES}/{queue.pk}", f"{QUEUES}/{queue.pk}/items"]:
        response = b.get(path)
        assert response.status_code == 404 and "A's" not in response.content.decode(), path
    body = {"name": "taken over", "kind": "run_result"}
    assert b.put(f"{QUEUES}/{queue.pk}", body, format="json").status_code == 404
    assert b.post(f"{QUEUES}/{queue.pk}/fill").status_code == 404
    assert b.post(f"{QUEUES}/{queue.pk}/items", {"target_id": "1"}, format="json").status_code == 404
    for action, payload in [
        ("assign", {"username": "b-admin"}),
        ("claim", None),
        ("review", {"verdicts": [{"kind": "rule", "key": "USES_KB", "passed": True}]}),
    ]:
        response = b.post(f"{QUEUES}/{queue.pk}/items/{item.pk}/{action}", payload, format="json")
        assert response.status_code == 404, action
    assert b.delete(f"{QUEUES}/{queue.pk}").status_code == 404
    queue.refresh_from_db(), item.refresh_from_db()
    assert queue.name == "A's triage" and item.assigned_to is None and item.done_at is None


def test_a_queue_takes_only_its_own_project_s_subjects(a, b):
    """B's queue: naming A's run result is as naming one that does not exist, and its rule (which
    A's unassessed result would match) fills it with B's results only."""
    created = b.post(QUEUES, {"name": "B's triage", "kind": "run_result", "include_unassessed": True}, format="json")
    assert created.status_code == 201
    queue_id = created.json()["id"]
    added = b.post(f"{QUEUES}/{queue_id}/items", {"target_id": str(a["result"].result_id)}, format="json")
    assert added.status_code == 404
    assert b.post(f"{QUEUES}/{queue_id}/fill").json() == {"entered": 0, "total": 0}
    own = reviewable_result(run=EvaluationRunFactory(project=b.project))
    assert b.post(f"{QUEUES}/{queue_id}/fill").json() == {"entered": 1, "total": 1}
    assert list(QueueItem.objects.filter(queue_id=queue_id).values_list("subject_id", flat=True)) == [own.pk]


def test_queue_names_are_unique_per_project(a, b):
    """The same name in another project is another queue: B learns nothing from a conflict."""
    assert b.post(QUEUES, {"name": "A's triage", "kind": "run_result"}, format="json").status_code == 201
    assert b.post(QUEUES, {"name": "A's triage", "kind": "run_result"}, format="json").status_code == 409
    assert ReviewQueue.objects.filter(name="A's triage").count() == 2


def test_items_are_assigned_only_to_people_of_the_queue_s_project(a, b):
    """Assigning B's item to someone of A only is answered as for a user that does not exist."""
    _staff_admin_client(a["project"], "a-admin")
    queue = ReviewQueueFactory(project=b.project)
    item = QueueItemFactory(queue=queue, subject=reviewable_result(run=EvaluationRunFactory(project=b.project)))
    outsider = b.post(f"{QUEUES}/{queue.pk}/items/{item.pk}/assign", {"username": "a-admin"}, format="json")
    assert outsider.status_code == 404 and outsider.json() == {"detail": "No active user 'a-admin'"}
    insider = b.post(f"{QUEUES}/{queue.pk}/items/{item.pk}/assign", {"username": "b-admin"}, format="json")
    assert insider.status_code == 200
