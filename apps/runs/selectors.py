import uuid
from datetime import datetime, timedelta

from django.core.paginator import Page, Paginator
from django.db.models import Count, OuterRef, Q, Subquery, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from apps.bots.models import Bot
from apps.bots.selectors import bot_snapshot_changes
from apps.core.errors import InvalidInputError, NotFoundError
from apps.core.pricing import SpendSplit
from apps.scores.agreement import agreement_table, judge_human_pairs
from apps.scores.models import Score
from apps.scores.vocabulary import JudgeStatus, SubjectKind

from . import attempts
from . import comparison as pairing
from .aggregates import LIVE_OVERLAP, RunDigest, run_digest, run_digests
from .display import conversation_turns, failures_and_warnings, final_answer
from .filters import ResultFilter, ResultTableFilter, RunFilter, filtered
from .judging.aggregate import (
    FAILED,
    PASSED,
    UNASSESSED,
    canonical_outcome,
    coverage,
    flip_pairs,
    flip_rate,
    is_flaky,
    verdict_counts,
)
from .judging.fingerprint import judge_changes
from .judging.types import CRITERION, RULE
from .models import EvaluationResult, EvaluationRun, RunComparison, table_verdicts_of
from .reviews import Review, apply_reviews, human_outcome, human_outcome_of, in_force
from .stats import detectable_drop, paired_statistics, wilson_interval


def run_find(*, run_id, project) -> EvaluationRun | None:
    """The run `run_id` of `project`; None for another project's, as for one that does not exist."""
    return EvaluationRun.objects.filter(project=project, run_id=run_id).first()


def run_get(*, run_id, project) -> EvaluationRun:
    run = run_find(run_id=run_id, project=project)
    if run is None:
        raise NotFoundError(f"No run {run_id}")
    return run


def run_named_list(*, project, filters: dict | None = None):
    """Runs of `project` newest first, each with its bot's, test set's and rubric's names (one
    query), chosen by RunFilter (agent_id, test_set_id, status)."""
    return filtered(RunFilter, filters, EvaluationRun.objects.filter(project=project).with_names().newest_first())


def run_bot_choices(*, projects=None) -> list[tuple[str, str]]:
    """(agent_id, bot name) of every bot that has runs in `projects` (every project when None), by
    name; a deleted bot by its id. Two queries."""
    runs = EvaluationRun.objects.order_by()
    bots = Bot.objects.all()
    if projects is not None:
        runs, bots = runs.filter(project__in=projects), bots.filter(project__in=projects)
    agent_ids = set(runs.values_list("agent_id", flat=True).distinct())
    names = dict(bots.filter(agent_id__in=agent_ids).values_list("agent_id", "name"))
    return sorted(
        ((agent_id, names.get(agent_id) or f"(deleted bot {agent_id})") for agent_id in agent_ids),
        key=lambda choice: (choice[1].casefold(), choice[0]),
    )


def run_named_get(*, run: EvaluationRun) -> EvaluationRun:
    """The run again with its bot's, test set's and rubric's names (bot_name_value, ...)."""
    return EvaluationRun.objects.with_names().select_related("created_by").get(pk=run.pk)


def run_list(*, project, filters: dict | None = None, limit: int = 50):
    """The newest `limit` runs of `project` RunFilter chooses (agent_id, test_set_id, status)."""
    return filtered(RunFilter, filters, EvaluationRun.objects.filter(project=project).newest_first())[:limit]


# Test set order; the id makes it total, so pages of equal positions (attempts of one item) never
# skip or repeat a result.
RESULT_ORDER = ("position", "pk")


def result_list(*, run: EvaluationRun, filters: dict | None = None):
    """Finished results of a run, in test set order, chosen by ResultFilter (passed, item_type)."""
    return filtered(ResultFilter, filters, run.results.done().order_by(*RESULT_ORDER))


def _attempt_counts(run: EvaluationRun) -> dict:
    """Per test case id, (done attempts, passed, failed), counted in the database."""
    rows = run.results.done().attempt_counts().values_list("test_case_id", "n", "ok", "bad")
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


