"""Runs and results written straight to the database, with exactly the verdicts a test needs."""

import uuid

from apps.runs.models import EvaluationResult, EvaluationRun

TEST_SET = uuid.UUID(int=7001)
RUBRIC = uuid.UUID(int=7002)


def criterion(text: str, passed: bool, status: str = "ok", score: float | None = None) -> dict:
    return {"criterion": text, "passed": passed if status == "ok" else None,
            "score": (1.0 if passed else 0.0) if score is None and status == "ok" else score,
            "reasoning": f"{text}: {'met' if passed else 'not met'}", "status": status, "judge": "heuristic:v1",
            "kind": "criterion"}


def rule(rule_id: str, passed: bool, severity: str = "high", status: str = "ok", scope: str | None = "prompt") -> dict:
    return {"rule_id": rule_id, "rule_name": rule_id.title(), "severity": severity,
            "passed": passed if status == "ok" else None, "score": (1.0 if passed else 0.0) if status == "ok" else None,
            "reasoning": "why", "status": status, "judge": "heuristic:v1", "component_scope": scope}


def make_run(*, agent_id="b" * 24, test_set_id=TEST_SET, rubric_id=RUBRIC, **fields) -> EvaluationRun:
    return EvaluationRun.objects.create(agent_id=agent_id, test_set_id=test_set_id, test_set_version=1,
                                        rubric_id=rubric_id, rubric_version=1 if rubric_id else None,
                                        status="completed", **fields)


def make_result(run: EvaluationRun, position: int, *, criteria: list[dict], rules: list[dict] | None = None,
                case: uuid.UUID | None = None, name: str = "", tags=(), priority="medium",
                item_type="single_turn") -> EvaluationResult:
    from apps.runs.judging.aggregate import item_outcome

    criteria_passed, rubric_passed, passed = item_outcome(criteria, rules)
    result = EvaluationResult.objects.create(
        run=run, position=position, test_case_id=case or uuid.UUID(int=10_000 + position),
        item_name=name or f"item {position}", item_type=item_type, state="done",
        item={"type": item_type, "tags": list(tags), "priority": priority, "inputs": {"message": "hi"}},
        input={"message": "hi"},
        output={"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello",
                                                                  "tool_calls": []}]},
        criteria_scores=criteria, criteria_passed=criteria_passed, rubric_scores=rules, rubric_passed=rubric_passed,
        passed=passed, duration_ms=5)
    EvaluationRun.objects.filter(pk=run.pk).update(total=run.results.count(), completed=run.results.count())
    return result
