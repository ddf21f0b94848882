import pytest

from apps.queues.models import QueueItem, ReviewQueue
from tests.agentic.factories import AgentEvaluationFactory
from tests.runs.factories import review_views

from .factories import QueueItemFactory, ReviewQueueFactory, reviewable_result

pytestmark = pytest.mark.django_db
QUEUES = "/api/v1/queues"


def test_staff_create_fill_and_review(staff_api):
    result = reviewable_result()
    queue = staff_api.post(
        QUEUES, {"name": "triage", "kind": "run_result", "include_unassessed": True}, format="json"
    ).json()
    assert staff_api.post(f"{QUEUES}/{queue['id']}/fill").json() == {"entered": 1, "total": 1}
    assert staff_api.post(f"{QUEUES}/{queue['id']}/fill").json() == {"entered": 0, "total": 1}
    items = staff_api.get(f"{QUEUES}/{queue['id']}/items").json()
    assert items["count"] == 1 and items["results"][0]["target_id"] == str(result.result_id)
    item_id = items["results"][0]["id"]
    response = staff_api.post(
        f"{QUEUES}/{queue['id']}/items/{item_id}/review",
        {"verdicts": [{"kind": "rule", "key": "USES_KB", "passed": True}]},
        format="json",
    )
    assert response.status_code == 200 and response.json()["reviewed_by"] == "staff-user"
    assert review_views(result)[0].judge_status == "skipped"
    got = staff_api.get(f"{QUEUES}/{queue['id']}").json()
    assert (got["total"], got["done"], got["left"]) == (1, 1, 0)


def test_readers_read_and_non_staff_cannot_write(api, default_key_api):
    item = QueueItemFactory()
    assert default_key_api.get(QUEUES).status_code == 200
    assert default_key_api.get(f"{QUEUES}/{item.queue_id}/items").status_code == 200
    # `api` holds configure but not review: queue work is a reviewer's scope, not an editor's config.
    assert api.post(QUEUES, {"name": "x", "kind": "run_result"}, format="json").status_code == 403
    assert api.post(f"{QUEUES}/{item.queue_id}/items/{item.pk}/claim").status_code == 403
    assert default_key_api.post(f"{QUEUES}/{item.queue_id}/fill").status_code == 403


def test_bad_input_and_unknown_ids(staff_api):
    queue = ReviewQueueFactory(kind="agentic_evaluation")
    assert staff_api.post(QUEUES, {"name": "x", "kind": "nope"}, format="json").status_code == 422
    assert staff_api.get(f"{QUEUES}/999999").status_code == 404
    assert staff_api.post(f"{QUEUES}/{queue.pk}/items", {"target_id": "424242"}, format="json").status_code == 404
    evaluation = AgentEvaluationFactory()
    added = staff_api.post(f"{QUEUES}/{queue.pk}/items", {"target_id": str(evaluation.pk)}, format="json")
    assert added.status_code == 201
    item_id = added.json()["id"]
    too_high = staff_api.post(
        f"{QUEUES}/{queue.pk}/items/{item_id}/review",
        {"verdicts": [{"key": "task_adherence", "score": 2}]},
        format="json",
    )
    assert too_high.status_code == 422
    assert (
        staff_api.post(f"{QUEUES}/{queue.pk}/items/{item_id}/assign", {"username": "ghost"}, format="json").status_code
        == 404
    )
    assert QueueItem.objects.get(pk=item_id).done_at is None


def test_add_names_the_kind_of_its_target(staff_api):
    """Agentic and RAG evaluation ids overlap: a client that says which it sends is refused (422)
    by a queue of the other kind, instead of adding the other object with that number."""
    from tests.rag.factories import TraceEvaluationFactory

    agentic = AgentEvaluationFactory()
    TraceEvaluationFactory(pk=agentic.pk)
    rag_queue = ReviewQueueFactory(kind="rag_evaluation")
    refused = staff_api.post(
        f"{QUEUES}/{rag_queue.pk}/items", {"target_id": str(agentic.pk), "kind": "agentic_evaluation"}, format="json"
    )
    assert refused.status_code == 422 and "not agentic evaluations" in refused.json()["detail"]
    assert not rag_queue.items.exists()
    added = staff_api.post(
        f"{QUEUES}/{rag_queue.pk}/items", {"target_id": str(agentic.pk), "kind": "rag_evaluation"}, format="json"
    )
    assert added.status_code == 201 and added.json()["kind"] == "rag_evaluation"
    assert (
        staff_api.post(f"{QUEUES}/{rag_queue.pk}/items", {"target_id": "1", "kind": "nope"}, format="json").status_code
        == 422
    )


