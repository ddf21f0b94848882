"""Issue 16: the compare page says at the top whether the head run is worse, better or within
noise (with the paired counts), and whether the judge changed; the run page shows its judges."""

import re

import pytest

from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion

pytestmark = pytest.mark.django_db


def _fingerprinted(passed: bool, prompt: str = "3f2a11112222", model: str = "m") -> list[dict]:
    return [{**criterion("c", passed), "fingerprint": {"judge": "llm", "model": model, "prompt_template": prompt,
                                                       "judge_version": "1", "criterion": "c"}}]


def _runs(head_passes, *, head_prompt="3f2a11112222", n=8):
    base, head = EvaluationRunFactory(), EvaluationRunFactory()
    for position in range(n):
        EvaluationResultFactory(run=base, position=position, criteria_scores=_fingerprinted(True))
        EvaluationResultFactory(run=head, position=position,
                                criteria_scores=_fingerprinted(position < head_passes, prompt=head_prompt))
    return base, head


def _top(staff_client, base, head) -> str:
    """The page's text between its heading and the runs' table."""
    page = staff_client.get(f"/console/runs/compare/?base={base.run_id}&head={head.run_id}").content.decode()
    top = page[page.index("<h1>Compare runs</h1>"):page.index('id="compare-runs"')]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", top))


def test_a_significant_regression_is_worse_with_its_counts_at_the_top(staff_client):
    base, head = _runs(head_passes=2)
    top = _top(staff_client, base, head)
    assert "Worse, significant at 95%" in top
    assert "8 paired items: 2 both passed, 0 both failed, 6 pass→fail, 0 fail→pass · McNemar p = 0.031" in top
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