def item_outcome_counts(*, run: EvaluationRun) -> dict:
    """Items (not attempts) by their verdict over their finished attempts (canonical_outcome):
    {"items", "passed", "failed", "unassessed", "attempts"}. With one attempt per item these are the
    run's own counters; with repeats one query counts attempts per item in the database."""
    if run.repeats <= 1:
        return {
            "items": run.completed,
            "passed": run.passed,
            "failed": run.failed,
            "unassessed": run.unassessed,
            "attempts": run.completed,
        }
    counts = {"items": 0, PASSED: 0, FAILED: 0, UNASSESSED: 0, "attempts": 0}
    for n, ok, bad in _attempt_counts(run).values():
        counts["items"] += 1
        counts["attempts"] += n
        counts[canonical_outcome(_outcomes_of(n, ok, bad))] += 1
    return counts


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def run_trial_figures(*, run: EvaluationRun) -> dict:
    """What a run reports with repeats: repeats, the mean pass rate over attempts with its
    95% Wilson interval, pass^k and pass@k over items, and how many items are flaky. Stored figures
    for a completed run (services._finalize); computed from the results so far for one still going,
    or one cancelled or failed part way (those are not finalized)."""
    if run.status == EvaluationRun.Status.COMPLETED:
        figures = {
            "items_done": run.total // run.repeats,
            "items_passed_all": run.items_passed_all,
            "items_passed_any": run.items_passed_any,
            "flaky_items": run.flaky_items,
        }
    else:
        figures = item_figures(run=run)
    return {
        "repeats": run.repeats,
        "pass_rate": run.pass_rate,
        "pass_rate_ci": wilson_interval(run.passed, run.completed),
        "pass_hat_k": _share(figures["items_passed_all"], figures["items_done"]),
        "pass_at_k": _share(figures["items_passed_any"], figures["items_done"]),
        "flaky_items": figures["flaky_items"],
        "items_judged": figures["items_done"],
        "items_passed_all": figures["items_passed_all"],
        "items_passed_any": figures["items_passed_any"],
    }


def run_item_list(*, run: EvaluationRun, offset: int = 0, limit: int = 100, flaky: bool | None = None) -> dict:
    """The run's items with their attempts, in test set order: per item its canonical outcome
    (aggregate.canonical_outcome), pass rate over attempts, pass^k and pass@k, whether it is flaky,
    and its attempts (result id, attempt, outcome). Paged by item in the database (an item is a
    position: only the page's results are read); `flaky` keeps only flaky (or only steady) items.
    Returns {"items": [...], "total": items matching, "has_more": bool}."""
    results = run.results.order_by("position", "attempt")
    if flaky is True and run.repeats == 1:
        return {"items": [], "total": 0, "has_more": False}  # one attempt cannot disagree with itself
    if flaky is None or run.repeats == 1:
        total = run.total // max(run.repeats, 1)
        page = results.filter(position__gte=offset, position__lt=offset + limit)
    else:
        disagreeing = run.results.done().flaky_cases()
        chosen = (
            results.filter(test_case_id__in=disagreeing) if flaky else results.exclude(test_case_id__in=disagreeing)
        )
        positions = chosen.order_by("position").values_list("position", flat=True).distinct()
        total = positions.count()
        page = results.filter(position__in=list(positions[offset : offset + limit]))
    by_item: dict = {}
    rows = page.values_list(
        "position", "test_case_id", "item_name", "item_type", "attempt", "result_id", "state", "outcome", "fingerprint"
    )
    for position, case, name, item_type, attempt, result_id, state, outcome, fingerprint in rows:
        item = by_item.setdefault(
            case,
            {"test_case_id": case, "position": position, "item_name": name, "item_type": item_type, "attempts": []},
        )
        item["attempts"].append(
            {
                "attempt": attempt,
                "result_id": result_id,
                "outcome": outcome if state == EvaluationResult.State.DONE else None,
                "fingerprint": fingerprint,
            }
        )
    items = []
    for item in by_item.values():
        outcomes = [a["outcome"] for a in item["attempts"] if a["outcome"] is not None]
        passed = outcomes.count(PASSED)
        item.update(
            {
                "attempts_done": len(outcomes),
                "attempts_passed": passed,
                "pass_rate": _share(passed, len(outcomes)),
                "passed_all": bool(outcomes) and passed == len(outcomes),
                "passed_any": passed > 0,
                "flaky": is_flaky(outcomes),
                "flip_rate": flip_rate(
                    (a["fingerprint"], {PASSED: True, FAILED: False}.get(a["outcome"])) for a in item["attempts"]
                ),
                "outcome": canonical_outcome(outcomes) if len(outcomes) == len(item["attempts"]) else None,
            }
        )
        items.append(item)
    return {"items": items, "total": total, "has_more": offset + len(items) < total}


def result_page(
    *, run: EvaluationRun, limit: int, offset: int = 0, filters: dict | None = None
) -> tuple[list[EvaluationResult], bool]:
    """(results, has_more): `limit` finished results of a run from `offset`, in test set order.
    The page's ids are found first (an index-only scan of results_run_done_order on PostgreSQL),
    then only its rows are read, so a deep offset does not read the rows it skips."""
    ids = list(result_list(run=run, filters=filters).values_list("pk", flat=True)[offset : offset + limit + 1])
    results = EvaluationResult.objects.filter(pk__in=ids[:limit]).order_by(*RESULT_ORDER).with_verdicts()
    return list(results), len(ids) > limit


item_result_page = attempts.item_result_page
item_result_list = attempts.item_result_list


def run_live_component_scores(*, run: EvaluationRun, digest: RunDigest | None = None) -> dict | None:
    """component_scores of a run still in progress, from the verdicts so far."""
    if not run.rubric_id:
        return None
    if run.component_scores is not None:
        return run.component_scores
    return (digest or run_digest(run)).component_scores()