def test_run_result_items_name_their_run_and_attempt(staff_api):
    """Issue 20 point 4: a queue item that is a run result says which run and which attempt it is;
    items of other kinds carry none of it."""
    from tests.runs.factories import EvaluationRunFactory

    run = EvaluationRunFactory(repeats=3, label="nightly")
    queue = ReviewQueueFactory(kind="run_result")
    attempt = reviewable_result(run=run, position=0, attempt=2)
    added = staff_api.post(f"{QUEUES}/{queue.pk}/items", {"target_id": str(attempt.result_id)}, format="json").json()
    expected = {"run_id": str(run.run_id), "run_label": "nightly", "attempt": 2, "repeats": 3}
    assert {k: added[k] for k in expected} == expected
    [listed] = staff_api.get(f"{QUEUES}/{queue.pk}/items").json()["results"]
    assert {k: listed[k] for k in expected} == expected
    agentic = ReviewQueueFactory(kind="agentic_evaluation")
    other = staff_api.post(
        f"{QUEUES}/{agentic.pk}/items", {"target_id": str(AgentEvaluationFactory().pk)}, format="json"
    ).json()
    assert not {"run_id", "run_label", "attempt", "repeats"} & set(other)


def test_the_api_speaks_per_cent_and_the_queue_keeps_a_rate(staff_api):
    """The queue API keeps its `sample_percent` (0..100); the model and services hold the one
    sampling unit, a 0..1 rate, converted at the API's edge both ways."""
    created = staff_api.post(QUEUES, {"name": "sampled", "kind": "run_result", "sample_percent": 7}, format="json")
    assert created.status_code == 201 and created.json()["sample_percent"] == 7.0
    queue = ReviewQueue.objects.get(name="sampled")
    assert queue.sample_rate == 0.07
    replaced = staff_api.put(
        f"{QUEUES}/{queue.pk}", {"name": "sampled", "kind": "run_result", "sample_percent": 100}, format="json"
    )
    assert replaced.json()["sample_percent"] == 100.0
    queue.refresh_from_db()
    assert queue.sample_rate == 1.0
    refused = staff_api.post(QUEUES, {"name": "over", "kind": "run_result", "sample_percent": 101}, format="json")
    assert refused.status_code == 422 and not ReviewQueue.objects.filter(name="over").exists()


def test_an_items_answer_alone_is_its_entry_in_the_list(staff_api):
    """One item's answer (read from its subject) and its list entry (annotated by the list's query)
    are the same fields and values, whatever the kind: the Out model reads both."""
    from tests.runs.factories import EvaluationRunFactory

    for queue, target in (
        (
            ReviewQueueFactory(kind="run_result"),
            lambda: reviewable_result(run=EvaluationRunFactory(repeats=2)).result_id,
        ),
        (ReviewQueueFactory(kind="agentic_evaluation"), lambda: AgentEvaluationFactory().pk),
    ):
        added = staff_api.post(f"{QUEUES}/{queue.pk}/items", {"target_id": str(target())}, format="json").json()
        claimed = staff_api.post(f"{QUEUES}/{queue.pk}/items/{added['id']}/claim").json()
        assert claimed["assigned_to"] == "staff-user" and claimed["claimed_at"] is not None
        [listed] = staff_api.get(f"{QUEUES}/{queue.pk}/items").json()["results"]
        assert listed == claimed
        assert {k: v for k, v in added.items() if k not in ("assigned_to", "claimed_at")} == {
            k: v for k, v in listed.items() if k not in ("assigned_to", "claimed_at")
        }


def test_a_queues_answer_names_its_creator_and_progress(staff_api):
    created = staff_api.post(QUEUES, {"name": "mine", "kind": "run_result", "sample_percent": 7}, format="json").json()
    assert (created["created_by"], created["total"], created["done"], created["left"]) == ("staff-user", 0, 0, 0)
    [listed] = staff_api.get(QUEUES).json()
    assert listed == created == staff_api.get(f"{QUEUES}/{created['id']}").json()
