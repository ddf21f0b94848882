"""Judge QA: the flip rate, the share of pairs of verdicts on the same item, given by the same judge
(fingerprint), that differ: per run item over its attempts (GET /runs/{id}/items, the run page), and
per rubric rule over repeats and runs (GET /rubrics/{id}/agreement, the rubric page)."""

import pytest

from apps.runs.judging.aggregate import flip_rate
from tests.rubrics.factories import RubricFactory
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion, rule

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "verdicts, expected",
    [
        ([], None),
        ([("a", True)], None),
        ([("a", True), ("a", None)], None),  # an unassessed attempt pairs with nothing
        ([("a", True), ("a", True)], 0.0),
        ([("a", True), ("a", False)], 1.0),
        ([("a", True), ("b", False)], None),  # two judges: no pair
        ([("a", True), ("a", False), ("a", True)], round(2 / 3, 4)),
        ([("a", True), ("a", False), ("b", True), ("b", True)], 0.5),
    ],
)
def test_flip_rate(verdicts, expected):
    assert flip_rate(verdicts) == expected


def test_run_items_carry_their_flip_rate(api):
    run = EvaluationRunFactory(repeats=3)
    for attempt, passed in enumerate([True, False, True], start=1):
        EvaluationResultFactory(
            run=run, position=0, attempt=attempt, fingerprint="judge1", criteria_scores=[criterion("c", passed)]
        )
    for attempt in (1, 2, 3):
        EvaluationResultFactory(
            run=run, position=1, attempt=attempt, fingerprint="judge1", criteria_scores=[criterion("c", True)]
        )
    items = api.get(f"/api/v1/runs/{run.run_id}/items").json()["items"]
    assert [(i["flaky"], i["flip_rate"]) for i in items] == [(True, round(2 / 3, 4)), (False, 0.0)]


def test_a_rubric_rule_flip_rate_pairs_the_same_case_and_judge_across_runs(api):
    rubric = RubricFactory()
    first = EvaluationRunFactory(rubric_id=rubric.pk, project=rubric.project)
    second = EvaluationRunFactory(rubric_id=rubric.pk, project=rubric.project)
    # The same test case (position 0) judged twice by one judge: R1 flipped, R2 did not.
    EvaluationResultFactory(run=first, position=0, fingerprint="j", rubric_scores=[rule("R1", True), rule("R2", True)])
    EvaluationResultFactory(
        run=second, position=0, fingerprint="j", rubric_scores=[rule("R1", False), rule("R2", True)]
    )
    # Another judge on the same case pairs with neither.
    EvaluationResultFactory(run=second, position=0, attempt=2, fingerprint="k", rubric_scores=[rule("R1", True)])
    body = api.get(f"/api/v1/rubrics/{rubric.pk}/agreement").json()
    assert body["flip_rates"] == [
        {"key": "R1", "flip_rate": 1.0, "pairs": 1},
        {"key": "R2", "flip_rate": 0.0, "pairs": 1},
    ]


def test_the_rubric_page_and_the_run_page_show_flip_rates(admin_client):
    rubric = RubricFactory()
    run = EvaluationRunFactory(rubric_id=rubric.pk, project=rubric.project, repeats=2)
    # A rule of the rubric's current version (RubricFactory's rules), so its row is on the page.
    EvaluationResultFactory(run=run, position=0, attempt=1, fingerprint="j", rubric_scores=[rule("USES_KB", True)])
    EvaluationResultFactory(run=run, position=0, attempt=2, fingerprint="j", rubric_scores=[rule("USES_KB", False)])
    rubric_page = admin_client.get(f"/console/rubrics/{rubric.pk}/").content.decode()
    assert '<td class="flip-rate">1.00 <small class="muted">(1)</small></td>' in rubric_page
    run_page = admin_client.get(f"/console/runs/{run.run_id}/").content.decode()
    assert "flips 1.00" in run_page
