"""A queue item names its subject by kind + id, with no foreign key to cascade: the receivers in
apps.queues.receivers remove the items of a subject when it goes, however it goes."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.agentic.models import AgentEvaluation
from apps.queues.models import QueueItem, QueueKind
from apps.rag.models import TraceEvaluation
from apps.runs.models import EvaluationResult
from tests.agentic.factories import AgentEvaluationFactory
from tests.rag.factories import TraceEvaluationFactory
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory

from .factories import QueueItemFactory, ReviewQueueFactory

pytestmark = pytest.mark.django_db


def test_deleting_one_subject_removes_its_items_in_every_queue_and_nothing_else():
    first, second = ReviewQueueFactory(), ReviewQueueFactory()
    doomed = QueueItemFactory(queue=first)
    QueueItemFactory(queue=second, subject_kind=QueueKind.RUN_RESULT, subject_id=doomed.subject_id)
    kept = QueueItemFactory(queue=first)
    EvaluationResult.objects.get(pk=doomed.subject_id).delete()
    assert list(QueueItem.objects.values_list("pk", flat=True)) == [kept.pk]


def test_an_agentic_evaluation_and_a_rag_evaluation_of_the_same_number_are_told_apart():
    agentic = AgentEvaluationFactory()
    rag = TraceEvaluationFactory(pk=agentic.pk)
    agentic_item = QueueItemFactory(queue=ReviewQueueFactory(kind=QueueKind.AGENTIC_EVALUATION), subject=agentic)
    rag_item = QueueItemFactory(queue=ReviewQueueFactory(kind=QueueKind.RAG_EVALUATION), subject=rag)
    agentic.delete()
    # Only the agentic item goes: the RAG evaluation numbered alike is another subject.
    assert list(QueueItem.objects.values_list("pk", flat=True)) == [rag_item.pk]
    assert agentic_item.subject_kind != rag_item.subject_kind
    TraceEvaluation.objects.filter(pk=rag.pk).delete()  # a queryset delete sends post_delete per object too
    assert not QueueItem.objects.exists()


def test_bulk_deletes_of_evaluations_remove_their_items():
    queue = ReviewQueueFactory(kind=QueueKind.AGENTIC_EVALUATION)
    for _ in range(3):
        QueueItemFactory(queue=queue)
    AgentEvaluation.objects.all().delete()
    assert not queue.items.exists()


def test_deleting_a_run_removes_the_items_of_its_results_in_one_query():
    run, other_run = EvaluationRunFactory(), EvaluationRunFactory()
    queue = ReviewQueueFactory()
    for _ in range(4):
        QueueItemFactory(queue=queue, subject=EvaluationResultFactory(run=run))
    kept = QueueItemFactory(queue=queue, subject=EvaluationResultFactory(run=other_run))
    with CaptureQueriesContext(connection) as captured:
        run.delete()
    assert list(queue.items.values_list("pk", flat=True)) == [kept.pk]
    # The run's pre_delete receiver removed them all at once; each result's post_delete, seeing
    # the run as the deletion's origin, adds no query of its own.
    item_deletes = [q["sql"] for q in captured.captured_queries if 'DELETE FROM "queues_queueitem"' in q["sql"]]
    assert len(item_deletes) == 1, item_deletes
