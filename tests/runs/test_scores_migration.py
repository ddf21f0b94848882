"""Migrations 0011/0012 move every run verdict (criteria_scores, rubric_scores, a V1 question's
`scores`) and every VerdictReview into Score rows, and back (issue 22). The test builds old-style
rows at 0010, migrates forward, checks the rows and that the API answers the very verdict dicts
that were stored (the contract's shapes: same keys, same order, same values), then migrates back
and checks the JSON columns and reviews come back exactly."""

import json
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.core.llm.fingerprint import judge_fingerprint
from apps.runs.api.schemas import CriterionScore, RubricScore
from apps.runs.judging.types import JUDGE_HEURISTIC, Verdict
from apps.runs.models import EvaluationResult
from apps.scores.models import Score
from apps.scores.vocabulary import Reason, ScoreSource

BEFORE = [("runs", "0010_run_digest")]
FINGERPRINT = judge_fingerprint(judge=JUDGE_HEURISTIC)
RUBRIC_RULES = [
    {"id": "BRIEF", "name": "Brief", "severity": "medium", "component_scope": "prompt"},
    {"id": "USES_KB", "name": "Uses the KB", "severity": "high", "component_scope": "knowledge_base"},
    {"id": "GENERAL", "name": "No scope", "severity": "low", "component_scope": None},
]


def _criteria(flip: bool) -> list[dict]:
    """A demo item's criteria as the engine stored them: a judged one, one the judge skipped, an LLM
    verdict with usage, and a tool-use check."""
    return [
        Verdict.of(passed=not flip, reasoning="found it", judge=JUDGE_HEURISTIC)
        .with_fingerprint(FINGERPRINT)
        .for_criterion('Response mentions "1.5 days"')
        .to_json(),
        Verdict.skipped(JUDGE_HEURISTIC, "needs an LLM judge: prose")
        .with_fingerprint(FINGERPRINT)
        .for_criterion("Agent is polite")
        .to_json(),
        Verdict.of(
            passed=True,
            score=0.8125,
            reasoning="llm says yes",
            judge="openai:gpt-4o-mini",
            usage={"prompt_tokens": 120, "completion_tokens": 9},
            fingerprint=judge_fingerprint(judge="openai:gpt-4o-mini", model="gpt-4o-mini"),
        )
        .for_criterion("Agent answers the question")
        .to_json(),
        Verdict.of(passed=True, reasoning="called search_kb", judge=JUDGE_HEURISTIC)
        .with_fingerprint({**FINGERPRINT, "criterion": "uses search_kb"})
        .for_criterion("uses search_kb", kind="should_use_tools")
        .to_json(),
    ]


def _rules(flip: bool) -> list[dict]:
    return [
        Verdict.of(passed=True, reasoning="short", judge=JUDGE_HEURISTIC)
        .with_fingerprint(FINGERPRINT)
        .for_rule(RUBRIC_RULES[0], 1)
        .to_json(),
        (
            Verdict.of(passed=False, reasoning="no search", judge=JUDGE_HEURISTIC)
            if flip
            else Verdict.error(JUDGE_HEURISTIC, "Judge error: boom", fingerprint=FINGERPRINT)
        )
        .for_rule(RUBRIC_RULES[1], 1)
        .to_json(),
        Verdict.skipped(JUDGE_HEURISTIC, "needs an LLM judge: the rule has no pass or fail conditions to check.")
        .with_fingerprint(FINGERPRINT)
        .for_rule(RUBRIC_RULES[2], 1)
        .to_json(),
    ]


V1_OK = {
    "correctness": {
        "score": 0.5,
        "comment": json.dumps(
            {"passed": False, "status": "ok", "judge": JUDGE_HEURISTIC, "reasoning": "half the terms"}
        ),
    }
}
V1_BOT_ERROR = {"correctness": {"score": None, "comment": json.dumps({"error": "HTTP 500"})}}
# A comment in no shape the engine writes today: kept as it was.
V1_ODD = {"correctness": {"score": 1.0, "comment": "looks right to me"}}


def _case(n: int) -> uuid.UUID:
    return uuid.UUID(int=5000 + n)