def result_get(*, result_id, project) -> EvaluationResult:
    """The result `result_id` of a run of `project` (a result belongs through its run)."""
    result = EvaluationResult.objects.select_related("run").filter(run__project=project, result_id=result_id).first()
    if result is None:
        raise NotFoundError(f"No result {result_id}")
    return result


def result_attempt_list(*, result: EvaluationResult) -> list[dict]:
    """The attempts of the result's item in its run (itself included), in attempt order, as
    {"attempt", "result_id", "outcome"} (outcome None until done); empty for a run without repeats."""
    if result.run.repeats <= 1:
        return []
    rows = (
        result.run.results.filter(test_case_id=result.test_case_id)
        .order_by("attempt")
        .values("attempt", "result_id", "outcome", "state")
    )
    return [
        {
            "attempt": r["attempt"],
            "result_id": r["result_id"],
            "outcome": r["outcome"] if r["state"] == EvaluationResult.State.DONE else None,
        }
        for r in rows
    ]


def verdict_review_list(*, result: EvaluationResult) -> list[Review]:
    """Every review of the result, oldest first (the newest per verdict is in force), each beside the
    judge's verdict it overrides: one query, plus the result's verdicts if not read yet."""
    judged = {(row.kind, row.key): row for row in result.verdict_rows}
    humans = (
        Score.objects.of(SubjectKind.RUN_RESULT, [result.pk])
        .human()
        .select_related("author")
        .order_by("created_at", "id")
    )
    return [Review.of(score, judged.get((score.kind, score.key))) for score in humans]


def review_view(*, review: Score, result: EvaluationResult) -> Review:
    """One review (a human Score of the result) beside the judge's verdict it overrides."""
    judged = next((row for row in result.verdict_rows if (row.kind, row.key) == (review.kind, review.key)), None)
    return Review.of(review, judged)


def run_reviews(*, runs) -> dict[int, list[Score]]:
    """Per result pk, the reviews (human Score rows) of the runs' finished results, oldest first,
    each with `result`, its result with its verdicts (what the human figures re-judge): three
    queries. Reviews are written by people, a few per run, so they are read whole."""
    grouped: dict[int, list[Score]] = {}
    reviews = (
        Score.objects.of(SubjectKind.RUN_RESULT)
        .human()
        .filter(parent_id__in=[run.pk for run in runs])
        .order_by("created_at", "id")
    )
    for review in reviews:
        grouped.setdefault(review.subject_id, []).append(review)
    results = {
        r.pk: r
        for r in EvaluationResult.objects.done()
        .filter(pk__in=list(grouped))
        .only("pk", "run_id", "attempt", "state", "passed", "outcome", "criteria_passed", "rubric_passed")
        .with_verdicts()
    }
    for pk in list(grouped):
        if pk not in results:
            del grouped[pk]
            continue
        for review in grouped[pk]:
            review.result = results[pk]
    return grouped


TABLE_FIELDS = (
    "pk",
    "result_id",
    "position",
    "test_case_id",
    "attempt",
    "item_name",
    "item_type",
    "item",
    "passed",
    "outcome",
    "criteria_passed",
    "rubric_passed",
    "error",
    "duration_ms",
    "finished_at",
    "fingerprint",
)
# Failed first (False sorts before True, and finished results always have one), then test set order.
TABLE_ORDER = ("passed", *RESULT_ORDER)
RESULTS_PER_PAGE = 50
# A run pending this long after its creation was not picked up: no worker consumes the queue.
UNCLAIMED_AFTER = timedelta(seconds=60)


def result_rows(results, reviews: dict[int, list[Score]]) -> list[dict]:
    """Results (TABLE_FIELDS values, at most a page of them) as table rows, with their human verdict.
    Rows carry what the console shows (tags, priority, the judge's verdict counts) and what fails the
    item, or only warns, once the reviews in force are applied (a criterion a reviewer passed no
    longer fails it). Their verdicts are read in one query of the columns a table shows
    (models.table_verdicts_of)."""
    results = list(results)
    verdicts = table_verdicts_of([values["pk"] for values in results])
    rows = []
    for values in results:
        item = values["item"] or {}
        criteria, rules = verdicts[values["pk"]][CRITERION], verdicts[values["pk"]][RULE]
        latest = in_force(reviews.get(values["pk"], []))
        failures, warnings = failures_and_warnings(apply_reviews(criteria, latest), apply_reviews(rules, latest))
        # As EvaluationResult.verdicts: a result judged by no criteria (or no rubric) has none, not an
        # empty list: its flag is null and it has no rows.
        has_criteria = values["criteria_passed"] is not None or bool(criteria)
        has_rules = values["rubric_passed"] is not None or bool(rules)
        human = human_outcome_of(
            criteria=criteria if has_criteria else None, rules=rules if has_rules else None, latest=latest
        )
        if not failures and values["outcome"] == FAILED and values["error"]:
            failures = [("", values["error"])]
        anchor, reason = (failures + warnings)[0] if failures or warnings else ("", "")
        rows.append(
            {
                **values,
                "tags": list(item.get("tags") or []),
                "priority": item.get("priority") or "",
                "criteria_counts": verdict_counts(criteria),
                "coverage": coverage(criteria + rules),
                "rules_counts": verdict_counts(rules),
                "has_rules": has_rules,
                "failed_severities": sorted({r.severity for r in rules if r.failed and r.severity}),
                "failures": failures,
                "warnings": warnings,
                "first_failure": anchor,
                "failure_reason": reason or values["error"] or "",
                "human_outcome": human,
                "human_passed": {PASSED: True, FAILED: False}.get(human),
                "reviews": len(latest),
            }
        )
    return rows


