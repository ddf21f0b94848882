"""Two runs of one test set paired item by item in the database (selectors.run_comparison builds
the comparison from these).

Items are paired by test case id, which stays stable across test set versions. The pairing reads
only a few columns of each result and answers with counts and the first few pairs of each kind, so
it costs the same memory at 100,000 items as at 10. An item's figures are summed over its results
(n, passed, failed, unassessed), so an item with several attempts pairs as one item with its
canonical verdict (passed only if every attempt passed, failed if any failed, else unassessed); the
result shown is its first attempt with that verdict (lowest id), so a flaky item that regressed shows
the attempt that failed.

Every item lands in one bucket (docs/comparison.md), by its verdict before → after:
regressions (passed → failed), fixes (failed → passed), still failing (failed → failed), unchanged
pass (passed → passed), newly assessed (unassessed → passed or failed), no longer assessed (passed
or failed → unassessed), still unassessed, new items (only in the head run) and dropped (only in the
base run). Failed never includes unassessed: an unassessed → passed item is newly assessed, not fixed.
"""

from dataclasses import dataclass, field

from django.db.models import (
    Avg,
    Case,
    CharField,
    Count,
    Exists,
    F,
    FilteredRelation,
    FloatField,
    Func,
    Min,
    OuterRef,
    Q,
    Value,
    When,
    Window,
)
from django.db.models.functions import Coalesce, Round, RowNumber

from apps.scores.models import Score
from apps.scores.vocabulary import JudgeStatus, ScoreSource, SubjectKind

from .judging.aggregate import FAILED, PASSED, UNASSESSED
from .judging.types import CRITERION
from .models import EvaluationResult

# "No limit" for the window's row numbers (an integer every database compares with).
ALL = 2**31 - 1
REGRESSED, FIXES, STILL_FAILING, BOTH_PASSED, NEW, DROPPED = (
    "regressions",
    "fixes",
    "still_failing",
    "unchanged_pass",
    "new_items",
    "dropped",
)
STILL_UNASSESSED, NEWLY_ASSESSED, NO_LONGER_ASSESSED = "still_unassessed", "newly_assessed", "no_longer_assessed"
BUCKETS = (
    REGRESSED,
    FIXES,
    STILL_FAILING,
    BOTH_PASSED,
    NEWLY_ASSESSED,
    NO_LONGER_ASSESSED,
    STILL_UNASSESSED,
    NEW,
    DROPPED,
)
# Per (base, head) item verdict: the columns the pairing groups items by.
_GROUP = ("bn", "bok", "bbad", "buna", "hn", "hok", "hbad", "huna")


def _item_figures(run_pk: int, prefix: str) -> dict:
    """An item's figures in one run, summed over its results there: results (n), passed (ok),
    failed (bad) and unassessed (una), and the result to show (its first failed, else first
    unassessed, else first). A finished result without a stored outcome (written before outcomes
    were) that did not pass failed, as aggregate.stored_outcome reads such a result."""
    mine = Q(run_id=run_pk)
    bad = mine & (Q(outcome=FAILED) | Q(outcome__isnull=True, passed=False))
    unassessed = mine & Q(outcome=UNASSESSED)
    return {
        f"{prefix}n": Count("id", filter=mine),
        f"{prefix}ok": Count("id", filter=mine & Q(passed=True)),
        f"{prefix}bad": Count("id", filter=bad),
        f"{prefix}una": Count("id", filter=unassessed),
        f"{prefix}pk": Coalesce(Min("id", filter=bad), Min("id", filter=unassessed), Min("id", filter=mine)),
        f"{prefix}pos": Min("position", filter=mine),
    }


@dataclass(frozen=True)
class ItemVerdict:
    """One item's verdict over its results: passed only if all passed (with one result, its own),
    failed if any failed, else unassessed (aggregate.canonical_outcome)."""

    n: int
    ok: int
    bad: int
    unassessed: int

    @property
    def passed(self) -> bool:
        return self.n > 0 and self.ok == self.n

    @property
    def outcome(self) -> str:
        if self.passed:
            return PASSED
        return FAILED if self.bad else UNASSESSED

    @property
    def assessed(self) -> bool:
        return self.outcome != UNASSESSED


def category(base: ItemVerdict | None, head: ItemVerdict | None) -> str:
    """The item's bucket by its verdict before → after (the module's docstring)."""
    if base is None:
        return NEW
    if head is None:
        return DROPPED
    if not base.assessed:
        return NEWLY_ASSESSED if head.assessed else STILL_UNASSESSED
    if not head.assessed:
        return NO_LONGER_ASSESSED
    if base.passed:
        return BOTH_PASSED if head.passed else REGRESSED
    return FIXES if head.passed else STILL_FAILING


