"""Issue 16, fail-closed coverage in the console: an unassessed item shows as UNASSESSED (never
PASS), and every pass rate is shown beside its denominators (verdicts scored, skipped, errored)."""

import re

import pytest

from apps.runs import services
from apps.runs.models import EvaluationResult
from tests.console.test_pages import text
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion, rule

pytestmark = pytest.mark.django_db

# The demo run with the heuristic judge: both high-severity rules skipped on every item. Since
# issue 20 the offline judge skips every demo rule (prose conditions) and the prose criteria, and
# scores the 7 tool expectations and the hand-off criterion (it used to score 20 by proxy).
DEMO_COVERAGE = (8, 32, 0)


def test_run_page_shows_unassessed_badges_and_the_denominators(staff_client, demo_run):
    page = text(staff_client.get(f"/console/runs/{demo_run.run_id}/"))
    table = re.search(r'id="results-table">.*?</table>', page).group(0)
    # Judge and (unreviewed) human columns alike.
    assert table.count(">UNASSESSED<") == 10 and ">PASS<" not in table
    assert "0 passed, 0 failed, 5 unassessed" in page
    scored, skipped, errored = DEMO_COVERAGE
    cards = re.search(r'id="figures">.*?id="coverage">.*?</div>', page).group(0)
    assert '<span class="figure" id="unassessed-items">5</span>' in cards
    assert (f'<span id="coverage-scored">{scored}</span> scored, <span id="coverage-skipped">{skipped}</span> skipped, '
            f'<span id="coverage-errored">{errored}</span> errored') in cards
    assert "judge pass rate (0/5) · 5 unassessed, not counted as passed" in cards


def test_result_page_badge_says_unassessed(staff_client, demo_run):
    result = EvaluationResult.objects.filter(run=demo_run).first()
    page = text(staff_client.get(f"/console/results/{result.result_id}/"))
    assert re.search(r'<span class="figure"><span class="badge warn"[^>]*>UNASSESSED</span> ?</span><span class="label">judge verdict', page)


def test_dashboard_and_run_list_rows_show_coverage(staff_client, demo_run):
    page = text(staff_client.get("/console/"))
    assert "(0/5), 5 unassessed" in page
    assert '<small class="muted coverage">8 scored · 32 skipped · 0 errored</small>' in page
    page = text(staff_client.get("/console/runs/"))
    assert "0%, 5 unassessed" in page
    assert '<small class="muted coverage">8 scored · 32 skipped · 0 errored</small>' in page


def test_comparison_shows_unassessed_and_coverage_of_both_runs(staff_client, demo_run, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        again = services.run_rerun(run=demo_run)
    page = text(staff_client.get(f"/console/runs/compare/?base={demo_run.run_id}&head={again.run_id}"))
    assert '<tr><th scope="row">Unassessed items</th><td>5</td><td>5</td></tr>' in page
    assert ('<tr><th scope="row">Verdicts scored · skipped · errored</th><td class="coverage">8 · 32 · 0</td>'
            '<td class="coverage">8 · 32 · 0</td></tr>') in page


def test_a_failed_high_rule_is_fail_not_unassessed(staff_client):
    run = EvaluationRunFactory()
    failed = EvaluationResultFactory(run=run, position=0, criteria_scores=[criterion("ok", True)],
                                     rubric_scores=[rule("R1", False, "high"), rule("S1", False, status="skipped")])
    unjudged = EvaluationResultFactory(run=run, position=1, criteria_scores=[criterion("ok", True)],
                                       rubric_scores=[rule("R1", False, "high", status="error")])
    assert (failed.outcome, unjudged.outcome) == ("failed", "unassessed")
    page = text(staff_client.get(f"/console/runs/{run.run_id}/"))
    row = lambda r: re.search(rf'<tr [^>]*data-result-id="{r.result_id}".*?</tr>', page).group(0)  # noqa: E731
    assert ">FAIL<" in row(failed) and "UNASSESSED" not in row(failed)
    assert ">UNASSESSED<" in row(unjudged) and ">FAIL<" not in row(unjudged).split("</td>")[3]