def results_filtered(
    *,
    run: EvaluationRun,
    passed: bool | None = None,
    outcome: str | None = None,
    item_type: str | None = None,
    q: str | None = None,
    tag: str | None = None,
    priority: str | None = None,
    failed_severity: str | None = None,
    sort: str | None = None,
):
    """The run page's table: finished results under its filters (ResultTableFilter), in the order
    of `sort` (attempts.sort_param; by default failed first, then test set order); filtered and
    ordered by the database."""
    filters = {
        "passed": passed,
        "outcome": outcome,
        "item_type": item_type,
        "q": q,
        "tag": tag,
        "priority": priority,
        "failed_severity": failed_severity,
    }
    results = filtered(ResultTableFilter, filters, run.results.done())
    sort = attempts.sort_param(sort)
    return results.order_by(*(TABLE_ORDER if sort == attempts.DEFAULT_SORT else attempts.attempt_order(sort)))


def _counted_by_digest(filters: dict) -> bool:
    """Whether the digest can count the table under these filters (no query needed)."""
    return not any(filters.get(name) for name in ("q", "tag", "failed_severity"))


def _item_filters(filters: dict) -> tuple[dict, dict]:
    """A repeated run's table filters split: the item's verdict (over all its attempts), and the
    rest, which select the items some attempt of which matches (all but failed_severity are the
    item's own: its name, type, tags and priority)."""
    verdict = {"passed": filters.get("passed"), "outcome": filters.get("outcome")}
    return verdict, {k: v for k, v in filters.items() if k not in verdict}


def _item_table_rows(run: EvaluationRun, positions: list[int], reviews: dict[int, list[Score]]) -> list[dict]:
    """One row per item (attempts.item_rows) for these positions, in their order."""
    values = run.results.done().filter(position__in=positions).order_by("position", "attempt").values(*TABLE_FIELDS)
    rows = {row["position"]: row for row in attempts.item_rows(run, result_rows(values, reviews))}
    return [rows[p] for p in positions if p in rows]


def _item_table_page(*, run: EvaluationRun, reviews, number, per_page: int, sort: str | None, **filters) -> Page:
    """A repeated run's table: one row per item, its attempts nested; counted and paged by item.
    The item's own filters (name, type, tags, priority) hold for all its attempts alike, so they
    filter the attempts directly; a failed rule's severity picks the items some attempt of which
    failed one."""
    verdict, rest = _item_filters(filters)
    severity = rest.pop("failed_severity", None)
    results = results_filtered(run=run, **rest)
    if severity:
        results = results.filter(position__in=results.with_failed_rule(severity).order_by().values("position"))
    positions = attempts.item_positions(results, sort=attempts.sort_param(sort), **verdict)
    page = Paginator(positions, per_page).get_page(number)
    page.object_list = _item_table_rows(run, list(page.object_list), reviews)
    return page


def result_table_page(
    *,
    run: EvaluationRun,
    digest: RunDigest,
    reviews: dict[int, list[Score]],
    number=None,
    per_page: int = RESULTS_PER_PAGE,
    sort: str | None = None,
    **filters,
) -> Page:
    """One page of the run page's table (results_filtered) as rows (result_rows); for a run with
    repeats, one row per item (attempts.item_rows). The count comes from the digest where its
    columns suffice; the page's ids are found first and only its rows are read (an index-only scan
    of results_run_done_table on PostgreSQL, however deep the page)."""
    if run.repeats > 1:
        return _item_table_page(run=run, reviews=reviews, number=number, per_page=per_page, sort=sort, **filters)
    results = results_filtered(run=run, sort=sort, **filters)
    paginator = Paginator(results, per_page)
    # Paginator.count is a cached property: set, it is never asked of the database.
    paginator.count = (
        digest.results_matching(**{k: filters.get(k) for k in ("passed", "outcome", "item_type", "priority")})
        if _counted_by_digest(filters)
        else results.count()
    )
    page = paginator.get_page(number)
    values = []
    if paginator.count:
        ids = results.values("pk")[page.start_index() - 1 : page.end_index()]
        values = EvaluationResult.objects.filter(pk__in=ids).order_by(*results.query.order_by).values(*TABLE_FIELDS)
    page.object_list = result_rows(values, reviews)
    return page


