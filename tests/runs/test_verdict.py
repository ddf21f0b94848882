"""The Verdict type: the one reader and writer of stored verdict JSON, rows written by older
versions included, and the judge labels runs store."""

import json

import pytest

from apps.core.errors import InvalidInputError
from apps.runs.executor import JudgeChoice
from apps.runs.judging.aggregate import item_outcome
from apps.runs.judging.types import CRITERION, JUDGE_HEURISTIC, RULE, Verdict

RULE_DEF = {
    "id": "NO_HANDOFF",
    "name": "No hand-off",
    "severity": "high",
    "component_scope": "prompt",
    "evaluation_criteria": {"fail_conditions": ["Agent transfers to a human"]},
}


class TestStoredShape:
    def test_criterion_round_trips_with_the_stored_keys_in_order(self):
        verdict = Verdict.of(passed=True, score=0.875, reasoning="met", judge=JUDGE_HEURISTIC).for_criterion(
            "Cites PTO"
        )
        stored = verdict.to_json()
        # The API returns the column as stored, so key order is part of its shape.
        assert list(stored) == ["criterion", "passed", "score", "reasoning", "status", "judge", "kind"]
        assert stored == {
            "criterion": "Cites PTO",
            "passed": True,
            "score": 0.875,
            "reasoning": "met",
            "status": "ok",
            "judge": "heuristic:v1",
            "kind": "success_criterion",
        }
        assert Verdict.from_json(stored) == verdict
        assert Verdict.from_json(json.loads(json.dumps(stored))).to_json() == stored

    def test_rule_round_trips_with_usage(self):
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        verdict = Verdict.of(
            passed=False, score=0.2, reasoning="handed off", judge="openai:gpt-4o-mini", usage=usage
        ).for_rule(RULE_DEF)
        stored = verdict.to_json()
        assert list(stored) == [
            "rule_id",
            "rule_name",
            "severity",
            "passed",
            "score",
            "reasoning",
            "status",
            "judge",
            "usage",
            "component_scope",
        ]
        assert (stored["rule_id"], stored["severity"], stored["component_scope"], stored["usage"]) == (
            "NO_HANDOFF",
            "high",
            "prompt",
            usage,
        )
        assert Verdict.from_json(stored) == verdict
        assert Verdict.from_json(stored, kind=RULE).to_json() == stored

    def test_skipped_and_error_verdicts_round_trip(self):
        for verdict in (
            Verdict.skipped(JUDGE_HEURISTIC, "cannot check").for_rule(RULE_DEF),
            Verdict.error("openai:m", "timeout").for_criterion("c", kind="should_use_tools"),
        ):
            assert Verdict.from_json(verdict.to_json()) == verdict
            assert verdict.to_json()["passed"] is None and verdict.to_json()["score"] is None

    def test_an_unattached_verdict_is_not_stored(self):
        with pytest.raises(ValueError):
            Verdict.of(passed=True, reasoning="", judge=JUDGE_HEURISTIC).to_json()

    def test_list_from_json_reads_a_missing_column_as_no_verdicts(self):
        assert Verdict.list_from_json(None, kind=CRITERION) == []


class TestLegacyRows:
    """Rows stored before status, judge, usage, kind and component_scope existed."""

    def test_a_criterion_without_status_is_ok(self):
        verdict = Verdict.from_json({"criterion": "Cites PTO", "passed": True, "score": 1.0, "reasoning": "met"})
        assert (verdict.kind, verdict.key, verdict.status, verdict.judge, verdict.usage) == (
            CRITERION,
            "Cites PTO",
            "ok",
            "",
            {},
        )
        assert verdict.counts_as_passed and not verdict.failed
        assert verdict.criterion_kind is None  # nothing invented for a row that never said

    def test_a_rule_without_status_or_scope_is_an_assessed_general_rule(self):
        verdict = Verdict.from_json(
            {"rule_id": "R1", "rule_name": "One", "severity": "high", "passed": False, "score": 0.0, "reasoning": "no"}
        )
        assert (verdict.kind, verdict.key, verdict.status, verdict.component_scope) == (RULE, "R1", "ok", None)
        assert verdict.assessed and verdict.failed
        assert item_outcome([], [verdict]) == (True, False, False, "failed")

    def test_a_rule_without_severity_has_none(self):
        verdict = Verdict.from_json({"rule_id": "R1", "passed": False})
        assert verdict.severity is None and verdict.reasoning == "" and verdict.rule_name == ""


class TestFailedAndAssessed:
    def test_a_skipped_rule_or_criterion_neither_passes_nor_fails(self):
        # Issue 20: a skipped criterion used to count as failed; like a skipped rule, it leaves the
        # item unassessed (aggregate.item_outcome) and is no failure to list.
        skipped = Verdict.skipped(JUDGE_HEURISTIC, "cannot check")
        assert not skipped.for_rule(RULE_DEF).failed and not skipped.for_rule(RULE_DEF).assessed
        criterion = skipped.for_criterion("c")
        assert not criterion.failed and not criterion.assessed and not criterion.counts_as_passed

    def test_an_errored_criterion_fails(self):
        assert Verdict.error(JUDGE_HEURISTIC, "boom").for_criterion("c").failed

    def test_an_errored_rule_fails(self):
        assert Verdict.error(JUDGE_HEURISTIC, "boom").for_rule(RULE_DEF).failed

    def test_a_review_makes_an_unjudged_verdict_assessed(self):
        reviewed = Verdict.error(JUDGE_HEURISTIC, "boom").for_rule(RULE_DEF).with_review(True)
        assert (reviewed.status, reviewed.passed, reviewed.counts_as_passed) == ("ok", True, True)


class TestJudgeChoiceFromLabel:
    def test_the_heuristic_label(self):
        choice = JudgeChoice.from_label(JUDGE_HEURISTIC)
        assert choice.client is None and choice.label == JUDGE_HEURISTIC
        assert JudgeChoice.model_of(JUDGE_HEURISTIC) is None

    def test_an_openai_label_names_its_model(self, settings):
        settings.OPENAI_API_KEY = "sk-test"
        choice = JudgeChoice.from_label("openai:gpt-4o-mini")
        assert choice.client.model == "gpt-4o-mini" and choice.label == "openai:gpt-4o-mini"
        # A model name may itself hold a colon (Ollama tags); only the first one splits.
        assert JudgeChoice.model_of("openai:llama3:8b") == "llama3:8b"

    @pytest.mark.parametrize(
        "label", ["", "heuristic", "heuristic:v2", "openai:", "openai", "anthropic:claude-3", "gpt-4o-mini"]
    )
    def test_other_labels_are_refused(self, label):
        with pytest.raises(InvalidInputError):
            JudgeChoice.model_of(label)
        with pytest.raises(InvalidInputError):
            JudgeChoice.from_label(label)
