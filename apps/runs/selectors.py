from datetime import datetime, timedelta

from django.db.models import Count, Q
from django.utils import timezone

from apps.bots.selectors import bot_snapshot_changes
from apps.core.errors import InvalidInputError, NotFoundError

from .judging.aggregate import FAILED, PASSED, UNASSESSED, canonical_outcome, component_scores, coverage, is_flaky
from .judging.fingerprint import distinct_judges, judge_changes
from .judging.types import CRITERION, RULE, SEVERITY_ORDER, Verdict
from .models import EvaluationResult, EvaluationRun, VerdictReview
from .reviews import agreement_table, apply_reviews, human_passed, in_force
from .stats import paired_statistics, wilson_interval


def run_find(*, run_id) -> EvaluationRun | None:
    return EvaluationRun.objects.filter(run_id=run_id).first()


def run_get(*, run_id) -> EvaluationRun:
    run = run_find(run_id=run_id)
    if run is None:
        raise NotFoundError(f"No run {run_id}")
    return run


def run_named_list(*, agent_id: str | None = None, test_set_id=None, status: str | None = None):
    """Runs newest first, each with its bot's, test set's and rubric's names (one query)."""
    runs = EvaluationRun.objects.with_names().newest_first()
    if agent_id:
        runs = runs.filter(agent_id=agent_id)
    if test_set_id:
        runs = runs.filter(Q(test_set_id=test_set_id) | Q(dataset_id=test_set_id))
    if status:
        runs = runs.filter(status=status)
    return runs


def run_named_get(*, run: EvaluationRun) -> EvaluationRun:
    """The run again with its bot's, test set's and rubric's names (bot_name_value, ...)."""
    return EvaluationRun.objects.with_names().select_related("created_by").get(pk=run.pk)


def final_answer(output: dict | None) -> str | None:
    """The bot's last reply in a result's output: what a reviewer reads as its answer. None when it
    never replied (the result page tells that apart from an empty reply)."""
    messages = (output or {}).get("messages") or []
    return next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "assistant"), None)


def conversation_turns(output: dict | None) -> list[dict]:
    """The user and assistant messages of a result's output, as {"role", "content"} (tool calls left out)."""
    return [{"role": m.get("role"), "content": m.get("content") or ""}
            for m in (output or {}).get("messages") or [] if m.get("role") in ("user", "assistant") and m.get("content")]


def run_list(*, agent_id: str | None = None, status: str | None = None, limit: int = 50):
    runs = EvaluationRun.objects.newest_first()
    if agent_id:
        runs = runs.filter(agent_id=agent_id)
    if status:
        runs = runs.filter(status=status)
    return runs[:limit]


def result_list(*, run: EvaluationRun, passed: bool | None = None, item_type: str | None = None):
    """Finished results of a run, in test set order."""
    results = run.results.done().order_by("position", "attempt")
    if passed is not None:
        results = results.filter(passed=passed)
    if item_type:
        results = results.filter(item_type=item_type)
    return results


def _attempt_counts(run: EvaluationRun) -> dict:
    """Per test case id, (done attempts, passed, failed), counted in the database."""
    rows = (run.results.done().order_by().values("test_case_id")
            .annotate(n=Count("id"), ok=Count("id", filter=Q(outcome=PASSED)), bad=Count("id", filter=Q(outcome=FAILED)))
            .values_list("test_case_id", "n", "ok", "bad"))
    return {case: (n, ok, bad) for case, n, ok, bad in rows.iterator()}


def _outcomes_of(n: int, ok: int, bad: int) -> list[str]:
    return [PASSED] * ok + [FAILED] * bad + [UNASSESSED] * (n - ok - bad)


def item_figures(*, run: EvaluationRun) -> dict:
    """The run's item-level figures over attempts, from its finished results: items judged, items
    every attempt of which passed (pass^k), items some attempt of which passed (pass@k), and items
    whose attempts disagree (flaky). A finished run has them stored (services._finalize)."""
    figures = {"items_done": 0, "items_passed_all": 0, "items_passed_any": 0, "flaky_items": 0}
    for n, ok, bad in _attempt_counts(run).values():
        outcomes = _outcomes_of(n, ok, bad)
        figures["items_done"] += 1
        figures["items_passed_all"] += canonical_outcome(outcomes) == PASSED
        figures["items_passed_any"] += ok > 0
        figures["flaky_items"] += is_flaky(outcomes)
    return figures