def results_finished_since(
    *,
    run: EvaluationRun,
    reviews: dict[int, list[Score]],
    after: datetime | None,
    limit: int = RESULTS_PER_PAGE,
    **filters,
) -> list[dict]:
    """The rows a page that has seen results up to `after` (the newest finished_at it was given)
    may not have, under its filters: the first `limit` in the table's order. Results finish out of
    order across workers, and one written a moment before the cursor may commit after it was read,
    so a short overlap is sent again; pages drop rows they have. Reads only what finished since
    (results_run_finished on PostgreSQL). For a run with repeats, the rows of the items an attempt
    of which finished since, each with all its attempts so far (the page replaces its old row)."""
    if run.repeats > 1:
        verdict, rest = _item_filters(filters)
        fresh = results_filtered(run=run, **rest)
        if after is not None:
            fresh = fresh.filter(finished_at__gt=after - LIVE_OVERLAP)
        positions = sorted(set(fresh.order_by("position").values_list("position", flat=True).distinct()[:limit]))
        return [
            row for row in _item_table_rows(run, positions, reviews) if attempts.item_outcome_matches(row, **verdict)
        ]
    results = results_filtered(run=run, **filters)
    if after is not None:
        results = results.filter(finished_at__gt=after - LIVE_OVERLAP)
    return result_rows(results.values(*TABLE_FIELDS)[:limit], reviews)


def run_review_figures(*, digest: RunDigest, reviews: dict[int, list[Score]]) -> dict:
    """Judge and human-reviewed pass rates, and the judge's criterion and rule counts, over a run's
    finished results: the run page's cards, live while the run goes. The judge's figures come from
    the digest, over every finished result; the human ones (human_outcome) over the reviewed
    results only, so their denominator is `reviewed_results`: a result nobody reviewed has no
    human verdict and is neither passed nor failed for the reviewers. (reviews: run_reviews)"""
    completed, judge = digest.completed, digest.judge_passed
    human = {PASSED: 0, FAILED: 0, UNASSESSED: 0}
    changed = 0
    for result_reviews in reviews.values():
        result = result_reviews[0].result
        outcome = human_outcome(
            criteria=result.criteria_scores, rules=result.rubric_scores, latest=in_force(result_reviews)
        )
        if outcome is None:
            continue
        human[outcome] += 1
        changed += outcome != result.outcome
    reviewed = sum(human.values())
    criteria, rules = digest.verdict_counts(CRITERION), digest.verdict_counts(RULE)
    rule_verdicts = sum(rules.values())
    return {
        # Fail-closed: items a high-severity rule of which was not assessed, and every verdict by
        # what the judge did, the denominators shown beside the pass rates.
        "unassessed": digest.unassessed,
        "coverage": digest.coverage(),
        "completed": completed,
        "judge_passed": judge,
        "judge_failed": completed - judge - digest.unassessed,
        "judge_pass_rate": judge / completed if completed else None,
        # Over reviewed results only: human_passed / reviewed_results.
        "reviewed_results": reviewed,
        "not_reviewed": completed - reviewed,
        "human_passed": human[PASSED],
        "human_failed": human[FAILED],
        "human_unassessed": human[UNASSESSED],
        "human_pass_rate": human[PASSED] / reviewed if reviewed else None,
        "changed_by_review": changed,
        "criteria": criteria,
        "criteria_total": sum(criteria.values()),
        "rules": rules,
        "rules_assessed": rules["passed"] + rules["failed"] + rules["warned"],
        "rule_verdicts": rule_verdicts,
        # Most rule verdicts skipped: the judge cannot see what the rubric asks about.
        "rules_mostly_unassessed": rule_verdicts > 0 and rules["skipped"] * 2 > rule_verdicts,
    }


def run_unclaimed(*, run: EvaluationRun, now: datetime | None = None) -> bool:
    """Still pending well after creation: no worker took the run off the queue."""
    return run.status == EvaluationRun.Status.PENDING and (now or timezone.now()) - run.created_at > UNCLAIMED_AFTER


def run_previous_find(*, run: EvaluationRun, completed_only: bool = False) -> EvaluationRun | None:
    """The newest earlier run of the same test set (or question set), preferring the same bot;
    completed_only: a run that completed (what a CI baseline compares with)."""
    if run.test_set_id is None and run.dataset_id is None:
        return None
    earlier = (
        EvaluationRun.objects.of_same_test_set(run)
        .filter(Q(created_at__lt=run.created_at) | Q(created_at=run.created_at, pk__lt=run.pk))
        .newest_first()
    )
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


def run_judge_fingerprints(*, runs) -> dict[int, list[dict]]:
    """Per run pk, the distinct judges of its verdicts (judge_fingerprints): what a finished run
    stored (services._finalize), else from the runs' digests."""
    runs = list(runs)
    found = {run.pk: run.judge_fingerprints for run in runs if run.judge_fingerprints is not None}
    rest = [run for run in runs if run.pk not in found]
    return {**found, **{pk: digest.judge_fingerprints() for pk, digest in run_digests(rest).items()}} if rest else found


