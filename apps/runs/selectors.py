from django.db.models import OuterRef, Q, Subquery

from apps.core.errors import InvalidInputError, NotFoundError

from .judging.aggregate import verdict_passed
from .models import EvaluationResult, EvaluationRun, VerdictReview
from .reviews import agreement_table, human_passed, in_force


def run_get(*, run_id) -> EvaluationRun | None:
    return EvaluationRun.objects.filter(run_id=run_id).first()


def runs_list(*, agent_id: str | None = None, status: str | None = None, limit: int = 50):
    runs = EvaluationRun.objects.order_by("-created_at", "-id")
    if agent_id:
        runs = runs.filter(agent_id=agent_id)
    if status:
        runs = runs.filter(status=status)
    return runs[:limit]


def run_results(*, run: EvaluationRun, passed: bool | None = None, item_type: str | None = None):
    """Finished results of a run, in test set order."""
    results = run.results.filter(state=EvaluationResult.State.DONE).order_by("position")
    if passed is not None:
        results = results.filter(passed=passed)
    if item_type:
        results = results.filter(item_type=item_type)
    return results


def run_live_component_scores(*, run: EvaluationRun) -> dict | None:
    """component_scores of a run still in progress, from the verdicts so far."""
    from .judging.aggregate import component_scores

    if not run.rubric_id:
        return None
    if run.component_scores is not None:
        return run.component_scores
    verdicts = [v for scores in run_results(run=run).values_list("rubric_scores", flat=True) for v in (scores or [])]
    return component_scores(verdicts)


def annotate_bot_names(runs):
    """Runs with `bot_name_value`, their bot's name, in the same query: runs keep the agent_id,
    and bots may be renamed or deleted."""
    from apps.bots.models import Bot

    return runs.annotate(bot_name_value=Subquery(Bot.objects.filter(agent_id=OuterRef("agent_id")).values("name")[:1]))


def runs_with_bot_names():
    """Runs, newest first, with their bot's name (`bot_name_value`)."""
    return annotate_bot_names(EvaluationRun.objects.order_by("-created_at", "-id"))


def result_get(*, result_id) -> EvaluationResult:
    result = EvaluationResult.objects.select_related("run").filter(result_id=result_id).first()
    if result is None:
        raise NotFoundError(f"No result {result_id}")
    return result


def result_reviews(*, result: EvaluationResult) -> list[VerdictReview]:
    """Every review of the result, oldest first (the newest per verdict is in force)."""
    return list(result.reviews.order_by("created_at", "id"))


def _reviews_by_result(results_filter: dict) -> dict[int, list[VerdictReview]]:
    grouped: dict[int, list[VerdictReview]] = {}
    for review in VerdictReview.objects.filter(**results_filter).order_by("created_at", "id"):
        grouped.setdefault(review.result_id, []).append(review)
    return grouped


TABLE_FIELDS = ("pk", "result_id", "position", "test_case_id", "item_name", "item_type", "item", "passed",
                "criteria_scores", "rubric_scores", "error", "duration_ms")


def criterion_failed(verdict: dict) -> bool:
    """As the pass logic counts it: a criterion not judged (error, skipped) is not passed."""
    return not verdict_passed(verdict)


def rule_failed(verdict: dict) -> bool:
    """A rule the judge skipped neither passes nor fails; one it errored on counts as failed."""
    return verdict.get("status", "ok") != "skipped" and criterion_failed(verdict)


def first_failure(criteria: list[dict] | None, rules: list[dict] | None) -> tuple[str, str]:
    """(anchor on the result page, words) of the verdict to look at first: what failed the item (a
    high-severity rule, then a criterion), else a lesser failed rule; empty when nothing failed."""
    failed_rules = sorted((r for r in rules or [] if rule_failed(r)),
                          key=lambda r: {"high": 0, "medium": 1, "low": 2}.get(r.get("severity"), 3))
    failed_criteria = [(n, c) for n, c in enumerate(criteria or []) if criterion_failed(c)]
    if failed_rules and (failed_rules[0].get("severity") == "high" or not failed_criteria):
        rule = failed_rules[0]
        return f"rule-{rule['rule_id']}", f"{rule['rule_id']} ({rule.get('severity')})"
    if failed_criteria:
        n, criterion = failed_criteria[0]
        return f"criterion-{n}", criterion["criterion"]
    return "", ""


