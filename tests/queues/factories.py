"""Queues and items written straight to the database; subjects come from the runs, agentic and rag
factories, each with the machine Score rows its judge would have stored (the convention of issue 22)."""

import factory

from apps.agentic.models import AgentEvaluation
from apps.core.models import Project
from apps.queues.models import QueueItem, QueueKind, ReviewQueue
from apps.rag.models import TraceEvaluation
from apps.runs.models import EvaluationResult
from apps.scores.models import Score
from apps.scores.vocabulary import JudgeStatus, ScoreKind, ScoreSource, SubjectKind
from tests.agentic.factories import AgentEvaluationFactory
from tests.rag.factories import TraceEvaluationFactory
from tests.runs.factories import EvaluationResultFactory, criterion, rule

SUBJECT_KINDS = {
    EvaluationResult: SubjectKind.RUN_RESULT,
    AgentEvaluation: SubjectKind.AGENTIC_EVALUATION,
    TraceEvaluation: SubjectKind.RAG_EVALUATION,
}


def machine_score(
    subject,
    key: str,
    *,
    value: float | None = None,
    passed: bool | None = None,
    status: str = JudgeStatus.OK,
    kind: str = ScoreKind.METRIC,
    **fields,
) -> Score:
    """The judge's score of one key of a subject, as its app stores it."""
    fields.setdefault("source", ScoreSource.CODE)
    fields.setdefault("judge", "heuristic:v1")
    return Score.objects.create(
        subject_kind=SUBJECT_KINDS[type(subject)],
        subject_id=subject.pk,
        kind=kind,
        key=key,
        value=value,
        passed=passed,
        status=status,
        **fields,
    )


def scored_agentic(**kwargs) -> AgentEvaluation:
    return AgentEvaluationFactory(**kwargs)


def scored_rag(**kwargs) -> TraceEvaluation:
    return TraceEvaluationFactory(**kwargs)


def scored_result(**kwargs) -> EvaluationResult:
    return EvaluationResultFactory(**kwargs)


def reviewable_result(**kwargs):
    """A finished result with two criteria (one failed) and two rules (one skipped by the judge)."""
    kwargs.setdefault("criteria_scores", [criterion("Mentions 15 days", True), criterion("Cites the handbook", False)])
    kwargs.setdefault(
        "rubric_scores", [rule("BRIEF", True, severity="medium"), rule("USES_KB", False, status="skipped")]
    )
    return scored_result(**kwargs)


class ReviewQueueFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ReviewQueue

    project = factory.LazyFunction(Project.objects.default)
    name = factory.Sequence(lambda n: f"queue {n}")
    kind = QueueKind.RUN_RESULT


def _new_subject(kind: str):
    return {
        QueueKind.RUN_RESULT: reviewable_result,
        QueueKind.AGENTIC_EVALUATION: scored_agentic,
        QueueKind.RAG_EVALUATION: scored_rag,
    }[kind]()


class QueueItemFactory(factory.django.DjangoModelFactory):
    """An item of a run-result queue; pass `queue=` of another kind, and `subject=` to name the
    subject (else a new one of the queue's kind, with its judge's scores)."""

    class Meta:
        model = QueueItem

    class Params:
        subject = None
        # The names of the foreign keys items had before issue 22, which other apps' tests still pass.
        result = agent_evaluation = rag_evaluation = None

    queue = factory.SubFactory(ReviewQueueFactory)
    subject_kind = factory.LazyAttribute(lambda o: o.queue.kind)
    subject_id = factory.LazyAttribute(
        lambda o: (o.subject or o.result or o.agent_evaluation or o.rag_evaluation or _new_subject(o.queue.kind)).pk
    )