# A comparison shows this many items of each kind (regressions, fixes, ...) and criterion
# changes, with how many there are; COMPARE_KEEP of each are kept, so any limit up to it is a slice.
COMPARE_SHOWN = 25
COMPARE_KEEP = 1000


def _comparison_core(base: EvaluationRun, head: EvaluationRun, keep: int | None) -> dict:
    """What a comparison reads from the results: the pairing, the statistics over all pairs and the
    changed criteria. Two finished runs never change, so theirs is computed once and kept in the
    database (models.RunComparison), for every server process and across restarts."""
    cacheable = base.is_finished and head.is_finished and keep is not None and keep <= COMPARE_KEEP
    state = f"{base.status}:{base.completed}:{head.status}:{head.completed}"
    if cacheable:
        stored = RunComparison.objects.filter(base=base, head=head, state=state).values_list("core", flat=True).first()
        if stored is not None:
            return {**stored, "items": pairing.Pairing.from_json(stored["items"])}
    kept = COMPARE_KEEP if cacheable else keep
    items = pairing.pair_items(base_pk=base.pk, head_pk=head.pk, keep=kept if kept is not None else pairing.ALL)
    criterion_deltas, criterion_total = pairing.criterion_changes(base_pk=base.pk, head_pk=head.pk, keep=kept)
    core = {
        "items": items,
        "statistics": paired_statistics(items.pass_pairs(), paired_items=items.paired_items()),
        "criterion_deltas": criterion_deltas,
        "criterion_deltas_total": criterion_total,
    }
    if cacheable:
        _comparison_keep(base, head, state, {**core, "items": items.to_json()})
    return core


def run_comparison_prepare(*, base: EvaluationRun, head: EvaluationRun) -> None:
    """Computes and keeps two finished runs' comparison core (what run_comparison reads first),
    without reading the rows, reviews and digests a page of it shows."""
    _comparison_core(base, head, COMPARE_SHOWN)


def _comparison_keep(base: EvaluationRun, head: EvaluationRun, state: str, core: dict) -> None:
    """Stores a computed core (a cache write: the comparison itself is a read) in one upsert. Two
    processes that computed the same pair at once both write the same figures; the last one stays."""
    RunComparison.objects.bulk_create(
        [RunComparison(base=base, head=head, state=state, core=core)],
        update_conflicts=True,
        unique_fields=["base", "head"],
        update_fields=["state", "core", "computed_at"],
    )


def _rule_deltas(base: RunDigest, head: RunDigest) -> list[dict]:
    base_rules, head_rules = base.rule_pass_counts(), head.rule_pass_counts()
    deltas = []
    for rule_id in sorted(set(base_rules) | set(head_rules)):
        b, h = base_rules.get(rule_id), head_rules.get(rule_id)
        b_rate = b["passed"] / b["total"] if b and b["total"] else None
        h_rate = h["passed"] / h["total"] if h and h["total"] else None
        deltas.append(
            {
                "rule_id": rule_id,
                "rule_name": (h or b)["name"],
                "severity": (h or b)["severity"],
                "base": b,
                "head": h,
                "base_rate": b_rate,
                "head_rate": h_rate,
                "delta": None if b_rate is None or h_rate is None else h_rate - b_rate,
            }
        )
    deltas.sort(key=lambda d: (d["delta"] is None, d["delta"] if d["delta"] is not None else 0, d["rule_id"]))
    return deltas


# The buckets a comparison lists item by item; the others (unchanged pass, new, dropped) it counts.
LISTED = (
    pairing.REGRESSED,
    pairing.FIXES,
    pairing.NEWLY_ASSESSED,
    pairing.NO_LONGER_ASSESSED,
    pairing.STILL_FAILING,
    pairing.STILL_UNASSESSED,
)


def _add_attempt_counts(rows: dict[int, dict], *, items: pairing.Pairing, repeats: dict[int, int]) -> None:
    """With repeats a shown row stands for its item (the attempt with the item's verdict): give it
    the item's attempts finished and passed, and whether they disagree (flaky), as the pairing
    counted them."""
    for pk, row in rows.items():
        if repeats[row["run_id"]] > 1 and (verdict := items.shown.get(pk)) is not None:
            row.update(attempts_done=verdict.n, attempts_passed=verdict.ok, flaky=verdict.ok > 0 and verdict.bad > 0)


