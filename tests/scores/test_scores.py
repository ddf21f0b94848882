"""The score table's own reads: which human verdict is in force, and how judge and humans agree,
whatever kind of subject they judged."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError
from django.utils import timezone

from apps.scores.agreement import agreement_table, cohen_kappa, judge_human_pairs
from apps.scores.models import Score
from apps.scores.selectors import human_in_force
from apps.scores.services import human_score_record, scores_delete, scores_store
from apps.scores.vocabulary import JudgeStatus, ScoreKind, ScoreSource, SubjectKind

pytestmark = pytest.mark.django_db

RESULT = SubjectKind.RUN_RESULT


def judged(subject_id, key, *, passed=None, value=None, status=JudgeStatus.OK, kind=ScoreKind.RULE, **extra):
    return Score(
        subject_kind=extra.pop("subject_kind", RESULT),
        subject_id=subject_id,
        kind=kind,
        key=key,
        source=ScoreSource.CODE,
        status=status,
        passed=passed,
        value=value,
        **extra,
    )


def test_the_newest_human_score_of_a_key_is_the_one_in_force():
    user = get_user_model().objects.create(username="ana")
    human_score_record(subject_kind=RESULT, subject_id=1, kind=ScoreKind.RULE, key="R1", passed=True, author=user)
    later = human_score_record(
        subject_kind=RESULT,
        subject_id=1,
        kind=ScoreKind.RULE,
        key="R1",
        passed=False,
        note="missed the refund",
        author=user,
    )
    other = human_score_record(subject_kind=RESULT, subject_id=2, kind=ScoreKind.RULE, key="R1", passed=True)
    in_force = set(human_in_force(RESULT).values_list("id", flat=True))
    # The first review of result 1 is history: it is kept, but the second one decides.
    assert in_force == {later.id, other.id}
    assert Score.objects.human().count() == 3


def test_a_human_score_must_say_something():
    with pytest.raises(ValueError):
        human_score_record(subject_kind=RESULT, subject_id=1, kind=ScoreKind.RULE, key="R1")


def test_only_a_person_has_an_author():
    user = get_user_model().objects.create(username="bo")
    with pytest.raises(IntegrityError):
        Score.objects.create(
            subject_kind=RESULT,
            subject_id=1,
            kind=ScoreKind.RULE,
            key="R1",
            source=ScoreSource.LLM,
            passed=True,
            author=user,
        )


def test_agreement_pairs_each_review_with_the_judges_verdict_on_the_same_key():
    scores_store(
        rows=[
            judged(1, "R1", passed=True),
            judged(2, "R1", passed=True),
            judged(3, "R1", passed=False),
            judged(4, "R1", status=JudgeStatus.SKIPPED),
            judged(1, "R2", passed=False),
        ]
    )
    for subject_id, passed in [(1, True), (2, False), (3, False), (4, True)]:
        human_score_record(subject_kind=RESULT, subject_id=subject_id, kind=ScoreKind.RULE, key="R1", passed=passed)
    table = {row.key: row for row in agreement_table(judge_human_pairs(RESULT))}
    # R2 was never reviewed: no row. R1: two agreements (1, 3), one judge-pass/human-fail (2), and one
    # review of a verdict the judge skipped, which has nothing to agree with.
    assert set(table) == {"R1"}
    row = table["R1"]
    assert (row.reviewed, row.agreed, row.judge_pass_human_fail, row.judge_fail_human_pass, row.judge_unassessed) == (
        3,
        2,
        1,
        0,
        1,
    )
    assert row.kappa == cohen_kappa([True, True, False], [True, False, False])


def test_metric_agreement_cuts_scores_at_the_threshold():
    agentic = SubjectKind.AGENTIC_EVALUATION
    scores_store(
        rows=[
            judged(7, "task_adherence", value=0.9, kind=ScoreKind.METRIC, subject_kind=agentic),
            judged(8, "task_adherence", value=0.3, kind=ScoreKind.METRIC, subject_kind=agentic),
        ]
    )
    human_score_record(subject_kind=agentic, subject_id=7, kind=ScoreKind.METRIC, key="task_adherence", value=0.4)
    human_score_record(subject_kind=agentic, subject_id=8, kind=ScoreKind.METRIC, key="task_adherence", value=0.2)
    [row] = agreement_table(judge_human_pairs(agentic), threshold=0.6)
    assert (row.reviewed, row.agreed, row.judge_pass_human_fail) == (2, 1, 1)


def test_the_judges_newest_verdict_is_the_one_a_review_is_compared_with():
    old = judged(1, "R1", passed=False, created_at=timezone.now() - timedelta(hours=1))
    scores_store(rows=[old, judged(1, "R1", passed=True)])
    human_score_record(subject_kind=RESULT, subject_id=1, kind=ScoreKind.RULE, key="R1", passed=True)
    [row] = agreement_table(judge_human_pairs(RESULT))
    assert (row.reviewed, row.agreed) == (1, 1)


def test_deleting_a_subjects_scores_leaves_other_subjects_alone():
    scores_store(rows=[judged(1, "R1", passed=True), judged(2, "R1", passed=True)])
    human_score_record(subject_kind=RESULT, subject_id=1, kind=ScoreKind.RULE, key="R1", passed=True)
    assert scores_delete(subject_kind=RESULT, subject_ids=[1]) == 2
    assert list(Score.objects.values_list("subject_id", flat=True)) == [2]


def test_kappa_is_undefined_when_both_raters_agree_on_one_class_only():
    assert cohen_kappa([True, True], [True, True]) is None
    assert cohen_kappa([], []) is None
