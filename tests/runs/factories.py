"""Runs and results written straight to the database, with exactly the verdicts a test needs; and
the test items and rubric snapshot the run engine reads from its sources (tests/runs/conftest.py `plan`)."""

import uuid

import factory

from apps.runs.judging.aggregate import item_outcome
from apps.runs.judging.types import CRITERION, RULE, Verdict
from apps.runs.models import EvaluationResult, EvaluationRun
from tests.fakes.bot_server import knowledge_bot

TEST_SET = uuid.UUID(int=7001)
RUBRIC = uuid.UUID(int=7002)

# A rubric snapshot as the engine reads it: one rule of each scope the aggregate groups by.
RUBRIC_SNAPSHOT = {"rules": [
    {"id": "BRIEF", "name": "Brief", "severity": "medium", "component_scope": "prompt", "component_ids": [],
     "evaluation_criteria": {"pass_conditions": ["Response is under 4 sentences"], "fail_conditions": []}},
    {"id": "USES_KB", "name": "Uses the KB", "severity": "high", "component_scope": "knowledge_base",
     "component_ids": ["kb1"], "evaluation_criteria": {"pass_conditions": ["Agent calls search_kb"], "fail_conditions": []}},
    {"id": "NO_HANDOFF", "name": "No needless handoff", "severity": "high", "component_scope": "function",
     "component_ids": ["t2"], "evaluation_criteria": {"pass_conditions": [], "fail_conditions": ["Agent transfers to a human"]}},
]}
# Criteria in shapes the offline judge checks (docs/offline-judge.md). In prose ("Agent retrieves the
# PTO policy from the handbook", "Response includes the monthly accrual of 1.5 days") they used to pass
# by proxy; the judge now skips prose and the item would be unassessed (issue 20).
PTO_CRITERIA = ['Agent retrieves "PTO Policy" from the knowledge base', 'Response mentions "1.5 days"']
PTO_ITEM = {"item_id": "i1", "type": "single_turn", "name": "PTO", "inputs": {"message": "How many PTO days do I accrue per month?"},
            "expected": {"success_criteria": PTO_CRITERIA,
                         "should_use_tools": ["search_kb"], "should_not_use_tools": ["live_handoff"]}}


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
            item = {**item, "inputs": {"message": "What is the wifi password?"},
                    "expected": {"success_criteria": [WIFI_CRITERION]}}
        items.append(item)
    return items


def criterion(text: str, passed: bool, status: str = "ok", score: float | None = None) -> dict:
    """A criterion verdict as the engine stores it in EvaluationResult.criteria_scores."""
    return {"criterion": text, "passed": passed if status == "ok" else None,
            "score": (1.0 if passed else 0.0) if score is None and status == "ok" else score,
            "reasoning": f"{text}: {'met' if passed else 'not met'}", "status": status, "judge": "heuristic:v1",
            "kind": "criterion"}


def rule(rule_id: str, passed: bool, severity: str = "high", status: str = "ok", scope: str | None = "prompt") -> dict:
    """A rubric rule verdict as the engine stores it in EvaluationResult.rubric_scores."""
    return {"rule_id": rule_id, "rule_name": rule_id.title(), "severity": severity,
            "passed": passed if status == "ok" else None, "score": (1.0 if passed else 0.0) if status == "ok" else None,
            "reasoning": "why", "status": status, "judge": "heuristic:v1", "component_scope": scope}


class EvaluationRunFactory(factory.django.DjangoModelFactory):
    """A completed run of version 1 of a test set and a rubric (no rubric: rubric_id=None)."""

    class Meta:
        model = EvaluationRun

    agent_id = "b" * 24
    test_set_id = TEST_SET
    test_set_version = 1
    rubric_id = RUBRIC
    rubric_version = factory.LazyAttribute(lambda o: 1 if o.rubric_id else None)
    status = EvaluationRun.Status.COMPLETED


def _outcome(result) -> tuple[bool, bool, bool]:
    """(criteria_passed, rubric_passed, passed, outcome) the way the engine computes them from the verdicts."""
    rules = None if result.rubric_scores is None else Verdict.list_from_json(result.rubric_scores, kind=RULE)
    return item_outcome(Verdict.list_from_json(result.criteria_scores, kind=CRITERION), rules)


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
    item = factory.LazyAttribute(lambda o: {"type": o.item_type, "tags": list(o.tags), "priority": o.priority,
                                            "inputs": {"message": "hi"}})
    input = factory.LazyFunction(lambda: {"message": "hi"})
    output = factory.LazyFunction(lambda: {"messages": [{"role": "user", "content": "hi"},
                                                        {"role": "assistant", "content": "hello", "tool_calls": []}]})
    criteria_scores = factory.LazyFunction(list)
    rubric_scores = None
    criteria_passed = factory.LazyAttribute(lambda o: _outcome(o)[0])
    rubric_passed = factory.LazyAttribute(lambda o: _outcome(o)[1])
    passed = factory.LazyAttribute(lambda o: _outcome(o)[2])
    outcome = factory.LazyAttribute(lambda o: _outcome(o)[3])
    duration_ms = 5

    @factory.post_generation
    def count_in_run(self, create, extracted, **kwargs):
        if create:
            done = self.run.results.count()
            EvaluationRun.objects.filter(pk=self.run_id).update(total=done, completed=done)


# No success criteria and no rubric: an item passes exactly when the bot answers, so which
# attempts pass is decided by the fake bot below and nothing else.
REPEAT_ITEMS = [{"item_id": str(uuid.UUID(int=100 + n)), "type": "single_turn", "name": name,
                 "inputs": {"message": f"question {n}"}, "expected": {"success_criteria": []}}
                for n, name in enumerate(["sometimes", "never", "always"])]


def repeat_answers(request):
    """A fake bot's behaviour (tests.fakes.bot_server) for REPEAT_ITEMS: "sometimes" fails on its second attempt, "never" on every attempt, "always" on none."""
    conversation = request["conversation_id"]
    question = request["messages"][-1]["content"]
    if question == "question 1" or (question == "question 0" and conversation.endswith(":2")):
        return 500, {"error": "down"}
    return knowledge_bot(request)