def item_pairs(*, base: EvaluationRun, head: EvaluationRun) -> tuple[list[tuple[bool, bool]], list[tuple[float, float]]]:
    """The items finished in both runs, paired by test case id: their canonical verdicts (every
    attempt passed) and their pass rates over attempts, in the same order, for
    stats.paired_statistics. Counted in the database: no verdict column is read."""
    base_counts, head_counts = _attempt_counts(base), _attempt_counts(head)
    verdicts, rates = [], []
    for case in sorted(set(base_counts) & set(head_counts), key=str):
        (bn, bok, _), (hn, hok, _) = base_counts[case], head_counts[case]
        verdicts.append((bok == bn, hok == hn))
        rates.append((bok / bn, hok / hn))
    return verdicts, rates


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def run_trial_figures(*, run: EvaluationRun) -> dict:
    """What a run reports over repeated trials: repeats, the mean pass rate over attempts with its
    95% Wilson interval, pass^k and pass@k over items, and how many items are flaky. Stored figures
    for a finished run; computed from the results so far for one still going."""
    figures = {name: getattr(run, name) for name in ("items_done", "items_passed_all", "items_passed_any",
                                                      "flaky_items")}
    if not run.is_finished:
        figures = item_figures(run=run)
    return {
        "repeats": run.repeats, "pass_rate": run.pass_rate, "pass_rate_ci": wilson_interval(run.passed, run.completed),
        "pass_hat_k": _share(figures["items_passed_all"], figures["items_done"]),
        "pass_at_k": _share(figures["items_passed_any"], figures["items_done"]),
        "flaky_items": figures["flaky_items"], "items_judged": figures["items_done"],
    }


def run_item_list(*, run: EvaluationRun, offset: int = 0, limit: int = 100, flaky: bool | None = None) -> dict:
    """The run's items with their attempts, in test set order: per item its canonical outcome
    (aggregate.canonical_outcome), pass rate over attempts, pass^k and pass@k, whether it is flaky,
    and its attempts (result id, attempt, outcome). Paged by item; `flaky` keeps only flaky (or
    only steady) items. Returns {"items": [...], "total": items matching, "has_more": bool}."""
    rows = (run.results.order_by("position", "attempt")
            .values_list("position", "test_case_id", "item_name", "item_type", "attempt", "result_id", "state",
                         "outcome"))
    by_item: dict = {}
    for position, case, name, item_type, attempt, result_id, state, outcome in rows.iterator():
        item = by_item.setdefault(case, {"test_case_id": case, "position": position, "item_name": name,
                                         "item_type": item_type, "attempts": []})
        item["attempts"].append({"attempt": attempt, "result_id": result_id,
                                 "outcome": outcome if state == EvaluationResult.State.DONE else None})
    items = []
    for item in by_item.values():
        outcomes = [a["outcome"] for a in item["attempts"] if a["outcome"] is not None]
        passed = outcomes.count(PASSED)
        item.update({
            "attempts_done": len(outcomes), "attempts_passed": passed,
            "pass_rate": _share(passed, len(outcomes)),
            "passed_all": bool(outcomes) and passed == len(outcomes), "passed_any": passed > 0,
            "flaky": is_flaky(outcomes),
            "outcome": canonical_outcome(outcomes) if len(outcomes) == len(item["attempts"]) else None,
        })
        if flaky is None or item["flaky"] == flaky:
            items.append(item)
    return {"items": items[offset:offset + limit], "total": len(items), "has_more": offset + limit < len(items)}


def run_live_component_scores(*, run: EvaluationRun) -> dict | None:
    """component_scores of a run still in progress, from the verdicts so far."""
    if not run.rubric_id:
        return None
    if run.component_scores is not None:
        return run.component_scores
    return component_scores(run.results.done().rule_verdicts())


def result_get(*, result_id) -> EvaluationResult:
    result = EvaluationResult.objects.select_related("run").filter(result_id=result_id).first()
    if result is None:
        raise NotFoundError(f"No result {result_id}")
    return result


