"""Runs and results written straight to the database, with exactly the verdicts a test needs; and
the test items and rubric snapshot the run engine reads from its sources (tests/runs/conftest.py `plan`)."""

import uuid

import factory

from apps.core.models import Project
from apps.runs.judging.aggregate import item_outcome
from apps.runs.judging.types import CRITERION, RULE, Verdict
from apps.runs.models import EvaluationResult, EvaluationRun
from apps.scores.models import Score
from apps.scores.services import scores_store
from apps.scores.vocabulary import ScoreSource, SubjectKind
from tests.fakes.bot_server import knowledge_bot

TEST_SET = uuid.UUID(int=7001)
RUBRIC = uuid.UUID(int=7002)

# A rubric snapshot as the engine reads it: one rule of each scope the aggregate groups by.
RUBRIC_SNAPSHOT = {
    "rules": [
        {
            "id": "BRIEF",
            "name": "Brief",
            "severity": "medium",
            "component_scope": "prompt",
            "component_ids": [],
            "evaluation_criteria": {"pass_conditions": ["Response is under 4 sentences"], "fail_conditions": []},
        },
        {
            "id": "USES_KB",
            "name": "Uses the KB",
            "severity": "high",
            "component_scope": "knowledge_base",
            "component_ids": ["kb1"],
            "evaluation_criteria": {"pass_conditions": ["Agent calls search_kb"], "fail_conditions": []},
        },
        {
            "id": "NO_HANDOFF",
            "name": "No needless handoff",
            "severity": "high",
            "component_scope": "function",
            "component_ids": ["t2"],
            "evaluation_criteria": {"pass_conditions": [], "fail_conditions": ["Agent transfers to a human"]},
        },
    ]
}
# Criteria in shapes the offline judge checks (docs/offline-judge.md). In prose ("Agent retrieves the
# PTO policy from the handbook", "Response includes the monthly accrual of 1.5 days") they used to pass
# by proxy; the judge now skips prose and the item would be unassessed (issue 20).
PTO_CRITERIA = ['Agent retrieves "PTO Policy" from the knowledge base', 'Response mentions "1.5 days"']
PTO_ITEM = {
    "item_id": "i1",
    "type": "single_turn",
    "name": "PTO",
    "inputs": {"message": "How many PTO days do I accrue per month?"},
    "expected": {
        "success_criteria": PTO_CRITERIA,
        "should_use_tools": ["search_kb"],
        "should_not_use_tools": ["live_handoff"],
    },
}


# The ids the `plan` fixture (tests/runs/conftest.py) serves a bot, test set, rubric and question set under.
PLAN_AGENT = "a" * 24
PLAN_TEST_SET = uuid.UUID(int=1)
PLAN_RUBRIC = uuid.UUID(int=2)
PLAN_DATASET = uuid.UUID(int=3)


WIFI_CRITERION = 'Response mentions "wifi password"'


def make_items(n):
    """n test set items as the engine reads them; every third asks what the handbook does not cover."""
    items = []
    for i in range(n):
        item = {**PTO_ITEM, "item_id": str(uuid.UUID(int=100 + i)), "name": f"item {i}"}
        if i % 3 == 2:
            item = {
                **item,
                "inputs": {"message": "What is the wifi password?"},
                "expected": {"success_criteria": [WIFI_CRITERION]},
            }
        items.append(item)
    return items


def criterion(text: str, passed: bool, status: str = "ok", score: float | None = None) -> dict:
    """A criterion verdict as the engine stores it in EvaluationResult.criteria_scores."""
    return {
        "criterion": text,
        "passed": passed if status == "ok" else None,
        "score": (1.0 if passed else 0.0) if score is None and status == "ok" else score,
        "reasoning": f"{text}: {'met' if passed else 'not met'}",
        "status": status,
        "judge": "heuristic:v1",
        "kind": "criterion",
    }


def rule(rule_id: str, passed: bool, severity: str = "high", status: str = "ok", scope: str | None = "prompt") -> dict:
    """A rubric rule verdict as the engine stores it in EvaluationResult.rubric_scores."""
    return {
        "rule_id": rule_id,
        "rule_name": rule_id.title(),
        "severity": severity,
        "passed": passed if status == "ok" else None,
        "score": (1.0 if passed else 0.0) if status == "ok" else None,
        "reasoning": "why",
        "status": status,
        "judge": "heuristic:v1",
        "component_scope": scope,
    }


class EvaluationRunFactory(factory.django.DjangoModelFactory):
    """A completed run of version 1 of a test set and a rubric (no rubric: rubric_id=None)."""

    class Meta:
        model = EvaluationRun

    project = factory.LazyFunction(Project.objects.default)
    agent_id = "b" * 24
    test_set_id = TEST_SET
    test_set_version = 1
    rubric_id = RUBRIC
    rubric_version = factory.LazyAttribute(lambda o: 1 if o.rubric_id else None)
    status = EvaluationRun.Status.COMPLETED


def _outcome(result) -> tuple[bool, bool, bool]:
    """(criteria_passed, rubric_passed, passed, outcome) the way the engine computes them from the verdicts;
    criteria_passed is None for a result with no criteria list (a V1 question), as the engine stores it."""
    rules = None if result.rubric_scores is None else Verdict.list_from_json(result.rubric_scores, kind=RULE)
    outcome = item_outcome(Verdict.list_from_json(result.criteria_scores, kind=CRITERION), rules)
    return (None if result.criteria_scores is None else outcome[0], *outcome[1:])