def run_result_rows(*, run: EvaluationRun) -> list[dict]:
    """Every finished result of a run as a table row, with its human verdict: two queries whatever
    the run's size. Rows carry what the console filters on (tags, priority, severities of failed
    rules) and where its first failed verdict is, for a link straight to it."""
    reviews = _reviews_by_result({"result__run": run})
    rows = []
    for values in run_results(run=run).values(*TABLE_FIELDS):
        item = values["item"] or {}
        criteria, rules = values["criteria_scores"] or [], values["rubric_scores"] or []
        latest = in_force(reviews.get(values["pk"], []))
        anchor, reason = first_failure(criteria, rules)
        rows.append({
            **values,
            "tags": list(item.get("tags") or []),
            "priority": item.get("priority") or "",
            "criteria_ok": sum(1 for c in criteria if verdict_passed(c)),
            "criteria_n": len(criteria),
            "rules_ok": sum(1 for r in rules if verdict_passed(r)),
            "rules_n": len(rules),
            "failed_severities": sorted({r["severity"] for r in rules if rule_failed(r) and r.get("severity")}),
            "first_failure": anchor,
            "failure_reason": reason or values["error"] or "",
            "human_passed": human_passed(judge_passed=values["passed"], criteria=values["criteria_scores"],
                                         rules=values["rubric_scores"], latest=latest),
            "reviews": len(latest),
        })
    return rows


def filter_result_rows(rows: list[dict], *, passed: bool | None = None, item_type: str | None = None,
                       tag: str | None = None, priority: str | None = None,
                       failed_severity: str | None = None) -> list[dict]:
    """The console's filters over run_result_rows, failed items first, then in test set order."""
    if passed is not None:
        rows = [r for r in rows if r["passed"] is passed]
    if item_type:
        rows = [r for r in rows if r["item_type"] == item_type]
    if tag:
        rows = [r for r in rows if tag in r["tags"]]
    if priority:
        rows = [r for r in rows if r["priority"] == priority]
    if failed_severity:
        rows = [r for r in rows if failed_severity in r["failed_severities"]]
    return sorted(rows, key=lambda r: (bool(r["passed"]), r["position"]))


def run_review_figures(*, rows: list[dict]) -> dict:
    """Judge and human-reviewed pass rates over a run's finished results."""
    completed = len(rows)
    judge = sum(1 for r in rows if r["passed"])
    human = sum(1 for r in rows if r["human_passed"])
    return {
        "completed": completed, "judge_passed": judge, "human_passed": human,
        "judge_pass_rate": judge / completed if completed else None,
        "human_pass_rate": human / completed if completed else None,
        "reviewed_results": sum(1 for r in rows if r["reviews"]),
        "changed_by_review": sum(1 for r in rows if bool(r["passed"]) != bool(r["human_passed"])),
    }


def run_previous(*, run: EvaluationRun) -> EvaluationRun | None:
    """The newest earlier run of the same test set (or question set), preferring the same bot."""
    if run.test_set_id is None and run.dataset_id is None:
        return None
    earlier = EvaluationRun.objects.filter(
        Q(created_at__lt=run.created_at) | Q(created_at=run.created_at, pk__lt=run.pk),
        test_set_id=run.test_set_id, dataset_id=run.dataset_id)
    return (earlier.filter(agent_id=run.agent_id).order_by("-created_at", "-id").first()
            or earlier.order_by("-created_at", "-id").first())


def runs_comparable(*, run: EvaluationRun, limit: int = 20) -> list[EvaluationRun]:
    """Other runs of the same test set (or question set), newest first: what the run page offers
    to compare with."""
    if run.test_set_id is None and run.dataset_id is None:
        return []
    others = EvaluationRun.objects.filter(test_set_id=run.test_set_id, dataset_id=run.dataset_id).exclude(pk=run.pk)
    return list(annotate_bot_names(others).order_by("-created_at", "-id")[:limit])