def result_item_view(*, result: EvaluationResult) -> dict:
    """The test item (or V1 question) the result answered, as the result page shows it: what the bot
    was asked and what was expected of it, from the copy the run took when it was created."""
    item = result.item or {}
    if result.item_type == "question":
        return {"type": "question", "message": item.get("question") or (result.input or {}).get("message", ""),
                "expected_answer": item.get("expected_answer") or "", "tags": [], "priority": "",
                "expected": {}}
    inputs = item.get("inputs") or result.input or {}
    expected = item.get("expected") or {}
    return {
        "type": item.get("type") or result.item_type, "message": inputs.get("message") or "",
        "persona": inputs.get("persona") or "", "initial_message": inputs.get("initial_message") or "",
        "max_turns": inputs.get("max_turns"), "scripted_turns": inputs.get("scripted_turns") or [],
        "expected": {"success_criteria": expected.get("success_criteria") or [],
                     "should_use_tools": expected.get("should_use_tools") or [],
                     "should_not_use_tools": expected.get("should_not_use_tools") or [],
                     "expected_outcome": expected.get("expected_outcome") or ""},
        "expected_answer": "", "tags": item.get("tags") or [], "priority": item.get("priority") or "",
    }


def verdict_review_list(*, result: EvaluationResult) -> list[VerdictReview]:
    """Every review of the result, oldest first (the newest per verdict is in force)."""
    return list(result.reviews.order_by("created_at", "id"))


def _reviews_by_result(results_filter: dict) -> dict[int, list[VerdictReview]]:
    grouped: dict[int, list[VerdictReview]] = {}
    for review in VerdictReview.objects.filter(**results_filter).order_by("created_at", "id"):
        grouped.setdefault(review.result_id, []).append(review)
    return grouped


TABLE_FIELDS = ("pk", "result_id", "position", "test_case_id", "item_name", "item_type", "item", "passed", "outcome",
                "criteria_scores", "rubric_scores", "error", "duration_ms", "finished_at")

LIVE_OVERLAP = timedelta(seconds=10)
# A run pending this long after its creation was not picked up: no worker consumes the queue.
UNCLAIMED_AFTER = timedelta(seconds=60)


def verdict_counts(verdicts: list[Verdict]) -> dict[str, int]:
    """passed · failed · warned · skipped, as the contract counts them: a verdict the judge skipped
    is neither passed nor failed (an errored one failed), and a failed medium or low rule only warns."""
    passed = sum(1 for v in verdicts if v.counts_as_passed)
    skipped = sum(1 for v in verdicts if v.status == "skipped")
    warned = sum(1 for v in verdicts if v.kind == RULE and v.failed and v.severity != "high")
    return {"passed": passed, "failed": len(verdicts) - passed - skipped - warned, "warned": warned,
            "skipped": skipped}


def failures_and_warnings(criteria: list[Verdict], rules: list[Verdict]) -> tuple[list[tuple], list[tuple]]:
    """(failures, warnings), each a list of (anchor on the result page, words): failures are what
    fail the item by the contract (a criterion not passed, a high-severity rule failed), warnings the
    failed medium and low rules, which do not. Most severe first."""
    failed_rules = sorted((r for r in rules if r.failed),
                          key=lambda r: SEVERITY_ORDER.get(r.severity, len(SEVERITY_ORDER)))
    failures = [(f"rule-{r.key}", f"{r.key} ({r.severity})") for r in failed_rules if r.severity == "high"]
    failures += [(f"criterion-{n}", c.key) for n, c in enumerate(criteria) if c.failed]
    warnings = [(f"rule-{r.key}", f"{r.key} ({r.severity})") for r in failed_rules if r.severity != "high"]
    return failures, warnings


def reviewed_failures(criteria: list[dict] | None, rules: list[dict] | None,
                      latest: dict) -> tuple[list[tuple], list[tuple]]:
    """failures_and_warnings of the stored columns once the reviews in force are applied: a verdict
    a reviewer passed no longer fails the item, one a reviewer failed does."""
    return failures_and_warnings(apply_reviews(Verdict.list_from_json(criteria, kind=CRITERION), latest),
                                 apply_reviews(Verdict.list_from_json(rules, kind=RULE), latest))


