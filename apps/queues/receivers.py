"""A queue item names its subject by kind + id, with no foreign key to cascade from the subject's
app (a queue can hold any scored subject). These receivers, connected in QueuesConfig.ready, remove
the items of a subject when it is deleted, however it is deleted: one object, a queryset (Django
sends post_delete per object of a model that has receivers) or a run's cascade to its results."""

from django.db.models import QuerySet

from apps.agentic.models import AgentEvaluation
from apps.rag.models import TraceEvaluation
from apps.runs.models import EvaluationResult, EvaluationRun
from apps.scores.vocabulary import SubjectKind

from .models import QueueItem


def _items_of(subject_kind: str, subject_ids):
    return QueueItem.objects.filter(subject_kind=subject_kind, subject_id__in=subject_ids)


def _from_a_run(origin) -> bool:
    return isinstance(origin, EvaluationRun) or (isinstance(origin, QuerySet) and origin.model is EvaluationRun)


def run_items_delete(sender, instance: EvaluationRun, **kwargs) -> None:
    """Before a run goes: the items of all its results in one query, while the results still exist
    to join against, rather than one query per result as the cascade deletes them."""
    _items_of(SubjectKind.RUN_RESULT, EvaluationResult.objects.filter(run_id=instance.pk).values("pk")).delete()


def result_items_delete(sender, instance: EvaluationResult, origin=None, **kwargs) -> None:
    if _from_a_run(origin):
        return  # run_items_delete removed them before the cascade
    _items_of(SubjectKind.RUN_RESULT, [instance.pk]).delete()


def agentic_items_delete(sender, instance: AgentEvaluation, **kwargs) -> None:
    _items_of(SubjectKind.AGENTIC_EVALUATION, [instance.pk]).delete()


def rag_items_delete(sender, instance: TraceEvaluation, **kwargs) -> None:
    _items_of(SubjectKind.RAG_EVALUATION, [instance.pk]).delete()


def subjects_items_delete(sender, subject_kind: str, subject_ids, **kwargs) -> None:
    """Subjects deleted in bulk (apps.scores.signals.subjects_deleted): their items, in one query."""
    _items_of(subject_kind, subject_ids).delete()
