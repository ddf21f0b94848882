"""A repeated run (repeats > 1) read item by item: every item runs `repeats` times, each attempt an
EvaluationResult, and a reader wants one entry per item with its attempts under it.

An item's verdict is aggregate.canonical_outcome over its finished attempts (passed only if every
attempt passed). Its *deciding attempt* is the first attempt (by number) whose outcome is that
verdict: the first failed attempt of a failed item, the first unassessed one of an unassessed item,
attempt 1 of a passed item. Where one result must stand for the item (the contract's fields of the
results API, the failures on the run page) it is the deciding attempt, so what the entry says
failed is what failed the item, and `passed = criteria_passed AND rubric_passed` still holds.

An item is a position of the run (its attempts share it), so items are paged by position in the
database and only the page's attempts are read."""

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby

from django.db.models import Avg, Case, Count, F, IntegerField, Max, Q, Value, When

from .judging.aggregate import FAILED, PASSED, UNASSESSED, canonical_outcome, flip_rate, is_flaky
from .models import EvaluationRun, iter_with_verdicts


def _outcome(attempt) -> str:
    """A finished attempt's outcome, from a model or a values() row; rows older than the outcome
    column say only passed or not."""
    get = attempt.get if isinstance(attempt, dict) else lambda name: getattr(attempt, name)
    return get("outcome") or (PASSED if get("passed") else FAILED)


@dataclass
class ItemAttempts:
    """One item's finished attempts, in attempt order (models or values() rows)."""

    attempts: list

    @property
    def outcomes(self) -> list[str]:
        return [_outcome(a) for a in self.attempts]

    @property
    def outcome(self) -> str:
        return canonical_outcome(self.outcomes)

    @property
    def flaky(self) -> bool:
        return is_flaky(self.outcomes)

    @property
    def deciding(self):
        verdict = self.outcome
        return next((a for a, o in zip(self.attempts, self.outcomes, strict=True) if o == verdict), self.attempts[0])


def _position(attempt) -> int:
    return attempt["position"] if isinstance(attempt, dict) else attempt.position


def group_by_item(attempts) -> Iterator[ItemAttempts]:
    """Attempts ordered by position then attempt, as one ItemAttempts per item (lazily over an
    iterator, so a streamed list is grouped as it is read)."""
    return (ItemAttempts(list(rows)) for _, rows in groupby(attempts, key=_position))


# ---- The results API: the contract's fields per item, its attempts nested ----


def _item_positions(run: EvaluationRun, *, passed: bool | None = None, item_type: str | None = None):
    """Positions of the run's items with a finished attempt, in test set order; `passed` keeps the
    items every finished attempt of which passed (true) or the others (false)."""
    results = run.results.done()
    if item_type:
        results = results.filter(item_type=item_type)
    if passed is None:
        return results.order_by("position").values_list("position", flat=True).distinct()
    grouped = results.order_by().values("position").annotate(n=Count("pk"), ok=Count("pk", filter=Q(passed=True)))
    grouped = grouped.filter(ok=F("n")) if passed else grouped.exclude(ok=F("n"))
    return grouped.order_by("position").values_list("position", flat=True)


def item_result_page(
    *, run: EvaluationRun, limit: int, offset: int = 0, passed: bool | None = None, item_type: str | None = None
) -> tuple[list[ItemAttempts], bool]:
    """(items, has_more): `limit` items of the run from `offset`, in test set order, each with its
    finished attempts. Only the page's positions are found, then only their attempts are read."""
    positions = list(_item_positions(run, passed=passed, item_type=item_type)[offset : offset + limit + 1])
    attempts = run.results.done().filter(position__in=positions[:limit]).order_by("position", "attempt")
    return list(group_by_item(attempts.with_verdicts())), len(positions) > limit


def item_result_list(*, run: EvaluationRun, passed: bool | None = None, item_type: str | None = None):
    """Every item of the run with a finished attempt, grouped as read from a database cursor."""
    attempts = run.results.done()
    if passed is not None or item_type:
        attempts = attempts.filter(position__in=_item_positions(run, passed=passed, item_type=item_type))
    return group_by_item(iter_with_verdicts(attempts.order_by("position", "attempt"), chunk_size=500))


# ---- The run page's table: one row per item ----

# ?sort= on the run page: the column and its ordering. Default (no sort, or one not listed): the
# item's verdict, not-passed first, then test set order, as the table always showed.
SORTS = ("position", "item", "type", "verdict", "ms")
DEFAULT_SORT = "verdict"


def sort_param(value: str | None) -> str:
    """The sort named in the query string if it is one of SORTS (optionally "-" for descending),
    else the default: a typed-over link shows the table in its usual order, not an error."""
    value = (value or "").strip()
    return value if value.removeprefix("-") in SORTS else DEFAULT_SORT


def _direction(sort: str, fields: tuple) -> list:
    descending = sort.startswith("-")
    return [F(f).desc() if descending else F(f).asc() for f in fields]


def attempt_order(sort: str) -> list:
    """order_by() of finished results (one per item: a run without repeats) for a sort."""
    fields = {
        "position": ("position",),
        "item": ("item_name", "position"),
        "type": ("item_type", "position"),
        "verdict": ("passed", "position"),
        "ms": ("duration_ms", "position"),
    }[sort.removeprefix("-")]
    return [*_direction(sort, fields), "pk"]


