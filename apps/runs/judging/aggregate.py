"""The contract's arithmetic: which rules apply, when an item passes, and the run's figures."""

from typing import NamedTuple

from .types import CRITERION, RULE, Verdict

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


def assessed(rules: list[Verdict]) -> list[Verdict]:
    """Rule verdicts the judge actually gave (passed, failed or errored)."""
    return [r for r in rules if r.assessed]


PASSED, FAILED, UNASSESSED = "passed", "failed", "unassessed"
OUTCOMES = (PASSED, FAILED, UNASSESSED)


class Outcome(NamedTuple):
    """(criteria_passed, rubric_passed, passed, outcome); `passed` is outcome == PASSED, kept as a
    boolean because the API and the run's counters always had it."""

    criteria_passed: bool
    rubric_passed: bool | None
    passed: bool
    outcome: str  # PASSED, FAILED or UNASSESSED


def item_outcome(criteria: list[Verdict], rules: list[Verdict] | None) -> Outcome:
    """Fail-closed: an item fails if any criterion failed or errored (an error cannot confirm
    success) or any high-severity rule was judged and failed. Otherwise, if a criterion was skipped
    (the judge said it cannot assess it: the offline judge with prose criteria) or a high-severity
    rule was not assessed (skipped or error), the item is unassessed: never passed, counted apart,
    because a gate must not go green on what nobody judged. A failure wins over an unassessed
    verdict: the item is known to fail. criteria_passed is true only when every criterion passed."""
    criteria_passed = all(c.counts_as_passed for c in criteria)
    criteria_failed = any(c.failed for c in criteria)
    if rules is None:
        return _outcome(criteria_passed, None, FAILED if criteria_failed else PASSED if criteria_passed else UNASSESSED)
    high = [r for r in rules if r.severity == "high"]
    rubric_passed = all(r.counts_as_passed for r in high)
    if criteria_failed or any(r.status == "ok" and not r.passed for r in high):
        return _outcome(criteria_passed, rubric_passed, FAILED)
    return _outcome(criteria_passed, rubric_passed, PASSED if criteria_passed and rubric_passed else UNASSESSED)


def _outcome(criteria_passed: bool, rubric_passed: bool | None, outcome: str) -> Outcome:
    return Outcome(criteria_passed, rubric_passed, outcome == PASSED, outcome)


def stored_outcome(*, passed: bool | None, criteria: list[dict] | None, rules: list[dict] | None) -> str | None:
    """The outcome of a stored result: from its verdicts where it has criteria (V2), else from its
    boolean (V1 questions, engine faults); None for a result not finished. A result recorded as not
    passed (the bot failed, the engine faulted) is never made passed by its verdicts."""
    if passed is None and criteria is None:
        return None
    if criteria is None:
        return PASSED if passed else FAILED
    outcome = item_outcome(
        Verdict.list_from_json(criteria, kind=CRITERION),
        None if rules is None else Verdict.list_from_json(rules, kind=RULE),
    ).outcome
    return FAILED if outcome == PASSED and passed is False else outcome


def canonical_outcome(outcomes: list[str]) -> str:
    """An item's verdict over its attempts (repeats): passed only if every attempt passed;
    failed if any attempt failed; otherwise (some attempt unassessed, none failed) unassessed."""
    if outcomes and all(o == PASSED for o in outcomes):
        return PASSED
    return FAILED if FAILED in outcomes else UNASSESSED


def is_flaky(outcomes: list[str]) -> bool:
    """Attempts of one item disagree: at least one passed and at least one failed. An unassessed
    attempt disagrees with nothing (the judge gave no verdict to disagree with)."""
    return PASSED in outcomes and FAILED in outcomes


def flip_pairs(groups) -> tuple[int, int]:
    """(pairs that differ, pairs) over groups of verdicts given by one judge on one item, each group
    as (passes, fails): a group of p passes and f fails has p*f differing pairs of C(p+f, 2)."""
    differing = pairs = 0
    for passes, fails in groups:
        differing += passes * fails
        pairs += (passes + fails) * (passes + fails - 1) // 2
    return differing, pairs


def flip_counts(verdicts) -> tuple[int, int]:
    """(pairs that differ, pairs) over (fingerprint, passed) verdicts of one item (or one rule of one
    item): pairs of verdicts given by the same judge (equal fingerprint), assessed ones only."""
    groups: dict[str, list[int]] = {}
    for fingerprint, passed in verdicts:
        if passed is None:
            continue
        counts = groups.setdefault(fingerprint or "", [0, 0])
        counts[0 if passed else 1] += 1
    return flip_pairs(groups.values())


def flip_rate(verdicts) -> float | None:
    """The share of pairs of an item's verdicts, judged with the same fingerprint, that differ
    (flip_counts); None with fewer than two such verdicts. 0 is steady; two attempts that differ
    are 1, and over many attempts a fair coin comes near 0.5."""
    differing, pairs = flip_counts(verdicts)
    return None if pairs == 0 else round(differing / pairs, 4)


def verdict_counts(verdicts: list[Verdict]) -> dict[str, int]:
    """passed · failed · warned · skipped, as the contract counts them: a verdict the judge skipped
    is neither passed nor failed (an errored one failed), and a failed medium or low rule only warns."""
    return weighted_verdict_counts((verdict, 1) for verdict in verdicts)


def weighted_verdict_counts(counted) -> dict[str, int]:
    """verdict_counts over (verdict, how many alike) pairs."""
    counts = {"passed": 0, "failed": 0, "warned": 0, "skipped": 0}
    for verdict, n in counted:
        if verdict.counts_as_passed:
            counts["passed"] += n
        elif verdict.status == "skipped":
            counts["skipped"] += n
        elif verdict.kind == RULE and verdict.failed and verdict.severity != "high":
            counts["warned"] += n
        else:
            counts["failed"] += n
    return counts


def coverage(verdicts: list[Verdict]) -> dict:
    """The denominators shown beside every score: verdicts the judge gave (scored), said it could
    not give (skipped), or failed to give (errored)."""
    return weighted_coverage((verdict, 1) for verdict in verdicts)


def weighted_coverage(counted) -> dict:
    """coverage over (verdict, how many alike) pairs: the figures of a whole run summed in the
    database (apps.runs.aggregates) without a Verdict per stored verdict."""
    counts = {"scored": 0, "skipped": 0, "errored": 0}
    for verdict, n in counted:
        counts[{"ok": "scored", "skipped": "skipped"}.get(verdict.status, "errored")] += n
    return counts


def component_scores(rule_verdicts: list[Verdict]) -> dict:
    """Rule pass rates per component scope across all results; rules without a scope count as
    general; rules the judge could not assess are left out."""
    return weighted_component_scores((verdict, 1) for verdict in rule_verdicts)


def weighted_component_scores(counted) -> dict:
    """component_scores over (rule verdict, how many alike) pairs."""
    buckets: dict[str, dict] = {}
    for verdict, n in counted:
        if not verdict.assessed:
            continue
        scope = verdict.component_scope or "general"
        bucket = buckets.setdefault(scope, {"score": 0.0, "total": 0, "passed": 0})
        bucket["total"] += n
        bucket["passed"] += verdict.counts_as_passed * n
    for bucket in buckets.values():
        bucket["score"] = round(bucket["passed"] / bucket["total"], 4)
    return dict(sorted(buckets.items(), key=lambda kv: SCOPES.index(kv[0]) if kv[0] in SCOPES else len(SCOPES)))