def run_comparison(
    *, base: EvaluationRun, head: EvaluationRun, shown: int | None = COMPARE_SHOWN, listed: tuple[str, ...] = LISTED
) -> dict:
    """Two runs of the same test set, item by item (comparison.pair_items: joined on the test case
    id, which stays stable across test set versions): the items of each bucket (comparison.category;
    of the kinds `listed`, the first `shown`, None for all), how many of every kind (`buckets`),
    per-rule and per-criterion score deltas, the paired statistics of the items assessed in both
    (stats.paired_statistics) and whether the judge changed. A bounded number of queries, whatever
    the runs' sizes."""
    if base.test_set_id != head.test_set_id or base.dataset_id != head.dataset_id:
        raise InvalidInputError("Only runs of the same test set (or question set) can be compared.")
    core = _comparison_core(base, head, shown)
    items, digests = core["items"], run_digests([base, head])
    listed = {kind: items.first.get(kind, [])[:shown] if kind in listed else [] for kind in LISTED}
    reviews = run_reviews(runs=[base, head])
    pks = {pk for pairs in listed.values() for pair in pairs for pk in pair if pk is not None}
    values = EvaluationResult.objects.filter(pk__in=pks).values(*TABLE_FIELDS, "output", "run_id") if pks else []
    rows = {row["pk"]: row for row in result_rows(values, reviews)}
    for row in rows.values():
        inputs = (row["item"] or {}).get("inputs") or {}
        row["question"] = (
            inputs.get("message") or inputs.get("initial_message") or (row["item"] or {}).get("question", "")
        )
        row["answer"] = final_answer(row["output"])
        # A scenario's last reply may be the same in both runs while an earlier turn differs: the whole conversation.
        row["conversation"] = conversation_turns(row["output"]) if row["item_type"] == "scenario" else []
    _add_attempt_counts(rows, items=items, repeats={base.pk: base.repeats, head.pk: head.repeats})
    base_digest, head_digest = digests[base.pk], digests[head.pk]
    base_judges, head_judges = base_digest.judge_fingerprints(), head_digest.judge_fingerprints()
    # Runs judged before fingerprints existed have none: nothing to say they differ.
    changes = judge_changes(base_judges, head_judges) if base_judges and head_judges else []
    named = {r.pk: r for r in EvaluationRun.objects.with_names().filter(pk__in=(base.pk, head.pk))}
    base, head = named.get(base.pk, base), named.get(head.pk, head)
    base_reviews = {pk: r for pk, r in reviews.items() if r[0].result.run_id == base.pk}
    head_reviews = {pk: r for pk, r in reviews.items() if r[0].result.run_id == head.pk}
    counts = items.counts
    return {
        "base": base,
        "head": head,
        "shown": shown,
        **{kind: [(rows[b], rows[h]) for b, h in pairs] for kind, pairs in listed.items()},
        **{f"{kind}_total": counts.get(kind, 0) for kind in listed},
        "buckets": {kind: counts.get(kind, 0) for kind in pairing.BUCKETS},
        "unchanged_pass": counts.get(pairing.BOTH_PASSED, 0),
        "new_items": counts.get(pairing.NEW, 0),
        "dropped": counts.get(pairing.DROPPED, 0),
        "bot_snapshots_known": bool(base.bot_snapshot and head.bot_snapshot),
        "bot_changes": bot_snapshot_changes(base.bot_snapshot, head.bot_snapshot),
        "rule_deltas": _rule_deltas(base_digest, head_digest),
        "criterion_deltas": core["criterion_deltas"][:shown],
        "criterion_deltas_total": core["criterion_deltas_total"],
        "base_figures": run_review_figures(digest=base_digest, reviews=base_reviews),
        "head_figures": run_review_figures(digest=head_digest, reviews=head_reviews),
        "statistics": core["statistics"],
        "base_judge_fingerprints": base_judges,
        "head_judge_fingerprints": head_judges,
        "judge_changed": bool(changes),
        "judge_changes": changes,
    }


def rubric_agreement(*, rubric_id) -> dict:
    """Judge-versus-reviewer agreement on the rules of a rubric, and on the criteria of the runs
    that used it, across all its versions (scores.agreement: the human score in force on each
    verdict against the judge's score of the same result and key)."""
    results = EvaluationResult.objects.filter(run__rubric_id=rubric_id).values("pk")
    rows = agreement_table(judge_human_pairs(SubjectKind.RUN_RESULT, results, kinds=(CRITERION, RULE)))
    reviews = Score.objects.of(SubjectKind.RUN_RESULT, results).human().count()
    return {
        "rules": [r for r in rows if r.kind == RULE],
        "criteria": [r for r in rows if r.kind == CRITERION],
        "reviews": reviews,
    }


def results_of_project(*, project, result_ids: list[str]) -> dict[str, EvaluationResult]:
    """The project's results among `result_ids` (strings; one that is not a uuid is simply not
    found, as an unknown one), with their run, by result id as a string."""
    ids = []
    for value in result_ids:
        try:
            ids.append(uuid.UUID(value))
        except ValueError:
            continue
    rows = EvaluationResult.objects.filter(result_id__in=ids, run__project=project).select_related("run")
    return {str(r.result_id): r for r in rows}


def result_ids_of(pks) -> dict[int, uuid.UUID]:
    """The result_id of each result pk (agreement's disagreements name results by pk)."""
    return dict(EvaluationResult.objects.filter(pk__in=pks).values_list("pk", "result_id"))


