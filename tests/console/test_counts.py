"""One meaning for every count (issue 20, point 2): `failed` never includes `unassessed`, and a human
verdict exists only where a human reviewed."""

import re

import pytest

from apps.runs.models import EvaluationRun
from apps.runs.reviews import human_outcome, human_passed, in_force
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion, review_create, rule

pytestmark = pytest.mark.django_db


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def section(page: str, marker: str) -> str:
    """The dashboard section from its heading with id `marker` to the next h2."""
    return re.search(rf'<h2 id="{marker}">.*?(?=<h2)', page).group(0)


@pytest.fixture
def mixed_run():
    """One passed, one failed (a high rule failed) and one unassessed item (a high rule skipped)."""
    run = EvaluationRunFactory()
    passed = EvaluationResultFactory(
        run=run,
        position=0,
        item_name="passes",
        criteria_scores=[criterion("ok", True)],
        rubric_scores=[rule("R1", True)],
    )
    failed = EvaluationResultFactory(
        run=run,
        position=1,
        item_name="fails",
        criteria_scores=[criterion("ok", True)],
        rubric_scores=[rule("R1", False)],
    )
    unassessed = EvaluationResultFactory(
        run=run,
        position=2,
        item_name="unjudged",
        criteria_scores=[criterion("ok", True)],
        rubric_scores=[rule("R1", False, status="skipped")],
    )
    assert (passed.outcome, failed.outcome, unassessed.outcome) == ("passed", "failed", "unassessed")
    # The engine's counters, as it keeps them per finished result.
    EvaluationRun.objects.filter(pk=run.pk).update(passed=1, failed=1, unassessed=1)
    run.refresh_from_db()
    return run, passed, failed, unassessed


def review(result, kind, key, passed):
    return review_create(result=result, kind=kind, key=key, passed=passed)


def test_dashboard_lists_failures_and_unassessed_apart_with_their_counts(staff_client, mixed_run):
    run, _, failed, unassessed = mixed_run
    page = text(staff_client.get("/console/"))
    failures = section(page, "newest-failures")
    assert "fails" in failures and "unjudged" not in failures, "an unassessed item is not a failure"
    assert "R1" in failures, "what failed is named"
    assert re.search(r'id="failed-count">1<', failures)
    waiting = section(page, "newest-unassessed")
    assert "unjudged" in waiting and ">fails<" not in waiting
    assert re.search(r'id="unassessed-count">1<', waiting)
    # Why it is unassessed: the verdict the judge skipped, with its reasoning.
    assert "rule R1 (high) skipped" in waiting


def test_run_page_failed_filter_leaves_unassessed_out(staff_client, mixed_run):
    run, *_ = mixed_run
    page = staff_client.get(f"/console/runs/{run.run_id}/?passed=false").content.decode()
    names = re.findall(r'<td class="item-name"><a href="/console/results/[^"#]+">([^<]+)</a>', page)
    assert names == ["fails"]


def test_human_verdict_is_none_until_someone_reviews():
    criteria, rules = [criterion("a", True)], [rule("R1", False)]
    assert human_passed(criteria=criteria, rules=rules, latest={}) is None
    assert human_outcome(criteria=criteria, rules=rules, latest={}) is None


def test_partial_review_keeps_the_judges_other_verdicts_and_an_unassessed_item_stays_none(mixed_run):
    _, _, failed, unassessed = mixed_run
    # The reviewer passes the criterion only: R1 keeps the judge's FAIL, so the item still fails.
    latest = in_force([review(failed, "criterion", "ok", True)])
    assert human_outcome(criteria=failed.criteria_scores, rules=failed.rubric_scores, latest=latest) == "failed"
    assert human_passed(criteria=failed.criteria_scores, rules=failed.rubric_scores, latest=latest) is False
    # On the unassessed item the skipped high rule is not reviewed: reviewed, but still unassessed.
    latest = in_force([review(unassessed, "criterion", "ok", True)])
    assert (
        human_outcome(criteria=unassessed.criteria_scores, rules=unassessed.rubric_scores, latest=latest)
        == "unassessed"
    )
    assert human_passed(criteria=unassessed.criteria_scores, rules=unassessed.rubric_scores, latest=latest) is None
    # Once the reviewer judges the skipped rule, the item has a human verdict.
    latest = in_force([review(unassessed, "rule", "R1", True)])
    assert human_passed(criteria=unassessed.criteria_scores, rules=unassessed.rubric_scores, latest=latest) is True


def test_api_human_passed_is_null_without_a_review(api, mixed_run):
    _, passed, failed, unassessed = mixed_run
    for result in (passed, failed, unassessed):
        body = api.get(f"/api/v1/results/{result.result_id}").json()
        assert body["human_passed"] is None, result.item_name
    review(failed, "rule", "R1", True)
    assert api.get(f"/api/v1/results/{failed.result_id}").json()["human_passed"] is True


