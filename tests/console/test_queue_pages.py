"""The review queue pages: list, queue page (reviewers, left, agreement), reviewing page."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from apps.queues import services
from apps.queues.models import QueueItem, QueueKind, ReviewQueue
from apps.runs.models import EvaluationResult
from apps.scores.models import Score
from apps.scores.vocabulary import SubjectKind
from tests.agentic.factories import AgentEvaluationFactory
from tests.core.factories import UserFactory
from tests.queues.factories import QueueItemFactory, ReviewQueueFactory, reviewable_result
from tests.runs.factories import verdict_reviews

pytestmark = pytest.mark.django_db


def test_list_creates_and_fills_a_queue(staff_client):
    reviewable_result()
    response = staff_client.post(
        "/console/queues/",
        {"name": "Unassessed", "kind": "run_result", "include_unassessed": "on", "sample_percent": "0"},
    )
    queue = ReviewQueue.objects.get(name="Unassessed")
    assert response.status_code == 302 and response["Location"] == f"/console/queues/{queue.pk}/"
    assert queue.items.count() == 1
    page = staff_client.get("/console/queues/").content.decode()
    assert "Unassessed" in page and "0/1 done" in page and "errors &amp; skipped" in page
    # The form speaks per cent; the queue keeps the 0..1 rate, and its rule is shown in per cent.
    staff_client.post("/console/queues/", {"name": "Sampled", "kind": "run_result", "sample_percent": "12.5"})
    assert ReviewQueue.objects.get(name="Sampled").sample_rate == 0.125
    assert "12.5% sample" in staff_client.get("/console/queues/").content.decode()


def test_readers_read_but_cannot_create_or_review(reader_client):
    item = QueueItemFactory()
    assert reader_client.get("/console/queues/").status_code == 200
    assert "New queue" not in reader_client.get("/console/queues/").content.decode()
    assert reader_client.get(f"/console/queues/{item.queue_id}/").status_code == 200
    assert reader_client.post("/console/queues/", {"name": "x", "kind": "run_result"}).status_code == 403
    url = f"/console/queues/{item.queue_id}/items/{item.pk}/"
    assert "Reviewing needs a staff account" in reader_client.get(url).content.decode()
    assert (
        reader_client.post(url, {"rows": "1", "v-0-kind": "rule", "v-0-key": "BRIEF", "v-0-passed": "fail"}).status_code
        == 403
    )


def test_reviewing_saves_and_moves_to_the_next_item(staff_client, staff_user):
    queue = ReviewQueueFactory()
    first, second = QueueItemFactory(queue=queue), QueueItemFactory(queue=queue)
    assert (
        staff_client.get(f"/console/queues/{queue.pk}/review/")["Location"]
        == f"/console/queues/{queue.pk}/items/{first.pk}/"
    )
    page = staff_client.get(f"/console/queues/{queue.pk}/items/{first.pk}/").content.decode()
    # The answer and the expected outcome sit beside the verdicts.
    assert "hello" in page and "Cites the handbook" in page and 'id="next-item"' in page
    response = staff_client.post(
        f"/console/queues/{queue.pk}/items/{first.pk}/",
        {
            "rows": "4",
            "v-0-kind": "criterion",
            "v-0-key": "Mentions 15 days",
            "v-1-kind": "criterion",
            "v-1-key": "Cites the handbook",
            "v-1-passed": "pass",
            "v-3-kind": "rule",
            "v-3-key": "USES_KB",
            "v-3-passed": "fail",
            "note": "handbook cited",
        },
    )
    assert response["Location"] == f"/console/queues/{queue.pk}/items/{second.pk}/"
    first.refresh_from_db()
    assert first.done_at is not None and first.reviewed_by == staff_user
    # Only the marked rows were recorded; the unmarked criterion stays as the judge gave it.
    assert sorted(
        verdict_reviews(result=EvaluationResult.objects.get(pk=first.subject_id)).values_list(
            "key", "passed", "reasoning"
        )
    ) == [("Cites the handbook", True, "handbook cited"), ("USES_KB", False, "handbook cited")]


def test_agentic_and_rag_items_are_reviewed_on_the_page(staff_client):
    agentic = QueueItemFactory(queue=ReviewQueueFactory(kind=QueueKind.AGENTIC_EVALUATION))
    url = f"/console/queues/{agentic.queue_id}/items/{agentic.pk}/"
    assert "tool call accuracy" in staff_client.get(url).content.decode()
    staff_client.post(url, {"rows": "3", "v-0-kind": "metric", "v-0-key": "task_adherence", "v-0-score": "0.25"})
    human = Score.objects.human().get(subject_kind=SubjectKind.AGENTIC_EVALUATION, subject_id=agentic.subject_id)
    assert (human.key, human.value) == ("task_adherence", 0.25)
    rag = QueueItemFactory(queue=ReviewQueueFactory(kind=QueueKind.RAG_EVALUATION))
    url = f"/console/queues/{rag.queue_id}/items/{rag.pk}/"
    assert "Paris is the capital of France." in staff_client.get(url).content.decode()
    staff_client.post(url, {"rows": "1", "v-0-kind": "metric", "v-0-key": "context_recall", "v-0-passed": "fail"})
    human = Score.objects.human().get(subject_kind=SubjectKind.RAG_EVALUATION, subject_id=rag.subject_id)
    assert (human.key, human.passed) == ("context_recall", False)
    agreement = staff_client.get(f"/console/queues/{rag.queue_id}/").content.decode()
    assert "context recall" in agreement


def test_add_to_queue_from_a_list_returns_to_it(staff_client):
    queue = ReviewQueueFactory(kind=QueueKind.AGENTIC_EVALUATION)
    evaluation = AgentEvaluationFactory()
    response = staff_client.post(
        "/console/queues/add/", {"queue": queue.pk, "target_id": str(evaluation.pk), "next": "/console/runs/"}
    )
    assert response["Location"] == "/console/runs/"
    staff_client.post("/console/queues/add/", {"queue": queue.pk, "target_id": str(evaluation.pk)})
    assert queue.items.count() == 1


def test_unknown_queue_and_item_are_404s(staff_client):
    queue = ReviewQueueFactory()
    assert staff_client.get("/console/queues/999999/").status_code == 404
    assert staff_client.get(f"/console/queues/{queue.pk}/items/999999/").status_code == 404


def _count(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


@pytest.mark.parametrize("kind", [QueueKind.RUN_RESULT, QueueKind.AGENTIC_EVALUATION, QueueKind.RAG_EVALUATION])
def test_queue_page_queries_do_not_grow_with_items(staff_client, kind):
    """The queue page reads the same number of queries with 3 items and reviewers as with 60."""
    reviewers = [UserFactory() for _ in range(3)]

    def build(n):
        queue = ReviewQueueFactory(kind=kind)
        for i in range(n):
            item = QueueItemFactory(queue=queue, assigned_to=reviewers[i % 3])
            if i % 2:
                verdict = (
                    {"kind": "rule", "key": "BRIEF", "passed": False}
                    if kind == QueueKind.RUN_RESULT
                    else {"key": "task_adherence", "score": 0.2}
                    if kind == QueueKind.AGENTIC_EVALUATION
                    else {"key": "context_recall", "passed": True}
                )
                services.queue_item_review(item=item, reviewer=reviewers[i % 3], verdicts=[verdict])
        return queue

    small, large = build(3), build(60)
    assert QueueItem.objects.filter(queue=large).count() == 60
    assert _count(staff_client, f"/console/queues/{small.pk}/") == _count(staff_client, f"/console/queues/{large.pk}/")
    assert _count(staff_client, "/console/queues/") == _count(staff_client, "/console/queues/")


def test_trace_page_offers_add_to_queue_for_each_evaluation(staff_client, reader_user):
    queue = ReviewQueueFactory(kind=QueueKind.AGENTIC_EVALUATION, name="Spot checks")
    evaluation = AgentEvaluationFactory()
    AgentEvaluationFactory(trace=evaluation.trace)
    page = staff_client.get(f"/console/traces/{evaluation.trace.session_id}/").content.decode()
    assert page.count("Add to queue") == 2 and "Spot checks" in page
    staff_client.post("/console/queues/add/", {"queue": queue.pk, "target_id": str(evaluation.pk)})
    assert queue.items.get().subject_id == evaluation.pk
    reader_client = Client()
    reader_client.force_login(reader_user)
    assert "Add to queue" not in reader_client.get(f"/console/traces/{evaluation.trace.session_id}/").content.decode()


def test_result_page_offers_add_to_queue(staff_client):
    queue = ReviewQueueFactory(kind=QueueKind.RUN_RESULT, name="Failed answers")
    result = reviewable_result()
    page = staff_client.get(f"/console/results/{result.result_id}/").content.decode()
    assert page.count("Add to queue") == 1 and "Failed answers" in page
    staff_client.post("/console/queues/add/", {"queue": queue.pk, "target_id": str(result.result_id)})
    assert queue.items.get().subject_id == result.pk


def test_assign_and_claim_from_the_pages(staff_client, staff_user):
    item = QueueItemFactory()
    other = UserFactory(username="other", is_staff=True)
    page = staff_client.get(f"/console/queues/{item.queue_id}/").content.decode()
    assert "<option>other</option>" in page
    staff_client.post(
        f"/console/queues/{item.queue_id}/items/{item.pk}/assign/",
        {"username": "other", "next": "https://evil.example/"},
    )
    item.refresh_from_db()
    assert item.assigned_to == other
    # Assigned to someone else: the claim is refused, and the reviewer is told why.
    response = staff_client.post(f"/console/queues/{item.queue_id}/items/{item.pk}/claim/", follow=True)
    assert "assigned to other" in response.content.decode()
    staff_client.post(f"/console/queues/{item.queue_id}/items/{item.pk}/assign/", {"username": ""})
    staff_client.post(f"/console/queues/{item.queue_id}/items/{item.pk}/claim/")
    item.refresh_from_db()
    assert item.assigned_to == staff_user and item.claimed_at is not None


def test_admin_lists_queues_with_progress(client, db):
    admin = UserFactory(username="admin", is_staff=True, is_superuser=True)
    client.force_login(admin)
    item = QueueItemFactory()
    page = client.get("/admin/queues/reviewqueue/").content.decode()
    assert item.queue.name in page and "0/1" in page and f"/console/queues/{item.queue_id}/" in page