def _old_rows(apps, reviewer):
    """Two demo-like runs of one test set (criteria, rules, reviews) and a V1 run, as stored before
    issue 22; returns what each result stored, by item name."""
    Run, Result = apps.get_model("runs", "EvaluationRun"), apps.get_model("runs", "EvaluationResult")
    Review = apps.get_model("runs", "VerdictReview")
    test_set = uuid.UUID(int=77)
    stored = {}
    runs = []
    for flip in (False, True):
        run = Run.objects.create(
            agent_id="b" * 24,
            test_set_id=test_set,
            test_set_version=1,
            rubric_id=uuid.UUID(int=78),
            rubric_version=1,
            status="completed",
            total=3,
            completed=3,
        )
        runs.append(run)
        for n in range(2):
            name = f"{'head' if flip else 'base'} {n}"
            criteria, rules = _criteria(flip and n == 0), _rules(flip and n == 0)
            stored[name] = {"criteria_scores": criteria, "rubric_scores": rules, "scores": None}
            Result.objects.create(
                run=run,
                position=n,
                test_case_id=_case(n),
                item_name=name,
                item_type="single_turn",
                state="done",
                criteria_scores=criteria,
                criteria_passed=False,
                rubric_scores=rules,
                rubric_passed=not flip,
                passed=False,
                outcome="failed" if flip else "unassessed",
            )
        # The bot failed: the engine stored no verdict lists at all.
        name = f"{'head' if flip else 'base'} fault"
        stored[name] = {"criteria_scores": None, "rubric_scores": None, "scores": None}
        Result.objects.create(
            run=run,
            position=2,
            test_case_id=_case(2),
            item_name=name,
            item_type="single_turn",
            state="done",
            passed=False,
            outcome="failed",
            error="Bot error: down",
        )
    base_first = Result.objects.get(item_name="base 0")
    Review.objects.create(
        result=base_first,
        kind="criterion",
        key='Response mentions "1.5 days"',
        judge_passed=True,
        judge_status="ok",
        judge=JUDGE_HEURISTIC,
        passed=False,
        note="wrong number",
        reviewer_id=reviewer.pk,
        reviewer_name=reviewer.username,
    )
    Review.objects.create(
        result=base_first,
        kind="rule",
        key="USES_KB",
        judge_passed=None,
        judge_status="error",
        judge=JUDGE_HEURISTIC,
        passed=True,
        note="",
        reviewer_id=reviewer.pk,
        reviewer_name=reviewer.username,
    )
    Review.objects.create(
        result=base_first,
        kind="criterion",
        key='Response mentions "1.5 days"',
        judge_passed=True,
        judge_status="ok",
        judge=JUDGE_HEURISTIC,
        passed=True,
        note="on second thought",
        reviewer=None,
        reviewer_name="",
    )
    v1 = Run.objects.create(agent_id="b" * 24, dataset_id=uuid.UUID(int=79), status="completed", total=3, completed=3)
    for n, scores in enumerate((V1_OK, V1_BOT_ERROR, V1_ODD)):
        name = f"v1 {n}"
        stored[name] = {"criteria_scores": None, "rubric_scores": None, "scores": scores}
        Result.objects.create(
            run=v1,
            position=n,
            test_case_id=_case(n),
            item_name=name,
            item_type="question",
            state="done",
            scores=scores,
            passed=n == 2,
            outcome="passed" if n == 2 else "failed",
        )
    stored["pending"] = {"criteria_scores": None, "rubric_scores": None, "scores": None}
    Result.objects.create(run=v1, position=9, test_case_id=_case(9), item_name="pending", item_type="question")
    reviews = list(
        Review.objects.order_by("id").values(
            "review_id",
            "result_id",
            "kind",
            "key",
            "judge_passed",
            "judge_status",
            "judge",
            "passed",
            "note",
            "reviewer_id",
            "reviewer_name",
            "created_at",
        )
    )
    return stored, reviews, [run.run_id for run in runs]


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def _answered_before(stored: dict) -> dict:
    """What the API answered for a stored verdict before issue 22: the stored dict through its Out
    schema (respond), as JSON."""
    schema = RubricScore if "rule_id" in stored else CriterionScore
    return json.loads(json.dumps(schema.model_validate(stored).model_dump(), default=str))


def _assert_same_verdicts(answered: list[dict] | None, stored: list[dict] | None):
    """The API's verdicts are the ones it answered from the stored JSON: same keys in the same
    order, same values."""
    assert (answered is None) == (stored is None)
    for got, want in zip(answered or [], stored or [], strict=True):
        want = _answered_before(want)
        assert list(got) == list(want)
        assert got == want


