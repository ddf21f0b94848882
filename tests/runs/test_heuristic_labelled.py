"""The offline judge against its labelled set (tests/runs/heuristic_cases.py), issue 20 point 1:
no false pass, a reasoning that names its check or starts "needs an LLM judge", coverage and
accuracy (bench/judge_coverage.py prints the same figures)."""

import pytest

from apps.core.llm.fingerprint import JUDGE_VERSION, judge_fingerprint
from apps.runs.judging.fingerprint import judge_changes, judge_part
from apps.runs.judging.types import JUDGE_HEURISTIC
from tests.runs.heuristic_cases import CASES, answer_of, figures, verdict_of

ADVERSARIAL = (
    "term-wrong-answer",
    "terms-and-tool-wrong",
    "tool-is-called",  # right tool, wrong answer
    "term-negated",
    "term-negated-after",
    "terms-multi-turn-negated",
    "rule-term-negated",  # negated
    "term-quoted-question",
    "term-attributed",
    "term-echoed-sentence",
    "term-multi-turn-quoted",  # quoted
    "term-refusal",
    "term-refusal-plain",  # refusals
    "prose-dog",
    "prose-accrual",
    "prose-hotel",
    "prose-partial",  # prose that must be skipped
    "terms-multi-turn",
    "term-after-refused-turn",
)  # multi-turn


def test_the_set_is_large_and_holds_every_kind_of_adversarial_case():
    ids = [labelled["id"] for labelled in CASES]
    assert len(ids) == len(set(ids)) >= 60
    assert set(ADVERSARIAL) <= set(ids)
    assert {labelled["expected"] for labelled in CASES} == {"pass", "fail", "skipped"}
    assert sum(1 for labelled in CASES if "rule" in labelled) >= 20
    assert sum(1 for labelled in CASES if len(labelled["transcript"].assistant_replies) > 1) >= 5


@pytest.mark.parametrize("labelled", CASES, ids=[labelled["id"] for labelled in CASES])
def test_no_false_pass_and_the_reasoning_names_the_check(labelled):
    verdict = verdict_of(labelled)
    got = answer_of(verdict)
    if labelled["expected"] != "pass":
        assert got != "pass", f"false pass: {verdict.reasoning}"
    assert got == labelled["expected"], verdict.reasoning
    assert verdict.judge == JUDGE_HEURISTIC
    if got == "skipped":
        assert verdict.passed is None and verdict.score is None
        assert verdict.reasoning.startswith("needs an LLM judge: ")
    else:
        assert verdict.reasoning.startswith(("Passed. Checked ", "Failed. Checked "))


def test_coverage_and_accuracy():
    result = figures()
    assert result["false_passes"] == []
    assert result["accuracy"] == 1.0 and result["wrong"] == []
    # What the docs report (docs/offline-judge.md): 87 of 112 cases answered.
    assert (result["cases"], result["answered"]) == (112, 87)
    assert result["coverage"] == pytest.approx(0.777, abs=0.001)


def test_the_judge_version_marks_the_change_so_runs_across_it_are_flagged():
    """The label stays heuristic:v1; evalsite's judge version moved to 2 with these verdicts, so a
    comparison of a run judged before and one judged after says the judge changed."""
    assert JUDGE_VERSION == "2"
    before = judge_part({**judge_fingerprint(judge=JUDGE_HEURISTIC), "judge_version": "1"})
    after = judge_part(judge_fingerprint(judge=JUDGE_HEURISTIC))
    assert after == {"judge": "heuristic:v1", "judge_version": "2"}
    assert judge_changes([before], [after]) == ["judge version 1 → 2"]
