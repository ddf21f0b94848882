"""Queues and items written straight to the database; targets come from the runs, agentic and rag factories."""

import factory

from apps.queues.models import QueueItem, QueueKind, ReviewQueue
from tests.agentic.factories import AgentEvaluationFactory
from tests.rag.factories import TraceEvaluationFactory
from tests.runs.factories import EvaluationResultFactory, criterion, rule


class ReviewQueueFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ReviewQueue

    name = factory.Sequence(lambda n: f"queue {n}")
    kind = QueueKind.RUN_RESULT


class QueueItemFactory(factory.django.DjangoModelFactory):
    """An item of a run-result queue; pass `queue=` of another kind with its target."""

    class Meta:
        model = QueueItem

    queue = factory.SubFactory(ReviewQueueFactory)
    result = factory.LazyAttribute(lambda o: reviewable_result() if o.queue.kind == QueueKind.RUN_RESULT else None)
    agent_evaluation = factory.LazyAttribute(
        lambda o: AgentEvaluationFactory() if o.queue.kind == QueueKind.AGENTIC_EVALUATION else None)
    rag_evaluation = factory.LazyAttribute(
        lambda o: TraceEvaluationFactory() if o.queue.kind == QueueKind.RAG_EVALUATION else None)


def reviewable_result(**kwargs):
    """A finished result with two criteria (one failed) and two rules (one skipped by the judge)."""
    kwargs.setdefault("criteria_scores", [criterion("Mentions 15 days", True), criterion("Cites the handbook", False)])
    kwargs.setdefault("rubric_scores", [rule("BRIEF", True, severity="medium"),
                                        rule("USES_KB", False, status="skipped")])
    return EvaluationResultFactory(**kwargs)
