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


def _new_subject(kind: str):
    return {QueueKind.RUN_RESULT: reviewable_result, QueueKind.AGENTIC_EVALUATION: AgentEvaluationFactory,
            QueueKind.RAG_EVALUATION: TraceEvaluationFactory}[kind]()


class QueueItemFactory(factory.django.DjangoModelFactory):
    """An item of a run-result queue; pass `queue=` of another kind, and `subject=` to name the
    subject (else a new one of the queue's kind)."""

    class Meta:
        model = QueueItem

    class Params:
        subject = None
        # The names of the foreign keys items had before issue 22, which other apps' tests still pass.
        result = agent_evaluation = rag_evaluation = None

    queue = factory.SubFactory(ReviewQueueFactory)
    subject_kind = factory.LazyAttribute(lambda o: o.queue.kind)
    subject_id = factory.LazyAttribute(
        lambda o: (o.subject or o.result or o.agent_evaluation or o.rag_evaluation or _new_subject(o.queue.kind)).pk)


def reviewable_result(**kwargs):
    """A finished result with two criteria (one failed) and two rules (one skipped by the judge)."""
    kwargs.setdefault("criteria_scores", [criterion("Mentions 15 days", True), criterion("Cites the handbook", False)])
    kwargs.setdefault("rubric_scores", [rule("BRIEF", True, severity="medium"),
                                        rule("USES_KB", False, status="skipped")])
    return EvaluationResultFactory(**kwargs)
