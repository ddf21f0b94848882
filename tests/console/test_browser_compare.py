"""Issue 20 points 2, 3 and 6 on the compare page, in headless Chromium: the buckets keep unassessed
items apart from failed ones, the verdict says where McNemar's test and Tango's interval disagree,
and each answer's edge has its own verdict's colour (a fix: red before, green after). Screenshots go
to test-output/screenshots/ (20-compare*.png), at desktop (1440) and tablet (820) widths."""

import pytest
from django.contrib.auth import get_user_model

from tests.console.browser import needs_chromium, screenshot
from tests.console.test_browser_runs import log_in
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion, rule

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), needs_chromium]

GREEN, RED = "rgba(26, 127, 55, 1)", "rgba(207, 34, 46, 1)"

# (item, before, after): 7 fixes against 1 regression: p = 0.070, yet Tango's interval excludes 0.
ITEMS = (
    [("Accrual rate", "passed", "failed")]
    + [(f"Fixed question {n}", "failed", "passed") for n in range(1, 8)]
    + [
        ("Still wrong", "failed", "failed"),
        ("Newly judged, passes", "unassessed", "passed"),
        ("Newly judged, fails", "unassessed", "failed"),
        ("Lost its judge", "passed", "unassessed"),
        ("Never judged", "unassessed", "unassessed"),
    ]
    + [(f"Fine {n}", "passed", "passed") for n in range(1, 4)]
)


def _result(run, position, name, outcome, answer):
    if outcome == "unassessed":
        verdicts = {
            "criteria_scores": [criterion("Gives the accrual", True)],
            "rubric_scores": [rule("CITES_POLICY", False, status="skipped")],
        }
    else:
        verdicts = {"criteria_scores": [criterion("Gives the accrual", outcome == "passed")]}
    EvaluationResultFactory(
        run=run,
        position=position,
        item_name=name,
        **verdicts,
        item={
            "type": "single_turn",
            "tags": [],
            "priority": "medium",
            "inputs": {"message": f"Question about {name.lower()}?"},
        },
        output={
            "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": answer, "tool_calls": []}]
        },
    )


def test_compare_page_buckets_disagreement_and_answer_edges(browser, live_server):
    from selenium.webdriver.common.by import By

    reviewer = get_user_model().objects.create_user("reviewer", password="review-pass-1", is_staff=True)
    base = EvaluationRunFactory(rubric_id=None, label="baseline")
    head = EvaluationRunFactory(rubric_id=None, label="new prompt")
    for position, (name, before, after) in enumerate(ITEMS):
        _result(base, position, name, before, f"The answer before ({before}).")
        _result(head, position, name, after, f"The answer after ({after}).")
    log_in(browser, live_server, reviewer)
    browser.get(f"{live_server.url}/console/runs/compare/?base={base.run_id}&head={head.run_id}")
    find = browser.find_element

    verdict = find(By.ID, "compare-verdict").text
    assert verdict.startswith("Within noise")
    disagreement = find(By.ID, "compare-disagreement").text
    assert "McNemar's test and the interval disagree: the 95% interval excludes 0" in disagreement
    assert "12 of 16 paired items assessed in both runs" in verdict and "(Tango)" in verdict

    def heading(anchor):
        return find(By.ID, anchor).text

    assert "(1)" in heading("regressions") and "(7)" in heading("fixes") and "(2)" in heading("newly-assessed")
    assert "(1)" in heading("still-failing") and "(1)" in heading("still-unassessed")
    assert "(1)" in heading("no-longer-assessed")

    def edges(section):
        pair = find(By.CSS_SELECTOR, f"#{section} + div .compare-answers .side-by-side")
        before = pair.find_element(By.CLASS_NAME, "answer-before")
        after = pair.find_element(By.CLASS_NAME, "answer-after")
        return before.value_of_css_property("border-left-color"), after.value_of_css_property("border-left-color")

    assert edges("fixes") == (RED, GREEN), "a fix: failed before (red), passed after (green)"
    assert edges("regressions") == (GREEN, RED), "a regression: passed before (green), failed after (red)"
    screenshot(browser, "20-compare", width=1440)
    screenshot(browser, "20-compare-tablet", width=820)