# transaction=True: migrating alters the runs tables, which SQLite's schema editor refuses inside
# the atomic block the plain db fixture wraps a test in.
@pytest.mark.django_db(transaction=True)
def test_verdicts_and_reviews_move_to_score_rows_and_back(api):
    reviewer = get_user_model().objects.create(username="rita")
    old = _migrate(BEFORE)
    try:
        stored, reviews, (base_id, head_id) = _old_rows(old, reviewer)
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    # 4 criteria + 3 rules on each of 4 demo results, 3 V1 correctness rows, 3 reviews.
    assert Score.objects.machine().count() == 4 * 7 + 3
    humans = list(Score.objects.human().order_by("created_at", "id"))
    assert [(h.kind, h.key, h.passed, h.reasoning, h.author_id) for h in humans] == [
        ("criterion", 'Response mentions "1.5 days"', False, "wrong number", reviewer.pk),
        ("rule", "USES_KB", True, "", reviewer.pk),
        ("criterion", 'Response mentions "1.5 days"', True, "on second thought", None),
    ]
    assert humans[0].detail["reviewer_name"] == "rita" and humans[0].detail["review_id"] == str(reviews[0]["review_id"])
    # The heuristic judge's "needs an LLM judge" skips carry the reason; an LLM verdict is source llm.
    assert Score.objects.filter(reason=Reason.NEEDS_LLM_JUDGE).count() == 4 * 2
    assert set(Score.objects.filter(judge="openai:gpt-4o-mini").values_list("source", flat=True)) == {ScoreSource.LLM}
    rule = Score.objects.get(key="GENERAL", subject_id__in=Score.objects.filter(key="BRIEF").values("subject_id")[:1])
    assert (rule.severity, rule.scope, rule.detail, rule.position) == ("low", "", {"rule_name": "No scope"}, 2)

    # The API answers exactly what was stored: results lists, each result, its reviews and the comparison.
    for run_id in (base_id, head_id):
        for result in api.get(f"/api/v1/runs/{run_id}/results").json():
            want = stored[result["item_name"]]
            _assert_same_verdicts(result["criteria_scores"], want["criteria_scores"])
            _assert_same_verdicts(result["rubric_scores"], want["rubric_scores"])
            assert result["scores"] == want["scores"]
            detail = api.get(f"/api/v1/results/{result['result_id']}").json()
            _assert_same_verdicts(detail["criteria_scores"], want["criteria_scores"])
            _assert_same_verdicts(detail["rubric_scores"], want["rubric_scores"])
    for result in EvaluationResult.objects.filter(item_type="question", state="done"):
        answered = api.get(f"/api/v1/results/{result.result_id}").json()
        assert answered["scores"] == stored[result.item_name]["scores"]
        assert answered["criteria_scores"] is None and answered["rubric_scores"] is None
    base_first = EvaluationResult.objects.get(item_name="base 0")
    answered_reviews = api.get(f"/api/v1/results/{base_first.result_id}/reviews").json()
    assert [
        (
            r["review_id"],
            r["kind"],
            r["passed"],
            r["note"],
            r["judge_passed"],
            r["judge_status"],
            r["reviewer"],
            r["in_force"],
        )
        for r in answered_reviews
    ] == [
        (str(reviews[0]["review_id"]), "criterion", False, "wrong number", True, "ok", "rita", False),
        (str(reviews[1]["review_id"]), "rule", True, "", None, "error", "rita", True),
        (str(reviews[2]["review_id"]), "criterion", True, "on second thought", True, "ok", "", True),
    ]
    comparison = api.get(f"/api/v1/runs/{base_id}/compare/{head_id}")
    assert comparison.status_code == 200
    run = api.get(f"/api/v1/runs/{base_id}").json()
    assert run["judge_fingerprints"] and run["component_scores"]["prompt"] == {"score": 1.0, "total": 2, "passed": 2}

    # Backwards: the JSON columns and the reviews come back as they were.
    old = _migrate(BEFORE)
    try:
        Result, Review = old.get_model("runs", "EvaluationResult"), old.get_model("runs", "VerdictReview")
        for result in Result.objects.all():
            want = stored[result.item_name]
            # Equal values (PostgreSQL's jsonb never kept a stored object's key order; the API's
            # order comes from its schemas, checked above).
            assert (result.criteria_scores, result.rubric_scores, result.scores) == (
                want["criteria_scores"],
                want["rubric_scores"],
                want["scores"],
            ), result.item_name
        assert list(Review.objects.order_by("created_at", "id").values(*reviews[0])) == reviews
        assert not Score.objects.filter(subject_kind="run_result").exists()
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