def _verdict_scores(rows: list[dict]) -> tuple[dict, dict]:
    """Per rule id, and per (test case, criterion): the list of (passed, score) verdicts the judge gave."""
    rules: dict[str, dict] = {}
    criteria: dict[tuple, dict] = {}
    for row in rows:
        for rule in row["rubric_scores"] or []:
            if rule.get("status", "ok") != "ok":
                continue
            entry = rules.setdefault(rule["rule_id"], {"name": rule.get("rule_name", ""), "severity": rule.get("severity"),
                                                       "passed": 0, "total": 0, "score_sum": 0.0})
            entry["total"] += 1
            entry["passed"] += bool(rule.get("passed"))
            entry["score_sum"] += float(rule.get("score") or 0)
        for criterion in row["criteria_scores"] or []:
            if criterion.get("status", "ok") == "ok":
                criteria[(row["test_case_id"], criterion["criterion"])] = {
                    "item_name": row["item_name"], "passed": bool(criterion.get("passed")),
                    "score": float(criterion.get("score") or 0)}
    return rules, criteria


def runs_compare(*, base: EvaluationRun, head: EvaluationRun) -> dict:
    """Two runs of the same test set, item by item (joined on the test case id, which stays stable
    across test set versions): regressions, fixes, and per-rule and per-criterion score deltas."""
    if base.test_set_id != head.test_set_id or base.dataset_id != head.dataset_id:
        raise InvalidInputError("Only runs of the same test set (or question set) can be compared.")
    base_rows = {r["test_case_id"]: r for r in run_result_rows(run=base)}
    head_rows = {r["test_case_id"]: r for r in run_result_rows(run=head)}
    pairs = [(base_rows.get(case), head_rows[case]) for case in head_rows]
    regressions = [(b, h) for b, h in pairs if b and b["passed"] and not h["passed"]]
    fixed = [(b, h) for b, h in pairs if b and not b["passed"] and h["passed"]]
    still_failing = [(b, h) for b, h in pairs if b and not b["passed"] and not h["passed"]]
    unchanged_pass = sum(1 for b, h in pairs if b and b["passed"] and h["passed"])
    new_items = [h for b, h in pairs if b is None]
    dropped = [b for case, b in base_rows.items() if case not in head_rows]

    base_rules, base_criteria = _verdict_scores(list(base_rows.values()))
    head_rules, head_criteria = _verdict_scores(list(head_rows.values()))
    rule_deltas = []
    for rule_id in sorted(set(base_rules) | set(head_rules)):
        b, h = base_rules.get(rule_id), head_rules.get(rule_id)
        b_rate = b["passed"] / b["total"] if b and b["total"] else None
        h_rate = h["passed"] / h["total"] if h and h["total"] else None
        rule_deltas.append({
            "rule_id": rule_id, "rule_name": (h or b)["name"], "severity": (h or b)["severity"],
            "base": b, "head": h, "base_rate": b_rate, "head_rate": h_rate,
            "delta": None if b_rate is None or h_rate is None else h_rate - b_rate,
        })
    rule_deltas.sort(key=lambda d: (d["delta"] is None, d["delta"] if d["delta"] is not None else 0, d["rule_id"]))
    criterion_deltas = []
    for key in set(base_criteria) & set(head_criteria):
        b, h = base_criteria[key], head_criteria[key]
        if b["passed"] != h["passed"] or b["score"] != h["score"]:
            criterion_deltas.append({"test_case_id": key[0], "criterion": key[1], "item_name": h["item_name"],
                                     "base": b, "head": h, "delta": h["score"] - b["score"]})
    criterion_deltas.sort(key=lambda d: (d["delta"], d["item_name"], d["criterion"]))
    return {
        "base": base, "head": head, "regressions": regressions, "fixed": fixed, "still_failing": still_failing,
        "unchanged_pass": unchanged_pass, "new_items": new_items, "dropped": dropped,
        "rule_deltas": rule_deltas, "criterion_deltas": criterion_deltas,
        "base_figures": run_review_figures(rows=list(base_rows.values())),
        "head_figures": run_review_figures(rows=list(head_rows.values())),
    }


def rubric_agreement(*, rubric_id) -> dict:
    """Judge-versus-reviewer agreement on the rules of a rubric, and on the criteria of the runs
    that used it, across all its versions."""
    reviews = list(VerdictReview.objects.filter(result__run__rubric_id=rubric_id).order_by("created_at", "id"))
    rows = agreement_table(reviews)
    return {"rules": [r for r in rows if r.kind == VerdictReview.Kind.RULE],
            "criteria": [r for r in rows if r.kind == VerdictReview.Kind.CRITERION],
            "reviews": len(reviews)}