def item_order(sort: str) -> list:
    fields = {
        "position": ("position",),
        "item": ("name", "position"),
        "type": ("kind", "position"),
        "verdict": ("all_passed", "position"),
        "ms": ("ms", "position"),
    }[sort.removeprefix("-")]
    return _direction(sort, fields)


# What each sort needs besides the attempts' count and passes; the default reads only columns that
# results_run_done_order holds (position, passed), so PostgreSQL groups the run in position order
# from that index alone.
_SORT_AGGREGATES = {
    "item": {"name": Max("item_name")},
    "type": {"kind": Max("item_type")},
    "ms": {"ms": Avg("duration_ms")},
}


def item_positions(results, *, passed: bool | None, outcome: str | None, sort: str) -> list[int]:
    """The positions of the items the run page's table shows, in the order of `sort`: the items
    with an attempt among `results` (finished attempts, every attempt of each item they hold),
    under the item-level verdict filter (passed: every attempt passed; not passed; failed: some
    attempt failed; unassessed: none failed, not all passed). One grouped query; its list is what the
    table pages through (a short list of ints, so its length is the count without a second pass over the run)."""
    key = sort.removeprefix("-")
    aggregates = {"n": Count("pk"), "ok": Count("pk", filter=Q(passed=True)), **_SORT_AGGREGATES.get(key, {})}
    if outcome in (FAILED, UNASSESSED):
        aggregates["bad"] = Count("pk", filter=Q(outcome=FAILED) | Q(outcome__isnull=True, passed=False))
    items = results.order_by().values("position").annotate(**aggregates)
    if key == "verdict":
        items = items.annotate(
            all_passed=Case(When(ok=F("n"), then=Value(1)), default=Value(0), output_field=IntegerField())
        )
    if passed is True:
        items = items.filter(ok=F("n"))
    elif passed is False:
        items = items.exclude(ok=F("n"))
    if outcome == FAILED:
        items = items.filter(bad__gt=0)
    elif outcome == UNASSESSED:
        items = items.filter(bad=0).exclude(ok=F("n"))
    return list(items.order_by(*item_order(sort)).values_list("position", flat=True))


def item_rows(run: EvaluationRun, rows: list[dict]) -> list[dict]:
    """Attempt rows (selectors.result_rows of every finished attempt of some items, in position and
    attempt order) as one row per item: the deciding attempt's row (its failures, its result page)
    with the item's verdict, whether it is flaky, its attempts as chips, the verdict counts summed
    over the attempts, the mean duration, and the human verdict over the attempts where any was
    reviewed (each attempt's reviewed verdict, else its judge's)."""
    items = []
    for item in group_by_item(rows):
        deciding = item.deciding
        attempts = item.attempts
        durations = [a["duration_ms"] for a in attempts if a["duration_ms"] is not None]
        reviews = sum(a["reviews"] for a in attempts)
        row = {
            **deciding,
            "passed": item.outcome == PASSED,
            "outcome": item.outcome,
            "flaky": item.flaky,
            "flip_rate": flip_rate(
                (a.get("fingerprint"), {PASSED: True, FAILED: False}.get(_outcome(a))) for a in attempts
            ),
            "repeats": run.repeats,
            "deciding_attempt": deciding["attempt"],
            "attempts_passed": item.outcomes.count(PASSED),
            # What the row's checkbox and queue menu add: the attempt the row links to.
            "queue_label": f"{deciding['item_name'] or deciding['test_case_id']}, attempt {deciding['attempt']}",
            "attempts": [
                {
                    "attempt": a["attempt"],
                    "result_id": a["result_id"],
                    "outcome": _outcome(a),
                    "reviews": a["reviews"],
                    "human_passed": a["human_passed"],
                }
                for a in attempts
            ],
            # Attempts not finished (yet, or ever in a cancelled run): the verdict is over the others.
            "unfinished": sorted(set(range(1, run.repeats + 1)) - {a["attempt"] for a in attempts}),
            "criteria_counts": _summed(a["criteria_counts"] for a in attempts),
            "rules_counts": _summed(a["rules_counts"] for a in attempts),
            "duration_ms": round(sum(durations) / len(durations)) if durations else None,
            "reviews": reviews,
        }
        # No human verdict where nobody reviewed; where someone reviewed an attempt, each attempt counts
        # with its reviewed verdict, else its judge's, and the item's verdict folds them as the judge's does.
        human = [a["human_outcome"] if a["reviews"] else _outcome(a) for a in attempts] if reviews else []
        row["human_outcome"] = canonical_outcome(human) if human else None
        row["human_passed"] = {PASSED: True, FAILED: False}.get(row["human_outcome"])
        items.append(row)
    return items


def _summed(counts) -> dict:
    total: dict[str, int] = {}
    for one in counts:
        for key, n in one.items():
            total[key] = total.get(key, 0) + n
    return total


def item_outcome_matches(row: dict, *, passed: bool | None, outcome: str | None) -> bool:
    """Whether an item row passes the verdict filter (_grouped_items' meaning, on a built row)."""
    if passed is not None and row["passed"] is not passed:
        return False
    return outcome is None or row["outcome"] == outcome
