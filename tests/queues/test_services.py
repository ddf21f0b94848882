import pytest

from apps.core.errors import ConflictError, InvalidInputError, NotFoundError
from apps.core.models import Project
from apps.queues import selectors, services
from apps.queues.models import QueueKind
from apps.runs.models import EvaluationResult
from apps.scores.agreement import cohen_kappa
from apps.scores.models import Score
from apps.scores.services import human_score_record
from apps.scores.vocabulary import ScoreKind, SubjectKind
from tests.agentic.factories import AgentEvaluationFactory
from tests.concurrency import run_in_threads
from tests.core.factories import UserFactory
from tests.rag.factories import TraceEvaluationFactory
from tests.runs.factories import criterion, rule, verdict_reviews

from .factories import (
    QueueItemFactory,
    ReviewQueueFactory,
    reviewable_result,
    scored_agentic,
    scored_rag,
    scored_result,
)

pytestmark = pytest.mark.django_db


def test_kappa_matches_the_textbook_example():
    # Wikipedia's "Cohen's kappa" worked example: 50 proposals, both yes 20, both no 15, A yes B no 5,
    # A no B yes 10: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    a = [True] * 20 + [True] * 5 + [False] * 10 + [False] * 15
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert cohen_kappa(a, b) == 0.4
    assert cohen_kappa([True, True], [True, True]) is None  # chance agreement 1: undefined, shown "—"


def test_fill_by_rule_is_idempotent_and_takes_only_what_matches():
    unassessed = reviewable_result()
    clean = scored_result(criteria_scores=[criterion("ok", True)], rubric_scores=[rule("BRIEF", True)])
    low = scored_result(criteria_scores=[criterion("a", False), criterion("b", True), criterion("c", False)])
    queue = services.queue_create(
        project=Project.objects.default(),
        name="triage",
        kind=QueueKind.RUN_RESULT,
        include_unassessed=True,
        score_below=0.5,
    )
    assert services.queue_fill(queue=queue) == 2
    assert set(queue.items.values_list("subject_id", flat=True)) == {unassessed.pk, low.pk}
    # Filling again adds nothing: an object is in a queue once.
    assert services.queue_fill(queue=queue) == 0
    assert queue.items.count() == 2
    assert clean.pk not in set(queue.items.values_list("subject_id", flat=True))


def test_disagreement_prone_rules_and_sample():
    reviewed = reviewable_result()
    # A reviewer failed BRIEF where the judge passed it: every result judged on BRIEF is worth a look.
    human_score_record(
        subject_kind=SubjectKind.RUN_RESULT, subject_id=reviewed.pk, kind=ScoreKind.RULE, key="BRIEF", passed=False
    )
    other = scored_result(criteria_scores=[criterion("x", True)], rubric_scores=[rule("BRIEF", True)])
    unrelated = scored_result(criteria_scores=[criterion("x", True)], rubric_scores=[rule("OTHER", True)])
    queue = services.queue_create(
        project=Project.objects.default(), name="prone", kind=QueueKind.RUN_RESULT, disagreement_prone=True
    )
    services.queue_fill(queue=queue)
    assert set(queue.items.values_list("subject_id", flat=True)) == {reviewed.pk, other.pk}
    everything = services.queue_create(
        project=Project.objects.default(), name="all", kind=QueueKind.RUN_RESULT, sample_rate=1
    )
    assert services.queue_fill(queue=everything) == 3
    assert unrelated.pk in set(everything.items.values_list("subject_id", flat=True))


def test_agentic_and_rag_rules():
    low = scored_agentic(overall_score=0.3)
    scored_agentic(overall_score=0.95)
    queue = services.queue_create(
        project=Project.objects.default(), name="agentic", kind=QueueKind.AGENTIC_EVALUATION, score_below=0.5
    )
    assert services.queue_fill(queue=queue) == 1
    assert queue.items.get().subject_id == low.pk
    errored = scored_rag(test_rows=[{"name": "faithfulness", "status": "error", "score": None}])
    scored_rag()
    rag = services.queue_create(
        project=Project.objects.default(), name="rag", kind=QueueKind.RAG_EVALUATION, include_unassessed=True
    )
    assert services.queue_fill(queue=rag) == 1
    assert rag.items.get().subject_id == errored.pk


def test_add_by_hand_twice_is_one_item():
    queue = ReviewQueueFactory()
    result = reviewable_result()
    first, created = services.queue_item_add(queue=queue, target_id=str(result.result_id))
    again, created_again = services.queue_item_add(queue=queue, target_id=str(result.result_id))
    assert (created, created_again, first.pk) == (True, False, again.pk)
    assert first.origin == "hand"


def test_add_by_hand_refuses_an_object_of_another_kind():
    rag_queue = ReviewQueueFactory(kind=QueueKind.RAG_EVALUATION)
    agentic = AgentEvaluationFactory()
    rag = TraceEvaluationFactory(pk=agentic.pk)  # the same number: only the kind tells them apart
    with pytest.raises(InvalidInputError, match="holds RAG evaluations, not agentic evaluations"):
        services.queue_item_add(queue=rag_queue, target_id=str(agentic.pk), kind=QueueKind.AGENTIC_EVALUATION)
    assert not rag_queue.items.exists()
    item, _ = services.queue_item_add(queue=rag_queue, target_id=str(rag.pk), kind=QueueKind.RAG_EVALUATION)
    assert (item.subject_kind, item.subject_id) == (QueueKind.RAG_EVALUATION, rag.pk)