@dataclass
class Pairing:
    """What the pairing answers: per (base, head) item verdict, how many items; per category, how
    many and the first `keep` (base pk, head pk) pairs in test set order."""

    groups: dict = field(default_factory=dict)  # (ItemVerdict | None, ItemVerdict | None) -> items
    counts: dict = field(default_factory=dict)  # category -> items
    first: dict = field(default_factory=dict)  # category -> [(base pk | None, head pk | None)]
    shown: dict = field(default_factory=dict)  # pk of a listed result -> its item's ItemVerdict

    def paired_items(self) -> int:
        """Items finished in both runs, assessed or not."""
        return sum(n for (base, head), n in self.groups.items() if base is not None and head is not None)

    def to_json(self) -> dict:
        """The pairing as JSON (models.RunComparison keeps it): an item verdict is [n, ok, bad,
        unassessed], a missing one null; from_json reads it back equal."""

        def verdict(v: ItemVerdict | None) -> list[int] | None:
            return None if v is None else [v.n, v.ok, v.bad, v.unassessed]

        return {
            "groups": [[verdict(base), verdict(head), n] for (base, head), n in self.groups.items()],
            "counts": self.counts,
            "first": {kind: [list(pair) for pair in pairs] for kind, pairs in self.first.items()},
            "shown": [[pk, verdict(v)] for pk, v in self.shown.items()],
        }

    @classmethod
    def from_json(cls, data: dict) -> "Pairing":
        # A kept pairing lists up to 9,000 shown results whose verdicts are a handful of distinct
        # values: one ItemVerdict per distinct value, not one per result.
        made: dict[tuple, ItemVerdict] = {}

        def verdict(v: list[int] | None) -> ItemVerdict | None:
            if v is None:
                return None
            key = tuple(v)
            if key not in made:
                made[key] = ItemVerdict(*key)
            return made[key]

        return cls(
            groups={(verdict(base), verdict(head)): n for base, head, n in data["groups"]},
            counts=dict(data["counts"]),
            first={kind: [tuple(pair) for pair in pairs] for kind, pairs in data["first"].items()},
            shown={pk: verdict(v) for pk, v in data["shown"]},
        )

    def pass_pairs(self) -> list[tuple[bool, bool]]:
        """(base passed, head passed) of every item assessed (passed or failed) in both runs, for
        stats.paired_statistics: an item unassessed in either run has no verdict to compare."""
        pairs = []
        for (base, head), n in self.groups.items():
            if base is not None and head is not None and base.assessed and head.assessed:
                pairs += [(base.passed, head.passed)] * n
        return pairs


def _verdict_of(n, ok, bad, una) -> ItemVerdict | None:
    return None if not n else ItemVerdict(int(n), int(ok or 0), int(bad or 0), int(una or 0))


def pair_items(*, base_pk: int, head_pk: int, keep: int) -> Pairing:
    """One ORM query: the items of both runs (grouped by test case id), paired, counted by verdicts
    (a window over each (base, head) verdict), with the first `keep` of each kind by position in
    the head run (the base run for dropped items)."""
    # A run compared with itself: its figures are read once and are the head's too (the same
    # aggregates twice are one column to Django's window wrapping, which then misreads the rows).
    same = base_pk == head_pk
    columns = _GROUP[:4] if same else _GROUP
    group = [F(name) for name in columns]
    items = (
        EvaluationResult.objects.done()
        .filter(run_id__in=(base_pk, head_pk))
        .order_by()
        .values("test_case_id")
        .annotate(**_item_figures(base_pk, "b"), **({} if same else _item_figures(head_pk, "h")))
        .annotate(pos=F("bpos") if same else Coalesce("hpos", "bpos"))
        .annotate(
            group_n=Window(Count("test_case_id"), partition_by=group),
            rn=Window(
                RowNumber(),
                partition_by=group,
                order_by=[
                    F("pos").asc(),
                    F("bpk" if same else "hpk").asc(nulls_last=True),
                    F("bpk").asc(nulls_last=True),
                ],
            ),
        )
        .filter(rn__lte=keep)
    )
    pairing = Pairing()
    listed: dict[str, list] = {}
    for row in items.values(*columns, "group_n", "bpk", *(() if same else ("hpk",)), "pos"):
        if same:
            row.update({f"h{name[1:]}": row[name] for name in (*columns, "bpk")})
        base = _verdict_of(row["bn"], row["bok"], row["bbad"], row["buna"])
        head = _verdict_of(row["hn"], row["hok"], row["hbad"], row["huna"])
        bpk, hpk, group_n = row["bpk"], row["hpk"], row["group_n"]
        kind = category(base, head)
        if (base, head) not in pairing.groups:
            pairing.groups[(base, head)] = group_n
            pairing.counts[kind] = pairing.counts.get(kind, 0) + group_n
        listed.setdefault(kind, []).append((row["pos"], hpk or 0, bpk or 0, bpk, hpk))
        pairing.shown.update({pk: verdict for pk, verdict in ((bpk, base), (hpk, head)) if pk is not None})
    for kind, entries in listed.items():
        pairing.first[kind] = [(bpk, hpk) for *_, bpk, hpk in sorted(entries)[:keep]]
    return pairing


# --- criteria whose verdict changed --------------------------------------------------------------