def run_flip_rate(run: EvaluationRun) -> tuple[float | None, int]:
    """(flip rate, pairs) of a run's items over their attempts (pooled: pairs that differ over all
    pairs of attempts of one item judged by the same judge); (None, 0) without repeats."""
    if run.repeats < 2:
        return None, 0
    groups = (
        run.results.done()
        .filter(outcome__in=[PASSED, FAILED])
        .order_by()
        .values("position", "fingerprint")
        .annotate(passes=Count("id", filter=Q(outcome=PASSED)), fails=Count("id", filter=Q(outcome=FAILED)))
    )
    differing, pairs = flip_pairs((group["passes"], group["fails"]) for group in groups)
    return (round(differing / pairs, 4) if pairs else None), pairs


def test_set_flip_rate(*, project, test_set_id) -> tuple[float | None, int, EvaluationRun | None]:
    """The flip rate the newest completed run of the test set with repeats measured: (rate, pairs,
    that run), or (None, 0, None) when no such run exists yet."""
    run = (
        EvaluationRun.objects.filter(
            project=project, test_set_id=test_set_id, repeats__gt=1, status=EvaluationRun.Status.COMPLETED
        )
        .order_by("-created_at")
        .first()
    )
    if run is None:
        return None, 0, None
    rate, pairs = run_flip_rate(run)
    return rate, pairs, run


def run_detectable_drop(*, run: EvaluationRun) -> dict | None:
    """What drop in pass rate a comparison of this run with another like it could detect (power 0.8,
    alpha 0.05: stats.detectable_drop), given the flip rate this run measured over its repeats, or
    the newest repeated run of its test set did; None for a question-set run or one with no items.
    {"drop", "flip_rate" (None: not measured, taken as 0), "measured_by" (run id or None), "items",
    "repeats"}."""
    items = run.total // max(run.repeats, 1)
    if run.test_set_id is None or items == 0:
        return None
    rate, _pairs = run_flip_rate(run)
    measured_by = run.run_id if rate is not None else None
    if rate is None:
        rate, _pairs, other = test_set_flip_rate(project=run.project_id, test_set_id=run.test_set_id)
        measured_by = other.run_id if other is not None else None
    drop = detectable_drop(items=items, repeats=run.repeats, flip_rate=rate or 0.0)
    return {
        "drop": drop,
        "drop_points": None if drop is None else round(drop * 100, 1),
        "flip_rate": rate,
        "measured_by": measured_by,
        "items": items,
        "repeats": run.repeats,
    }


def rubric_flip_rates(*, rubric_id) -> dict[str, dict]:
    """Judge QA per rule of a rubric: of the pairs of the judge's verdicts on the same test case given
    with the same judge (the result's fingerprint), over repeats and over runs of any version of the
    rubric, the share that differ ({"flip_rate", "pairs"} per rule id; flip_rate null without a
    pair). A judge that flips on the same item is noise in every figure built on it. One grouped
    query: (rule, fingerprint, test case) with its passes and fails."""
    results = EvaluationResult.objects.filter(run__rubric_id=rubric_id)
    result = results.filter(pk=OuterRef("subject_id"))
    groups = (
        Score.objects.machine()
        .of(SubjectKind.RUN_RESULT, results.values("pk"))
        .filter(kind=RULE, status=JudgeStatus.OK, passed__isnull=False)
        .annotate(
            case=Subquery(result.values("test_case_id")[:1]),
            judged_by=Subquery(result.values("fingerprint")[:1]),
        )
        .order_by()
        .values("key", "judged_by", "case")
        .annotate(passes=Count("id", filter=Q(passed=True)), fails=Count("id", filter=Q(passed=False)))
    )
    by_rule: dict[str, list[tuple[int, int]]] = {}
    for group in groups:
        by_rule.setdefault(group["key"], []).append((group["passes"], group["fails"]))
    answer = {}
    for key, rule_groups in by_rule.items():
        differing, pairs = flip_pairs(rule_groups)
        answer[key] = {"flip_rate": round(differing / pairs, 4) if pairs else None, "pairs": pairs}
    return answer


def runs_expired_count(project, before) -> int:
    """How many of the project's finished runs a retention pass would delete now."""
    return EvaluationRun.objects.filter(
        project=project, created_at__lt=before, status__in=EvaluationRun.FINISHED
    ).count()


def run_spend_per_day(*, project, days: int = 14) -> list[dict]:
    """What the LLM calls of `project`'s runs cost per day (the day each item finished, as it was
    priced), newest first, over the last `days` days: {day, bot, judge, total, unpriced_calls}; a day
    with results but nothing priced has null amounts. Days without finished results are left out."""
    since = timezone.now() - timedelta(days=days)
    rows = (
        EvaluationResult.objects.filter(run__project=project, finished_at__gte=since)
        .annotate(day=TruncDate("finished_at"))
        .values("day")
        .annotate(bot=Sum("bot_cost"), judge=Sum("judge_cost"), unpriced_calls=Sum("unpriced_calls"))
        .order_by("-day")
    )
    return [
        {**row, "cost": SpendSplit(bot=row["bot"], judge=row["judge"], unpriced_calls=row["unpriced_calls"] or 0)}
        for row in rows
    ]
