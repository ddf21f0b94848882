"""Issue 16: the compare page says at the top whether the head run is worse, better or within
noise (with the paired counts), and whether the judge changed; the run page shows its judges."""

import html
import re

import pytest
from django.conf import settings

from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion, rule

pytestmark = pytest.mark.django_db


def _fingerprinted(passed: bool, prompt: str = "3f2a11112222", model: str = "m") -> list[dict]:
    return [
        {
            **criterion("c", passed),
            "fingerprint": {
                "judge": "llm",
                "model": model,
                "prompt_template": prompt,
                "judge_version": "1",
                "criterion": "c",
            },
        }
    ]


def _runs(head_passes, *, head_prompt="3f2a11112222", n=8):
    base, head = EvaluationRunFactory(), EvaluationRunFactory()
    for position in range(n):
        EvaluationResultFactory(run=base, position=position, criteria_scores=_fingerprinted(True))
        EvaluationResultFactory(
            run=head, position=position, criteria_scores=_fingerprinted(position < head_passes, prompt=head_prompt)
        )
    return base, head


def _top(staff_client, base, head) -> str:
    """The page's text between its heading and the runs' table."""
    page = staff_client.get(f"/console/runs/compare/?base={base.run_id}&head={head.run_id}").content.decode()
    top = page[page.index("<h1>Compare runs</h1>") : page.index('id="compare-runs"')]
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", top)))


def test_a_significant_regression_is_worse_with_its_counts_at_the_top(staff_client):
    base, head = _runs(head_passes=2)
    top = _top(staff_client, base, head)
    assert "Worse, significant at 95%" in top
    assert (
        "8 of 8 paired items assessed in both runs: 2 both passed, 0 both failed, 6 pass→fail, 0 fail→pass · "
        "McNemar p = 0.031 · pass rate difference 95% CI [-92.8%, -18.2%] (Tango)"
    ) in top
    assert "disagree" not in top
    assert "The judge changed" not in top


def test_one_regression_is_within_noise(staff_client):
    base, head = _runs(head_passes=7)
    assert "Within noise" in _top(staff_client, base, head)


def test_a_changed_prompt_template_is_said_at_the_top(staff_client):
    base, head = _runs(head_passes=8, head_prompt="9c1d33334444")
    assert "The judge changed: prompt template 3f2a… → 9c1d…." in _top(staff_client, base, head)


def test_run_page_shows_its_judge_fingerprints(staff_client):
    base, _ = _runs(head_passes=8)
    page = re.sub(r"\s+", " ", staff_client.get(f"/console/runs/{base.run_id}/").content.decode())
    assert 'id="judge-fingerprints"' in page and "llm · m · prompt 3f2a11112222 · judge v1" in page


def _outcome_runs(pairs):
    """Runs whose items go from one outcome to another: passed, failed or unassessed (high rule skipped)."""

    def verdicts(outcome):
        if outcome == "unassessed":
            return {"criteria_scores": [criterion("c", True)], "rubric_scores": [rule("R", False, status="skipped")]}
        return {"criteria_scores": [criterion("c", outcome == "passed")]}

    base, head = EvaluationRunFactory(), EvaluationRunFactory()
    for position, (before, after) in enumerate(pairs):
        EvaluationResultFactory(run=base, position=position, **verdicts(before))
        EvaluationResultFactory(run=head, position=position, **verdicts(after))
    return base, head


def test_three_items_all_fixed_is_within_noise_with_an_interval_not_a_point(staff_client):
    base, head = _outcome_runs([("failed", "passed")] * 3)
    top = _top(staff_client, base, head)
    assert "Within noise" in top and "McNemar p = 0.250" in top
    assert "pass rate difference 95% CI [-12.3%, +100.0%] (Tango)" in top and "disagree" not in top


def test_a_disagreement_of_the_test_and_the_interval_is_said_beside_the_verdict(staff_client):
    base, head = _outcome_runs([("failed", "passed")] * 5)
    top = _top(staff_client, base, head)
    assert top.startswith(
        "Compare runs Within noise · McNemar's test and the interval disagree: the 95% interval "
        "excludes 0 but McNemar's exact test is not significant at 5%: too few items changed to "
        "call it 5 of 5 paired items assessed in both runs"
    )
    assert "McNemar p = 0.063 · pass rate difference 95% CI [+13.1%, +100.0%] (Tango)" in top


def _section(page: str, anchor: str) -> str:
    start = page.index(f'id="{anchor}"')
    return page[start : page.index("<h2", start)]


def test_unassessed_items_are_never_failing_or_fixed_and_the_statistics_say_their_n(staff_client):
    base, head = _outcome_runs(
        [
            ("passed", "failed"),
            ("failed", "passed"),
            ("unassessed", "passed"),
            ("unassessed", "unassessed"),
            ("unassessed", "failed"),
            ("passed", "unassessed"),
            ("failed", "failed"),
        ]
    )
    page = staff_client.get(f"/console/runs/compare/?base={base.run_id}&head={head.run_id}").content.decode()
    text = lambda html: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))  # noqa: E731
    assert "3 of 7 paired items assessed in both runs" in text(page[: page.index('id="compare-runs"')])
    assert "(1)" in text(_section(page, "fixes")) and "item 1" in text(_section(page, "fixes"))
    assert "item 2" not in text(_section(page, "fixes"))
    newly = text(_section(page, "newly-assessed"))
    assert "(2)" in newly and "item 2" in newly and "item 4" in newly
    assert "item 3" in text(_section(page, "still-unassessed"))
    assert "item 5" in text(_section(page, "no-longer-assessed"))
    failing = text(_section(page, "still-failing"))
    assert "item 6" in failing and "item 3" not in failing and "item 4" not in failing
    assert "(1)" in text(_section(page, "regressions")) and "item 4" not in text(_section(page, "regressions"))


def test_answer_edges_follow_each_answers_own_verdict(staff_client):
    base, head = _outcome_runs([("passed", "failed"), ("failed", "passed")])
    page = staff_client.get(f"/console/runs/compare/?base={base.run_id}&head={head.run_id}").content.decode()
    regression, fix = _section(page, "regressions"), _section(page, "fixes")
    # A regression: the answer before passed (green edge), after failed (red); a fix the reverse.
    assert 'class="answer answer-before answer-passed"' in regression
    assert 'class="answer answer-after answer-failed"' in regression
    assert 'class="answer answer-before answer-failed"' in fix and 'class="answer answer-after answer-passed"' in fix
    css = (settings.BASE_DIR / "static" / "console" / "console.css").read_text()
    assert re.search(r"\.answer-passed \{ border-left: 3px solid #1a7f37", css)
    assert re.search(r"\.answer-failed \{ border-left: 3px solid #cf222e", css)
    assert ".answer-before {" not in css and ".answer-after {" not in css, "no edge colour by side"