def test_result_page_says_not_reviewed_until_a_review(staff_client, mixed_run):
    _, _, failed, unassessed = mixed_run
    page = text(staff_client.get(f"/console/results/{unassessed.result_id}/"))
    card = re.search(r'id="human-verdict">(.*?)</span><span class="label">', page).group(1)
    assert "not reviewed" in card and "FAIL" not in card
    review(failed, "rule", "R1", True)
    card = re.search(
        r'id="human-verdict">(.*?)</span><span class="label">',
        text(staff_client.get(f"/console/results/{failed.result_id}/")),
    ).group(1)
    assert "PASS" in card


def test_run_table_human_column_says_not_reviewed(staff_client, mixed_run):
    run, _, failed, _ = mixed_run
    review(failed, "rule", "R1", True)
    page = text(staff_client.get(f"/console/runs/{run.run_id}/"))
    rows = re.findall(r'<tr class="[^"]*" data-result-id="[^"]+".*?</tr>', page)
    human_cells = {
        re.search(r'class="item-name"><a [^>]+>([^<]+)<', row).group(1): re.findall(r"<td[^>]*>(.*?)</td>", row)[4]
        for row in rows
    }
    assert "not reviewed" in human_cells["passes"] and "not reviewed" in human_cells["unjudged"]
    assert "PASS" in human_cells["fails"] and "not reviewed" not in human_cells["fails"]


def test_human_pass_rate_counts_reviewed_items_only_and_shows_its_n(staff_client, mixed_run):
    run, passed, failed, unassessed = mixed_run
    page = text(staff_client.get(f"/console/runs/{run.run_id}/"))
    assert re.search(r'id="human-pass-rate">—<', page) and "0 reviewed items" in page
    review(passed, "rule", "R1", True)
    review(failed, "rule", "R1", True)
    review(unassessed, "criterion", "ok", False)
    page = text(staff_client.get(f"/console/runs/{run.run_id}/"))
    # 2 of 3 reviewed items pass for the reviewers; the unreviewed rest do not enter the rate.
    assert re.search(r'id="human-pass-rate">67%<', page)
    assert "(2/3 reviewed items" in page


def test_compare_page_human_row_counts_reviewed_results_only(staff_client, mixed_run):
    base, passed, failed, _ = mixed_run
    head = EvaluationRunFactory(test_set_id=base.test_set_id)
    for source in (passed, failed):
        EvaluationResultFactory(
            run=head,
            position=source.position,
            criteria_scores=source.criteria_scores,
            rubric_scores=source.rubric_scores,
        )
    url = f"/console/runs/compare/?base={base.run_id}&head={head.run_id}"
    row = re.search(r"Pass rate \(human-reviewed\)</th>(.*?)</tr>", text(staff_client.get(url))).group(1)
    # Nobody reviewed either run: no human figure, not "0/3" (which read as three human failures).
    assert row.count("not reviewed") == 2 and "0/" not in row
    review(passed, "rule", "R1", False)
    row = re.search(r"Pass rate \(human-reviewed\)</th>(.*?)</tr>", text(staff_client.get(url))).group(1)
    assert "0/1 reviewed" in row and row.count("not reviewed") == 1


def test_admin_shows_unassessed_apart_from_failed(admin_client, mixed_run):
    run, *_ = mixed_run
    page = text(admin_client.get("/admin/runs/evaluationresult/"))
    assert "UNASSESSED" in page and page.count(">FAIL<") == 1
    runs = text(admin_client.get("/admin/runs/evaluationrun/"))
    for column in ("column-pass_rate_display", "column-failed", "column-unassessed"):
        assert column in runs, column
    assert "33% (1/3)" in runs


def test_run_rows_on_dashboard_and_run_list_show_failed_and_unassessed_apart(staff_client, mixed_run):
    for url in ("/console/", "/console/runs/"):
        page = text(staff_client.get(url))
        assert "33%" in page and "· 1 failed · 1 unassessed" in page, url


def test_dashboard_failures_name_the_attempt_of_a_repeated_run(staff_client):
    run = EvaluationRunFactory(repeats=3)
    EvaluationResultFactory(run=run, position=0, attempt=1, item_name="flaky", criteria_scores=[criterion("ok", True)])
    EvaluationResultFactory(run=run, position=0, attempt=2, item_name="flaky", criteria_scores=[criterion("ok", False)])
    failures = section(text(staff_client.get("/console/")), "newest-failures")
    # The dashboard lists results, which with repeats are attempts: the row says which one failed.
    assert 'flaky</a> <small class="muted nowrap">attempt 2 of 3</small>' in failures
