"""Issue 16, fail-closed coverage in the console: an unassessed item shows as UNASSESSED (never
PASS), and every pass rate is shown beside its denominators (verdicts scored, skipped, errored)."""

import re

import pytest

from apps.bots.demo import DEMO_AGENT_ID
from apps.core.models import Project
from apps.rubrics.schemas import RubricContent
from apps.rubrics.services import rubric_create
from apps.runs import services
from apps.runs.models import EvaluationResult
from apps.runs.schemas import RunCreateIn
from apps.testsets.demo import DEMO_TEST_SET_ID
from tests.console.test_pages import text
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion, rule

pytestmark = pytest.mark.django_db

# The demo rubric is checkable offline since issue 20, so these tests judge the demo test set under a
# rubric whose two high-severity rules are prose: the offline judge skips both on every item ("needs
# an LLM judge"), which leaves every item unassessed, and scores the demo criteria and tool checks.
PROSE_RULES = [
    {
        "id": "GROUNDED",
        "name": "Grounded",
        "severity": "high",
        "component_scope": "knowledge_base",
        "evaluation_criteria": {"pass_conditions": ["Every policy fact in the answer appears in the handbook"]},
    },
    {
        "id": "EMPATHY",
        "name": "Empathy",
        "severity": "high",
        "component_scope": "prompt",
        "evaluation_criteria": {"pass_conditions": ["Acknowledges how the employee feels"]},
    },
]
COVERAGE = (13, 10, 0)  # 13 criteria and tool checks scored, 2 rules x 5 items skipped
# The dog question fails its hand-off criterion: a failed criterion fails the item whatever the
# skipped rules, so one item is failed and four are unassessed.


@pytest.fixture
def demo_run(demo, django_capture_on_commit_callbacks):
    rubric = rubric_create(
        project=Project.objects.default(),
        content=RubricContent.model_validate({"agent_id": DEMO_AGENT_ID, "name": "Prose rubric", "rules": PROSE_RULES}),
        changelog="t",
        author="t",
    )
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_create(
            project=Project.objects.default(),
            data=RunCreateIn(agent_id=DEMO_AGENT_ID, test_set_id=DEMO_TEST_SET_ID, rubric_id=rubric.pk),
        )
    run.refresh_from_db()
    return run


def test_run_page_shows_unassessed_badges_and_the_denominators(staff_client, demo_run):
    page = text(staff_client.get(f"/console/runs/{demo_run.run_id}/"))
    table = re.search(r'id="results-table">.*?</table>', page).group(0)
    # The judge's column; the human one has no verdict, since nobody reviewed.
    assert table.count(">UNASSESSED<") == 4 and table.count(">FAIL<") == 1 and ">PASS<" not in table
    assert table.count(">not reviewed<") == 5
    assert "0 passed, 1 failed, 4 unassessed" in page
    scored, skipped, errored = COVERAGE
    cards = re.search(r'id="figures">.*?id="coverage">.*?</div>', page).group(0)
    assert '<span class="figure" id="unassessed-items">4</span>' in cards
    assert (
        f'<span id="coverage-scored">{scored}</span> scored, <span id="coverage-skipped">{skipped}</span> skipped, '
        f'<span id="coverage-errored">{errored}</span> errored'
    ) in cards
    assert "judge pass rate (0/5 items passed · " in cards and "4 unassessed, neither passed nor failed" in cards


def test_result_page_badge_says_unassessed(staff_client, demo_run):
    result = EvaluationResult.objects.filter(run=demo_run).first()
    page = text(staff_client.get(f"/console/results/{result.result_id}/"))
    assert re.search(
        r'<span class="figure"><span class="badge warn"[^>]*>UNASSESSED</span> ?</span>'
        r'<span class="label">judge verdict',
        page,
    )


def test_dashboard_and_run_list_rows_show_coverage(staff_client, demo_run):
    page = text(staff_client.get("/console/"))
    assert "(0/5) · 1 failed · 4 unassessed" in page
    assert '<small class="muted coverage">{} scored · {} skipped · {} errored</small>'.format(*COVERAGE) in page
    page = text(staff_client.get("/console/runs/"))
    assert "0% · 1 failed · 4 unassessed" in page
    assert '<small class="muted coverage">{} scored · {} skipped · {} errored</small>'.format(*COVERAGE) in page


def test_comparison_shows_unassessed_and_coverage_of_both_runs(
    staff_client, demo_run, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        again = services.run_rerun(run=demo_run)
    page = text(staff_client.get(f"/console/runs/compare/?base={demo_run.run_id}&head={again.run_id}"))
    assert '<tr><th scope="row">Unassessed items</th><td>4</td><td>4</td></tr>' in page
    cells = '<td class="coverage">{} · {} · {}</td>'.format(*COVERAGE) * 2
    assert f'<tr><th scope="row">Verdicts scored · skipped · errored</th>{cells}</tr>' in page


def test_a_failed_high_rule_is_fail_not_unassessed(staff_client):
    run = EvaluationRunFactory()
    failed = EvaluationResultFactory(
        run=run,
        position=0,
        criteria_scores=[criterion("ok", True)],
        rubric_scores=[rule("R1", False, "high"), rule("S1", False, status="skipped")],
    )
    unjudged = EvaluationResultFactory(
        run=run,
        position=1,
        criteria_scores=[criterion("ok", True)],
        rubric_scores=[rule("R1", False, "high", status="error")],
    )
    assert (failed.outcome, unjudged.outcome) == ("failed", "unassessed")
    page = text(staff_client.get(f"/console/runs/{run.run_id}/"))
    row = lambda r: re.search(rf'<tr [^>]*data-result-id="{r.result_id}".*?</tr>', page).group(0)  # noqa: E731
    assert ">FAIL<" in row(failed) and "UNASSESSED" not in row(failed)
    assert ">UNASSESSED<" in row(unjudged) and ">FAIL<" not in row(unjudged).split("</td>")[3]
