"""Queues read judgements only from Score rows (issue 22): the fill rules are EXISTS / count queries
over the subjects' machine scores, and agreement pairs each human score in force with the judge's
own score of the same subject, kind and key (apps.scores.agreement), never a copy."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.core.models import Project
from apps.queues import selectors, services
from apps.queues.models import QueueKind
from apps.runs.models import EvaluationResult
from apps.scores.models import Score
from apps.scores.services import human_score_record
from apps.scores.vocabulary import JudgeStatus, ScoreKind, SubjectKind
from tests.core.factories import UserFactory
from tests.runs.factories import criterion, rule

from .factories import QueueItemFactory, ReviewQueueFactory, machine_score, scored_agentic, scored_rag, scored_result

pytestmark = pytest.mark.django_db


def _subjects(queue) -> set[int]:
    return set(queue.items.values_list("subject_id", flat=True))


def test_run_result_rules_read_the_verdict_rows():
    errored = scored_result(criteria_scores=[criterion("a", True, status="error")])
    third = scored_result(criteria_scores=[criterion("a", True), criterion("b", False), criterion("c", False)])
    half = scored_result(criteria_scores=[criterion("a", True)], rubric_scores=[rule("R", False)])
    green = scored_result(criteria_scores=[criterion("a", True)], rubric_scores=[rule("R", True)])
    below = services.queue_create(
        project=Project.objects.default(), name="below half", kind=QueueKind.RUN_RESULT, score_below=0.5
    )
    services.queue_fill(queue=below)
    # 1/3 passed is below 0.5; 1/2 is not; the errored result has nothing assessed, so no share.
    assert _subjects(below) == {third.pk}
    unassessed = services.queue_create(
        project=Project.objects.default(), name="unassessed", kind=QueueKind.RUN_RESULT, include_unassessed=True
    )
    services.queue_fill(queue=unassessed)
    assert _subjects(unassessed) == {errored.pk}
    assert green.pk not in _subjects(below) | _subjects(unassessed) and half.pk not in _subjects(below)


def test_rag_rules_count_every_status_but_ok_as_unassessed_and_scores_below():
    missing = scored_rag(test_rows=[{"name": "faithfulness", "status": "missing"}])
    low = scored_rag(test_rows=[{"name": "context_recall", "score": 0.2}])
    scored_rag(test_rows=[{"name": "context_recall", "score": 0.9}])
    unassessed = services.queue_create(
        project=Project.objects.default(), name="rag unassessed", kind=QueueKind.RAG_EVALUATION, include_unassessed=True
    )
    services.queue_fill(queue=unassessed)
    assert _subjects(unassessed) == {missing.pk}
    below = services.queue_create(
        project=Project.objects.default(), name="rag below", kind=QueueKind.RAG_EVALUATION, score_below=0.5
    )
    services.queue_fill(queue=below)
    assert _subjects(below) == {low.pk}


def test_a_human_score_does_not_make_a_subject_unassessed_or_low():
    """Only the judge's rows decide: a person's low score on a metric is a review, not a verdict."""
    evaluation = scored_rag(test_rows=[{"name": "context_recall", "score": 0.9}])
    human_score_record(
        subject_kind=SubjectKind.RAG_EVALUATION,
        subject_id=evaluation.pk,
        kind=ScoreKind.METRIC,
        key="context_recall",
        passed=False,
        value=0.0,
    )
    queue = services.queue_create(
        project=Project.objects.default(),
        name="strict",
        kind=QueueKind.RAG_EVALUATION,
        include_unassessed=True,
        score_below=0.5,
    )
    assert services.queue_fill(queue=queue) == 0


def test_disagreement_prone_metrics_come_from_the_agreement_path():
    reviewed, same_metric_ok = scored_agentic(task_adherence=0.9), scored_agentic(task_adherence=0.8)
    skipped = scored_agentic()
    Score.objects.filter(
        subject_id=skipped.pk, subject_kind=SubjectKind.AGENTIC_EVALUATION, key="task_adherence"
    ).update(status=JudgeStatus.SKIPPED, value=None)
    # The judge passed task adherence (0.9 >= 0.6), the reviewer failed it (0.1).
    human_score_record(
        subject_kind=SubjectKind.AGENTIC_EVALUATION,
        subject_id=reviewed.pk,
        kind=ScoreKind.METRIC,
        key="task_adherence",
        value=0.1,
    )
    queue = services.queue_create(
        project=Project.objects.default(), name="prone", kind=QueueKind.AGENTIC_EVALUATION, disagreement_prone=True
    )
    services.queue_fill(queue=queue)
    # Every evaluation the judge scored on that metric; not the one it could not score (nothing to doubt).
    assert _subjects(queue) == {reviewed.pk, same_metric_ok.pk}


def test_agreement_reads_the_judges_row_not_a_copy():
    queue = ReviewQueueFactory(kind=QueueKind.RUN_RESULT)
    item = QueueItemFactory(queue=queue, subject=scored_result(criteria_scores=[criterion("Cites", True)]))
    human_score_record(
        subject_kind=SubjectKind.RUN_RESULT,
        subject_id=item.subject_id,
        kind=ScoreKind.CRITERION,
        key="Cites",
        passed=False,
        author=UserFactory(),
    )
    [row] = selectors.queue_agreement(queue=queue)
    assert (row.kind, row.key, row.reviewed, row.judge_pass_human_fail) == ("criterion", "Cites", 1, 1)
    # The judge re-judged (a newer machine row): agreement follows it, as there is no copy to go stale.
    machine_score(EvaluationResult.objects.get(pk=item.subject_id), "Cites", kind=ScoreKind.CRITERION, passed=False)
    [row] = selectors.queue_agreement(queue=queue)
    assert (row.reviewed, row.agreed, row.judge_pass_human_fail) == (1, 1, 0)


def test_fill_reads_a_fixed_number_of_queries_whatever_the_number_of_subjects():
    def fill_queries(n):
        for _ in range(n):
            scored_agentic(task_adherence=0.1)
        queue = services.queue_create(
            project=Project.objects.default(),
            name=f"every {n}",
            kind=QueueKind.AGENTIC_EVALUATION,
            include_unassessed=True,
            score_below=0.5,
            disagreement_prone=True,
            # Every subject sampled: at 0.5 the hash of the ids (which the database's sequences
            # choose) left both of 2 subjects out about one run in four, and then there was no
            # INSERT to count. Sampling is decided in Python and reads nothing.
            sample_rate=1.0,
        )
        with CaptureQueriesContext(connection) as captured:
            services.queue_fill(queue=queue)
        return [query["sql"][:160] for query in captured]

    few, many = fill_queries(2), fill_queries(12)
    assert any(sql.startswith("INSERT") for sql in few)
    assert len(few) == len(many), "\n".join(["2 subjects:", *few, "12 subjects:", *many])