def first_failure(criteria: list[dict] | None, rules: list[dict] | None) -> tuple[str, str]:
    """(anchor on the result page, words) of the verdict to look at first: what failed the item (a
    high-severity rule, then a criterion), else a lesser failed rule; empty when nothing failed.
    Takes the stored columns (criteria_scores, rubric_scores)."""
    failures, warnings = failures_and_warnings(Verdict.list_from_json(criteria, kind=CRITERION),
                                               Verdict.list_from_json(rules, kind=RULE))
    return (failures + warnings)[0] if failures or warnings else ("", "")


def run_result_rows(*, run: EvaluationRun) -> list[dict]:
    """Every finished result of a run as a table row, with its human verdict: two queries whatever
    the run's size. Rows carry what the console filters on (tags, priority, severities of failed
    rules), the judge's verdict counts, and what fails the item, or only warns, once the reviews in
    force are applied (a criterion a reviewer passed no longer fails it)."""
    reviews = _reviews_by_result({"result__run": run})
    rows = []
    for values in result_list(run=run).values(*TABLE_FIELDS):
        item = values["item"] or {}
        criteria = Verdict.list_from_json(values["criteria_scores"], kind=CRITERION)
        rules = Verdict.list_from_json(values["rubric_scores"], kind=RULE)
        latest = in_force(reviews.get(values["pk"], []))
        failures, warnings = reviewed_failures(values["criteria_scores"], values["rubric_scores"], latest)
        human = human_passed(judge_passed=values["passed"], criteria=values["criteria_scores"],
                             rules=values["rubric_scores"], latest=latest)
        if not failures and human is False and values["error"]:
            failures = [("", values["error"])]
        anchor, reason = (failures + warnings)[0] if failures or warnings else ("", "")
        rows.append({
            **values,
            "tags": list(item.get("tags") or []),
            "priority": item.get("priority") or "",
            "criteria_counts": verdict_counts(criteria),
            "coverage": coverage(criteria + rules),
            "rules_counts": verdict_counts(rules),
            "has_rules": values["rubric_scores"] is not None,
            "failed_severities": sorted({r.severity for r in rules if r.failed and r.severity}),
            "failures": failures,
            "warnings": warnings,
            "first_failure": anchor,
            "failure_reason": reason or values["error"] or "",
            "human_passed": human,
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
    """Judge and human-reviewed pass rates, and the judge's criterion and rule counts, over a run's
    finished results: the run page's cards, live while the run goes (the run's own totals are the
    same sums, kept by the engine)."""
    completed = len(rows)
    judge = sum(1 for r in rows if r["passed"])
    human = sum(1 for r in rows if r["human_passed"])
    keys = ("passed", "failed", "warned", "skipped")
    criteria = {key: sum(r["criteria_counts"][key] for r in rows) for key in keys}
    rules = {key: sum(r["rules_counts"][key] for r in rows) for key in keys}
    rule_verdicts = sum(rules.values())
    return {
        # Fail-closed: items a high-severity rule of which was not assessed, and every verdict by
        # what the judge did, the denominators shown beside the pass rates.
        "unassessed": sum(1 for r in rows if r.get("outcome") == UNASSESSED),
        "coverage": {key: sum(r["coverage"][key] for r in rows) for key in ("scored", "skipped", "errored")},
        "completed": completed, "judge_passed": judge, "human_passed": human,
        "judge_pass_rate": judge / completed if completed else None,
        "human_pass_rate": human / completed if completed else None,
        "reviewed_results": sum(1 for r in rows if r["reviews"]),
        "changed_by_review": sum(1 for r in rows if bool(r["passed"]) != bool(r["human_passed"])),
        "criteria": criteria, "criteria_total": sum(criteria.values()),
        "rules": rules, "rules_assessed": rules["passed"] + rules["failed"] + rules["warned"],
        "rule_verdicts": rule_verdicts,
        # Most rule verdicts skipped: the judge cannot see what the rubric asks about.
        "rules_mostly_unassessed": rule_verdicts > 0 and rules["skipped"] * 2 > rule_verdicts,
    }


def rows_finished_since(rows: list[dict], cursor: datetime | None) -> list[dict]:
    """The rows a page that has seen results up to `cursor` (the newest finished_at it was given)
    may not have. Results finish out of order across workers, and one written a moment before the
    cursor may commit after it was read, so a short overlap is sent again; pages drop rows they have."""
    if cursor is None:
        return rows
    since = cursor - LIVE_OVERLAP
    return [r for r in rows if r["finished_at"] and r["finished_at"] > since]


def rows_cursor(rows: list[dict]) -> datetime | None:
    return max((r["finished_at"] for r in rows if r["finished_at"]), default=None)


def run_unclaimed(*, run: EvaluationRun, now: datetime | None = None) -> bool:
    """Still pending well after creation: no worker took the run off the queue."""
    return run.status == EvaluationRun.Status.PENDING and (now or timezone.now()) - run.created_at > UNCLAIMED_AFTER


def run_previous_find(*, run: EvaluationRun, completed_only: bool = False) -> EvaluationRun | None:
    """The newest earlier run of the same test set (or question set), preferring the same bot;
    completed_only: a run that completed (what a CI baseline compares with)."""
    if run.test_set_id is None and run.dataset_id is None:
        return None
    earlier = EvaluationRun.objects.of_same_test_set(run).filter(
        Q(created_at__lt=run.created_at) | Q(created_at=run.created_at, pk__lt=run.pk)).newest_first()
    if completed_only:
        earlier = earlier.filter(status=EvaluationRun.Status.COMPLETED)
    return earlier.filter(agent_id=run.agent_id).first() or earlier.first()


def run_comparable_list(*, run: EvaluationRun, limit: int = 20) -> list[EvaluationRun]:
    """Other runs of the same test set (or question set), newest first: what the run page offers
    to compare with."""
    if run.test_set_id is None and run.dataset_id is None:
        return []
    others = EvaluationRun.objects.of_same_test_set(run).exclude(pk=run.pk)
    return list(others.with_bot_names().newest_first()[:limit])


def _fingerprints_of(stored_columns) -> list[dict]:
    """The distinct judges (fingerprint.distinct_judges) of the verdicts in (criteria_scores,
    rubric_scores) pairs of stored columns."""
    return distinct_judges(verdict.get("fingerprint") for criteria, rules in stored_columns
                           for verdict in (criteria or []) + (rules or []))


def rows_judge_fingerprints(rows: list[dict]) -> list[dict]:
    """The distinct judges of run_result_rows' verdicts (a run's judge_fingerprints, from rows already read)."""
    return _fingerprints_of((r["criteria_scores"], r["rubric_scores"]) for r in rows)


def run_judge_fingerprints(*, runs, stored: bool = True) -> dict[int, list[dict]]:
    """Per run pk, the distinct judges of its verdicts (judge_fingerprints): what a finished run
    stored, and for the others one query for all of them (stored=False: always from the verdicts)."""
    found = {run.pk: run.judge_fingerprints for run in runs if stored and run.judge_fingerprints is not None}
    columns: dict[int, list] = {run.pk: [] for run in runs if run.pk not in found}
    if not columns:
        return found
    rows = EvaluationResult.objects.filter(run__in=list(columns)).values_list("run_id", "criteria_scores", "rubric_scores")
    for run_pk, criteria, rules in rows.iterator():
        columns[run_pk].append((criteria, rules))
    return {**found, **{pk: _fingerprints_of(verdict_columns) for pk, verdict_columns in columns.items()}}


def _verdict_scores(rows: list[dict]) -> tuple[dict, dict]:
    """Per rule id, and per (test case, criterion): the list of (passed, score) verdicts the judge gave."""
    rules: dict[str, dict] = {}
    criteria: dict[tuple, dict] = {}
    for row in rows:
        for rule in Verdict.list_from_json(row["rubric_scores"], kind=RULE):
            if rule.status != "ok":
                continue
            entry = rules.setdefault(rule.key, {"name": rule.rule_name, "severity": rule.severity,
                                                "passed": 0, "total": 0, "score_sum": 0.0})
            entry["total"] += 1
            entry["passed"] += bool(rule.passed)
            entry["score_sum"] += float(rule.score or 0)
        for criterion in Verdict.list_from_json(row["criteria_scores"], kind=CRITERION):
            if criterion.status == "ok":
                criteria[(row["test_case_id"], criterion.key)] = {
                    "item_name": row["item_name"], "passed": bool(criterion.passed),
                    "score": float(criterion.score or 0)}
    return rules, criteria


def run_comparison(*, base: EvaluationRun, head: EvaluationRun) -> dict:
    """Two runs of the same test set, item by item (joined on the test case id, which stays stable
    across test set versions): regressions, fixes, per-rule and per-criterion score deltas, the
    paired statistics of the items in both (stats.paired_statistics) and whether the judge changed."""
    if base.test_set_id != head.test_set_id or base.dataset_id != head.dataset_id:
        raise InvalidInputError("Only runs of the same test set (or question set) can be compared.")
    base_rows = {r["test_case_id"]: r for r in run_result_rows(run=base)}
    head_rows = {r["test_case_id"]: r for r in run_result_rows(run=head)}
    pairs = [(base_rows.get(case), head_rows[case]) for case in head_rows]
    # An item unassessed before (its high-severity rules unjudged) that now fails is a regression too:
    # nothing showed it failing before, and it does now.
    regressions = [(b, h) for b, h in pairs
                   if b and not h["passed"] and (b["passed"] or (b["outcome"] == UNASSESSED and h["outcome"] == FAILED))]
    fixed = [(b, h) for b, h in pairs if b and not b["passed"] and h["passed"]]
    regressed = {id(h) for _, h in regressions}
    still_failing = [(b, h) for b, h in pairs if b and not b["passed"] and not h["passed"] and id(h) not in regressed]
    unchanged_pass = sum(1 for b, h in pairs if b and b["passed"] and h["passed"])
    new_items = [h for b, h in pairs if b is None]
    dropped = [b for case, b in base_rows.items() if case not in head_rows]
    # The answers are read only for the items a reviewer compares side by side: one query.
    shown = [row for pair in regressions + fixed for row in pair]
    outputs = dict(EvaluationResult.objects.filter(pk__in=[row["pk"] for row in shown]).values_list("pk", "output"))
    for row in shown:
        inputs = (row["item"] or {}).get("inputs") or {}
        row["question"] = inputs.get("message") or inputs.get("initial_message") or (row["item"] or {}).get("question", "")
        row["answer"] = final_answer(outputs.get(row["pk"]))
        # A scenario's last reply may be the same in both runs while an earlier turn differs: the whole conversation.
        row["conversation"] = conversation_turns(outputs.get(row["pk"])) if row["item_type"] == "scenario" else []
    base_judges = rows_judge_fingerprints(list(base_rows.values()))
    head_judges = rows_judge_fingerprints(list(head_rows.values()))
    # Runs judged before fingerprints existed have none: nothing to say they differ.
    changes = judge_changes(base_judges, head_judges) if base_judges and head_judges else []
    statistics = paired_statistics(*item_pairs(base=base, head=head))
    named = {r.pk: r for r in EvaluationRun.objects.with_names().filter(pk__in=(base.pk, head.pk))}
    base, head = named.get(base.pk, base), named.get(head.pk, head)

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
        "base": base, "head": head, "regressions": regressions,
        "bot_snapshots_known": bool(base.bot_snapshot and head.bot_snapshot),
        "bot_changes": bot_snapshot_changes(base.bot_snapshot, head.bot_snapshot), "fixed": fixed, "still_failing": still_failing,
        "unchanged_pass": unchanged_pass, "new_items": new_items, "dropped": dropped,
        "rule_deltas": rule_deltas, "criterion_deltas": criterion_deltas,
        "base_figures": run_review_figures(rows=list(base_rows.values())),
        "head_figures": run_review_figures(rows=list(head_rows.values())),
        "statistics": statistics,
        "base_judge_fingerprints": base_judges, "head_judge_fingerprints": head_judges,
        "judge_changed": bool(changes), "judge_changes": changes,
    }


def rubric_agreement(*, rubric_id) -> dict:
    """Judge-versus-reviewer agreement on the rules of a rubric, and on the criteria of the runs
    that used it, across all its versions."""
    reviews = list(VerdictReview.objects.filter(result__run__rubric_id=rubric_id).order_by("created_at", "id"))
    rows = agreement_table(reviews)
    return {"rules": [r for r in rows if r.kind == VerdictReview.Kind.RULE],
            "criteria": [r for r in rows if r.kind == VerdictReview.Kind.CRITERION],
            "reviews": len(reviews)}
