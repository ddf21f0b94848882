"""Judge QA: the flip rate, the share of pairs of verdicts on the same item, given by the same judge
(fingerprint), that differ: per run item over its attempts (GET /runs/{id}/items, the run page), and
per rubric rule over repeats and runs (GET /rubrics/{id}/agreement, the rubric page)."""

import pytest

from apps.runs.judging.aggregate import flip_rate
from tests.rubrics.factories import RubricFactory
from tests.runs.factories import TEST_SET as TEST_SET_ID
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


# --- power planning ----------------------------------------------------------------------------------


def test_more_noise_needs_more_items_and_repeats_buy_some_back():
    from apps.runs.stats import detectable_drop, items_needed

    quiet = items_needed(detect=0.05, power=0.8, flip_rate=0.0, repeats=1)
    noisy = items_needed(detect=0.05, power=0.8, flip_rate=0.2, repeats=1)
    noisy_repeated = items_needed(detect=0.05, power=0.8, flip_rate=0.2, repeats=5)
    assert quiet < noisy_repeated < noisy
    assert items_needed(detect=0.10, power=0.8, flip_rate=0.2, repeats=1) < noisy, "a bigger drop is easier"
    # The inverse: what those items could detect is the drop they were planned for (to a tenth of a point).
    assert detectable_drop(items=noisy, repeats=1, flip_rate=0.2) == pytest.approx(0.05, abs=0.001)
    assert detectable_drop(items=0, repeats=1, flip_rate=0.2) is None


def _repeated_run(test_set_id, verdicts_per_item):
    run = EvaluationRunFactory(test_set_id=test_set_id, repeats=len(verdicts_per_item[0]))
    for position, verdicts in enumerate(verdicts_per_item):
        for attempt, passed in enumerate(verdicts, start=1):
            EvaluationResultFactory(
                run=run, position=position, attempt=attempt, fingerprint="j", criteria_scores=[criterion("c", passed)]
            )
    return run


def test_evalrun_plan_uses_the_flip_rate_of_the_newest_repeated_run(capsys):
    import io

    from django.core.management import call_command

    from apps.core.models import Project
    from apps.testsets import services
    from apps.testsets.schemas import TestSetContent
    from tests.bots.factories import BotFactory
    from tests.testsets.factories import make_test_set_payload

    bot = BotFactory()
    content = TestSetContent.model_validate(make_test_set_payload(bot.agent_id))
    test_set = services.testset_create(content=content, project=Project.objects.default())
    out = io.StringIO()
    call_command("evalrun", "--test-set", str(test_set.pk), "--plan", stdout=out)
    text = out.getvalue()
    assert "flip rate: not measured" in text and "--repeats 1:" in text and "add items" in text
    # 2 items x 3 attempts: item 0 flipped once of three pairs... (T, F, T): 2 of 3 pairs differ.
    run = _repeated_run(test_set.pk, [[True, False, True], [True, True, True]])
    out = io.StringIO()
    call_command("evalrun", "--test-set", str(test_set.pk), "--plan", "--detect", "0.2", stdout=out)
    text = out.getvalue()
    assert f"flip rate 0.333: 6 pairs of attempts judged by the same judge, run {run.run_id}" in text
    assert "drop of 20.0 points" in text


def test_the_run_page_says_what_drop_it_could_detect(admin_client):
    run = _repeated_run(TEST_SET_ID, [[True, False], [True, True], [False, False]])
    page = admin_client.get(f"/console/runs/{run.run_id}/").content.decode()
    assert 'id="detectable-drop"' in page and "over this run's repeats" in page
    assert "3 items × 2 attempts" in page