def store_verdicts(results) -> None:
    """Writes the verdicts saved results carry in memory (given as criteria_scores=, rubric_scores=,
    scores=) as their Score rows, as the engine does (services._record)."""
    rows = []
    for result in results:
        for row in result.__dict__.get("_verdict_rows") or []:
            if row.pk is None:
                row.subject_id, row.parent_id, row.attempt = result.pk, result.run_id, result.attempt
                if result.finished_at is not None:
                    row.created_at = result.finished_at
                rows.append(row)
    scores_store(rows=rows)


def results_bulk_create(results, **kwargs) -> list[EvaluationResult]:
    """EvaluationResult.objects.bulk_create, with the verdicts the results were built with."""
    created = EvaluationResult.objects.bulk_create(results, **kwargs)
    store_verdicts(created)
    return created


def result_create(**fields) -> EvaluationResult:
    """EvaluationResult.objects.create, with the verdicts given (criteria_scores=, ...)."""
    result = EvaluationResult.objects.create(**fields)
    store_verdicts([result])
    return result


class EvaluationResultFactory(factory.django.DjangoModelFactory):
    """A finished result whose passed flags follow from its verdicts as the engine computes them.
    The run's total and completed count it, so run pages and figures see it."""

    class Meta:
        model = EvaluationResult
        skip_postgeneration_save = True

    class Params:
        tags = ()
        priority = "medium"

    run = factory.SubFactory(EvaluationRunFactory)
    position = factory.Sequence(lambda n: n)
    # Derived from the position, so results at the same position of two runs are the same test case
    # (what compare and "previous run" join on).
    test_case_id = factory.LazyAttribute(lambda o: uuid.UUID(int=10_000 + o.position))
    item_name = factory.LazyAttribute(lambda o: f"item {o.position}")
    item_type = "single_turn"
    state = EvaluationResult.State.DONE
    item = factory.LazyAttribute(
        lambda o: {"type": o.item_type, "tags": list(o.tags), "priority": o.priority, "inputs": {"message": "hi"}}
    )
    input = factory.LazyFunction(lambda: {"message": "hi"})
    output = factory.LazyFunction(
        lambda: {
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello", "tool_calls": []}]
        }
    )
    # The verdicts, in their stored shape: written as Score rows once the result exists (_create).
    criteria_scores = factory.LazyFunction(list)
    rubric_scores = None
    scores = None
    criteria_passed = factory.LazyAttribute(lambda o: _outcome(o)[0])
    rubric_passed = factory.LazyAttribute(lambda o: _outcome(o)[1])
    passed = factory.LazyAttribute(lambda o: _outcome(o)[2])
    outcome = factory.LazyAttribute(lambda o: _outcome(o)[3])
    duration_ms = 5

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        result = super()._create(model_class, *args, **kwargs)
        store_verdicts([result])
        return result

    @factory.post_generation
    def count_in_run(self, create, extracted, **kwargs):
        if create:
            done = self.run.results.count()
            EvaluationRun.objects.filter(pk=self.run_id).update(total=done, completed=done)


# No success criteria and no rubric: an item passes exactly when the bot answers, so which
# attempts pass is decided by the fake bot below and nothing else.
REPEAT_ITEMS = [
    {
        "item_id": str(uuid.UUID(int=100 + n)),
        "type": "single_turn",
        "name": name,
        "inputs": {"message": f"question {n}"},
        "expected": {"success_criteria": []},
    }
    for n, name in enumerate(["sometimes", "never", "always"])
]


def repeat_answers(request):
    """A fake bot's behaviour (tests.fakes.bot_server) for REPEAT_ITEMS: "sometimes" fails on its
    second attempt, "never" on every attempt, "always" on none."""
    conversation = request["conversation_id"]
    question = request["messages"][-1]["content"]
    if question == "question 1" or (question == "question 0" and conversation.endswith(":2")):
        return 500, {"error": "down"}
    return knowledge_bot(request)


def verdict_reviews(*, result=None, run=None):
    """Reviews of run results: the human Score rows (what VerdictReview rows were), oldest first."""
    rows = Score.objects.of(SubjectKind.RUN_RESULT).human()
    if result is not None:
        rows = rows.filter(subject_id=result.pk)
    if run is not None:
        rows = rows.filter(parent_id=run.pk)
    return rows.order_by("created_at", "id")


def review_views(result: EvaluationResult):
    """The result's reviews as pages and the API show them (beside the judge's verdict)."""
    from apps.runs.selectors import verdict_review_list

    return verdict_review_list(result=result)


def review_create(*, result: EvaluationResult, kind: str, key: str, passed: bool, note: str = "", reviewer=None):
    """A review as a person gives it (services.verdict_review_create): a human Score."""
    from apps.runs.services import verdict_review_create

    return verdict_review_create(result=result, kind=kind, key=key, passed=passed, note=note, reviewer=reviewer)


def human_score(result: EvaluationResult, *, kind: str, key: str, passed: bool) -> Score:
    """An unsaved human Score on a result's verdict, for bulk fixtures."""
    return Score(
        subject_kind=SubjectKind.RUN_RESULT,
        subject_id=result.pk,
        parent_id=result.run_id,
        attempt=result.attempt,
        kind=kind,
        key=key,
        source=ScoreSource.HUMAN,
        passed=passed,
    )