class CodePointOrder(Func):
    """Orders text by code point, as Python sorts it: SQLite's default (BINARY) already does; on
    PostgreSQL the database's collation may not, so the expression says COLLATE "C" there. A compiled
    expression, not a vendor branch: the query is the same ORM query on both."""

    template = "%(expressions)s"
    output_field = CharField()

    def as_postgresql(self, compiler, connection, **extra_context):
        sql, params = self.as_sql(compiler, connection, **extra_context)
        return f'({sql}) COLLATE "C"', params


def _criteria() -> FilteredRelation:
    """The judge's criterion verdicts of a result (not a reviewer's, not skipped or errored), as a
    join (a new one each time: a FilteredRelation is bound to the query it joins)."""
    return FilteredRelation(
        "verdict_scores",
        condition=Q(
            verdict_scores__kind=CRITERION,
            verdict_scores__status=JudgeStatus.OK,
            verdict_scores__source__in=[source for source in ScoreSource if source != ScoreSource.HUMAN],
        ),
    )


def _criterion_rows(run_pks: tuple[int, int]):
    """The two runs' finished results joined to their judge's criterion verdicts (status ok): one
    row per verdict, `v` the Score row, one per criterion text within a result (the last, as a dict
    keyed by it would keep). One JOIN over (run) x (subject_kind, subject_id, kind, position): no
    subquery per row but the anti-join that drops an earlier verdict of the same text."""
    later = Score.objects.filter(
        subject_kind=SubjectKind.RUN_RESULT,
        parent_id=OuterRef("run_id"),
        subject_id=OuterRef("pk"),
        kind=CRITERION,
        key=OuterRef("criterion"),
        position__gt=OuterRef("v_position"),
        status=JudgeStatus.OK,
    ).exclude(source=ScoreSource.HUMAN)
    return (
        EvaluationResult.objects.filter(run_id__in=run_pks)
        .annotate(v=_criteria())
        .filter(v__parent_id__in=run_pks)
        .annotate(criterion=F("v__key"), v_position=F("v__position"))
        .exclude(Exists(later))
    )


def criterion_changes(*, base_pk: int, head_pk: int, keep: int | None) -> tuple[list[dict], int]:
    """Criteria (per item) whose pass/fail or score differs between the runs: the first `keep` by
    change (worst first), item and criterion, and how many there are. One ORM query over the runs'
    results joined to their criterion Score rows, grouped by (test case, criterion), each run's
    verdicts folded over the item's attempts as the item's are (passed only if every attempt passed
    it; the score is their mean), so each (item, criterion) is listed once. The total is a window
    over the same groups, so the groups are computed once (not once to count, once for the rows)."""

    def of(run_pk):
        return Q(run_id=run_pk)

    def failed(run_pk):
        return of(run_pk) & (Q(v__passed=False) | Q(v__passed__isnull=True))

    value = Coalesce("v__value", Value(0.0), output_field=FloatField())
    groups = (
        _criterion_rows((base_pk, head_pk))
        .order_by()
        .values("test_case_id", "criterion")
        .annotate(
            base_n=Count("v__id", filter=of(base_pk)),
            head_n=Count("v__id", filter=of(head_pk)),
            base_failed=Count("v__id", filter=failed(base_pk)),
            head_failed=Count("v__id", filter=failed(head_pk)),
            base_score=Round(Avg(value, filter=of(base_pk)), 4),
            head_score=Round(Avg(value, filter=of(head_pk)), 4),
            name=Min("item_name", filter=of(head_pk)),
            first=Min("position", filter=of(head_pk)),
            first_id=Min("id", filter=of(head_pk)),
        )
        .filter(base_n__gt=0, head_n__gt=0)
        .annotate(
            base_passed=Case(When(base_failed=0, then=Value(True)), default=Value(False)),
            head_passed=Case(When(head_failed=0, then=Value(True)), default=Value(False)),
        )
        .filter(~Q(base_passed=F("head_passed")) | ~Q(base_score=F("head_score")))
    )
    ordered = groups.order_by(
        F("head_score") - F("base_score"), CodePointOrder("name"), CodePointOrder("criterion"), "first", "first_id"
    )
    if keep == 0:
        return [], ordered.count()
    # COUNT(...) OVER (): every group's row carries how many groups there are (before the LIMIT).
    counted = ordered.annotate(total=Window(Count("test_case_id")))
    rows = list(counted if keep is None else counted[:keep])
    total = rows[0]["total"] if rows else 0
    return [
        _delta(
            row["test_case_id"],
            row["name"],
            row["criterion"],
            row["base_passed"],
            row["base_score"],
            row["head_passed"],
            row["head_score"],
        )
        for row in rows
    ], total


def _delta(case_id, item_name, criterion, b_passed, b_score, h_passed, h_score) -> dict:
    return {
        "test_case_id": str(case_id),  # as text: a kept comparison (models.RunComparison) is JSON
        "criterion": criterion,
        "item_name": item_name,
        "base": {"item_name": item_name, "passed": bool(b_passed), "score": b_score},
        "head": {"item_name": item_name, "passed": bool(h_passed), "score": h_score},
        "delta": h_score - b_score,
    }