def test_add_several_is_all_or_nothing_and_counts_what_was_there():
    queue = ReviewQueueFactory(kind=QueueKind.RAG_EVALUATION)
    first, second, third = (TraceEvaluationFactory() for _ in range(3))
    services.queue_item_add(queue=queue, target_id=str(first.pk))
    ids = [str(first.pk), str(second.pk), str(third.pk), str(second.pk)]
    assert services.queue_items_add(queue=queue, target_ids=ids, kind=QueueKind.RAG_EVALUATION) == (2, 1)
    assert queue.items.count() == 3
    # One id that names nothing: none of the others enter either.
    fourth = TraceEvaluationFactory()
    with pytest.raises(NotFoundError):
        services.queue_items_add(queue=queue, target_ids=[str(fourth.pk), "999999"])
    assert not queue.items.filter(subject_id=fourth.pk).exists()
    with pytest.raises(InvalidInputError):
        services.queue_items_add(queue=queue, target_ids=[])


def test_claim_refuses_an_item_assigned_to_someone_else():
    item = QueueItemFactory()
    alice, bob = UserFactory(), UserFactory()
    services.queue_item_assign(item=item, user=alice)
    with pytest.raises(ConflictError):
        services.queue_item_claim(item=item, user=bob)
    assert services.queue_item_claim(item=item, user=alice).claimed_at is not None


def test_review_records_verdicts_and_marks_done():
    item = QueueItemFactory()
    reviewer = UserFactory()
    services.queue_item_review(
        item=item,
        reviewer=reviewer,
        note="checked",
        verdicts=[
            {"kind": "criterion", "key": "Cites the handbook", "passed": True},
            {"kind": "rule", "key": "USES_KB", "passed": False},
        ],
    )
    item.refresh_from_db()
    assert item.done_at is not None and item.reviewed_by == reviewer
    assert verdict_reviews(result=EvaluationResult.objects.get(pk=item.subject_id)).count() == 2
    # A bad verdict leaves nothing behind: the item stays to do.
    other = QueueItemFactory(queue=item.queue)
    with pytest.raises(InvalidInputError):
        services.queue_item_review(
            item=other,
            reviewer=reviewer,
            verdicts=[
                {"kind": "criterion", "key": "Mentions 15 days", "passed": True},
                {"kind": "rule", "key": "NOPE", "passed": True},
            ],
        )
    other.refresh_from_db()
    assert (
        other.done_at is None and not verdict_reviews(result=EvaluationResult.objects.get(pk=other.subject_id)).exists()
    )


def test_agreement_per_agentic_metric_and_rag_metric():
    queue = ReviewQueueFactory(kind=QueueKind.AGENTIC_EVALUATION)
    reviewer = UserFactory()
    for judge, human in [(0.9, 0.9), (0.2, 0.1), (0.9, 0.3), (0.3, 0.2)]:
        item = QueueItemFactory(queue=queue, subject=scored_agentic(task_adherence=judge))
        services.queue_item_review(item=item, reviewer=reviewer, verdicts=[{"key": "task_adherence", "score": human}])
    rows = {row.key: row for row in selectors.queue_agreement(queue=queue)}
    # judge pass/fail: P F P F, human: P F F F -> p_o 0.75, p_e 0.5*0.25+0.5*0.75 = 0.5, kappa 0.5
    assert (rows["task_adherence"].reviewed, rows["task_adherence"].agreed, rows["task_adherence"].kappa) == (4, 3, 0.5)
    rag = ReviewQueueFactory(kind=QueueKind.RAG_EVALUATION)
    item = QueueItemFactory(queue=rag)
    services.queue_item_review(item=item, reviewer=reviewer, verdicts=[{"key": "answer_accuracy", "passed": False}])
    # The review is a human Score beside the judge's, which it does not copy.
    human = Score.objects.human().get(subject_kind=SubjectKind.RAG_EVALUATION, subject_id=item.subject_id)
    assert (human.key, human.passed, human.value, human.author) == ("answer_accuracy", False, None, reviewer)
    row = selectors.queue_agreement(queue=rag)[0]
    # One pair, judge pass and human fail: p_o 0, p_e 0, kappa 0 (defined, unlike all-in-one-class).
    assert (row.key, row.reviewed, row.agreed, row.kappa) == ("answer_accuracy", 1, 0, 0.0)


def test_names_are_unique_and_kind_is_fixed_once_filled():
    queue = ReviewQueueFactory(name="one")
    with pytest.raises(ConflictError):
        services.queue_create(project=Project.objects.default(), name="one", kind=QueueKind.RUN_RESULT)
    QueueItemFactory(queue=queue)
    with pytest.raises(ConflictError):
        services.queue_update(queue=queue, name="one", kind=QueueKind.RAG_EVALUATION)


@pytest.mark.django_db(transaction=True)
def test_concurrent_adds_make_one_item(on_postgres):
    queue = ReviewQueueFactory()
    result = reviewable_result()
    outcomes = run_in_threads(lambda i: services.queue_item_add(queue=queue, target_id=str(result.result_id))[1])
    assert sorted(outcomes) == [False] * 7 + [True], outcomes
    assert queue.items.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_fills_add_each_object_once(on_postgres):
    for _ in range(5):
        reviewable_result()
    queue = ReviewQueueFactory(include_unassessed=True)
    outcomes = run_in_threads(lambda i: services.queue_fill(queue=queue), threads=4)
    assert sorted(outcomes) == [0, 0, 0, 5], outcomes
    assert queue.items.count() == 5
