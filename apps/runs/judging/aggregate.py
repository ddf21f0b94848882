"""The contract's arithmetic: which rules apply, when an item passes, and the run's figures."""

SCOPES = ("prompt", "knowledge_base", "function", "general")


def rule_in_scope(rule: dict, *, scope_filter: str | None, ids_filter: list[str] | None) -> bool:
    """A rule applies when its scope matches the run's filter or is null, and, under a component id
    filter, when its component ids intersect it. A rule naming no components is general and stays
    in scope, as a rule with a null scope does under a scope filter."""
    scope = rule.get("component_scope")
    if scope_filter and scope not in (None, scope_filter):
        return False
    rule_ids = set(rule.get("component_ids") or [])
    if ids_filter and rule_ids and not rule_ids & set(ids_filter):
        return False
    return True


def verdict_passed(verdict: dict) -> bool:
    return verdict.get("status", "ok") == "ok" and bool(verdict.get("passed"))


def assessed(rules: list[dict]) -> list[dict]:
    """Rule verdicts the judge actually gave (passed, failed or errored). A rule the judge says it
    cannot assess is reported, and counted apart, but neither passes nor fails anything."""
    return [r for r in rules if r.get("status", "ok") != "skipped"]


def item_outcome(criteria: list[dict], rules: list[dict] | None) -> tuple[bool, bool | None, bool]:
    """(criteria_passed, rubric_passed, passed). An item fails if any criterion is not passed or any
    high-severity rule is not passed. A criterion the judge could not judge (error or skipped) and
    a rule whose judging failed (error) count as not passed: nothing unjudged becomes a pass."""
    criteria_passed = all(verdict_passed(c) for c in criteria)
    if rules is None:
        return criteria_passed, None, criteria_passed
    rubric_passed = all(verdict_passed(r) for r in assessed(rules) if r.get("severity") == "high")
    return criteria_passed, rubric_passed, criteria_passed and rubric_passed


def component_scores(rule_verdicts: list[dict]) -> dict:
    """Rule pass rates per component scope across all results; rules without a scope count as
    general; rules the judge could not assess are left out."""
    buckets: dict[str, dict] = {}
    for verdict in assessed(rule_verdicts):
        scope = verdict.get("component_scope") or "general"
        bucket = buckets.setdefault(scope, {"score": 0.0, "total": 0, "passed": 0})
        bucket["total"] += 1
        bucket["passed"] += verdict_passed(verdict)
    for bucket in buckets.values():
        bucket["score"] = round(bucket["passed"] / bucket["total"], 4)
    return dict(sorted(buckets.items(), key=lambda kv: SCOPES.index(kv[0]) if kv[0] in SCOPES else len(SCOPES)))
