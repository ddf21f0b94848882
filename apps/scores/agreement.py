"""How well a judge agrees with the people who reviewed it: per (kind, key), over the human score in
force on each subject and the judge's score of the same subject and key. One query for any kind of
subject: run verdicts, agentic metrics and RAG metrics are all Score rows."""

import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

from .models import Score
from .selectors import human_in_force
from .vocabulary import JudgeStatus

# One judge_human_pairs row: (kind, key, human passed, human value, judge status, judge passed, judge
# value, subject id).
PairRow = tuple[str, str, bool | None, float | None, str | None, bool | None, float | None, int]
# The 95% normal quantile; the disagreeing subjects an entry lists at most.
Z95 = 1.959964
MAX_DISAGREEMENTS = 100


def cohen_kappa(judge: list[bool], human: list[bool]) -> float | None:
    """Cohen's kappa of two raters on binary verdicts; None where it is undefined (no pairs, or
    both raters put every verdict in one and the same class, so chance agreement is 1)."""
    n = len(judge)
    if n == 0:
        return None
    observed = sum(j == h for j, h in zip(judge, human, strict=True)) / n
    judge_yes, human_yes = sum(judge) / n, sum(human) / n
    chance = judge_yes * human_yes + (1 - judge_yes) * (1 - human_yes)
    if chance >= 1:
        return None
    return round((observed - chance) / (1 - chance), 4)


def _wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (sound at 0 and n successes, where the normal one
    collapses to a point)."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def kappa_interval(judge: list[bool], human: list[bool]) -> tuple[float, float] | None:
    """A 95% interval for Cohen's kappa: the Wilson interval of the observed agreement carried
    through kappa's formula, with the chance agreement as observed (as Cohen's own standard error
    takes it). Unlike kappa +- 1.96 SE it does not shrink to a point when every pair agrees: three
    pairs that agree (two passes, one fail) give [-0.26, 1], not [1, 1]; 80 pairs at kappa 0.75 give
    [0.57, 0.86]. None where kappa is undefined."""
    n = len(judge)
    if n == 0:
        return None
    judge_yes, human_yes = sum(judge) / n, sum(human) / n
    chance = judge_yes * human_yes + (1 - judge_yes) * (1 - human_yes)
    if chance >= 1:
        return None
    low, high = _wilson(sum(j == h for j, h in zip(judge, human, strict=True)), n)
    return (
        round(max(-1.0, (low - chance) / (1 - chance)), 4),
        round(min(1.0, (high - chance) / (1 - chance)), 4),
    )


@dataclass
class Agreement:
    kind: str
    key: str
    label: str
    reviewed: int = 0  # verdicts the judge gave and a reviewer reviewed: n of kappa and agreement
    agreed: int = 0
    judge_pass_human_fail: int = 0
    judge_fail_human_pass: int = 0
    both_pass: int = 0
    both_fail: int = 0
    judge_unassessed: int = 0  # the judge errored or skipped; reviewed, but nothing to agree with
    kappa: float | None = None
    kappa_ci: tuple[float, float] | None = None
    # The subjects (ids) where judge and human disagree, at most MAX_DISAGREEMENTS, newest review first.
    disagreements: list[int] = field(default_factory=list)

    @property
    def agreement_rate(self) -> float | None:
        return self.agreed / self.reviewed if self.reviewed else None

    @property
    def confusion(self) -> dict[str, dict[str, int]]:
        """Judge's verdict (rows) against the human's (columns), over the `reviewed` pairs."""
        return {
            "judge_pass": {"human_pass": self.both_pass, "human_fail": self.judge_pass_human_fail},
            "judge_fail": {"human_pass": self.judge_fail_human_pass, "human_fail": self.both_fail},
        }


def passed_at(passed: bool | None, value: float | None, threshold: float | None) -> bool | None:
    """A verdict as pass/fail: its own `passed`, else its value cut at `threshold` (agentic metrics
    are scores 0..1)."""
    if passed is not None:
        return passed
    if value is None or threshold is None:
        return None
    return value >= threshold


def judge_human_pairs(
    subject_kind: str,
    subject_ids: Iterable[int] | QuerySet[Any, Any] | None = None,
    *,
    kinds: Iterable[str] | None = None,
) -> QuerySet[Score, PairRow]:
    """(kind, key, human passed, human value, judge status, judge passed, judge value) per human
    score in force: the judge's score is the newest machine score of the same subject and key."""
    humans = human_in_force(subject_kind, subject_ids)
    if kinds:
        humans = humans.filter(kind__in=kinds)
    judge = (
        Score.objects.machine()
        .filter(
            subject_kind=OuterRef("subject_kind"),
            subject_id=OuterRef("subject_id"),
            kind=OuterRef("kind"),
            key=OuterRef("key"),
        )
        .order_by("-created_at", "-id")
    )
    return (
        humans.annotate(
            judge_status=Subquery(judge.values("status")[:1]),
            judge_passed=Subquery(judge.values("passed")[:1]),
            judge_value=Subquery(judge.values("value")[:1]),
        )
        .order_by("-created_at", "-id")
        .values_list("kind", "key", "passed", "value", "judge_status", "judge_passed", "judge_value", "subject_id")
    )


def agreement_table(
    pairs: Iterable[PairRow], *, threshold: float | None = None, labels: dict[tuple[str, str], str] | None = None
) -> list[Agreement]:
    """Counts and Cohen's kappa per (kind, key) over judge_human_pairs rows. The rules the judge gets
    wrong most often first: that is what a rubric author came to see."""
    rows: dict[tuple[str, str], Agreement] = {}
    raters: dict[tuple[str, str], tuple[list[bool], list[bool]]] = {}
    for kind, key, h_passed, h_value, j_status, j_passed, j_value, subject_id in pairs:
        row = rows.setdefault((kind, key), Agreement(kind=kind, key=key, label=(labels or {}).get((kind, key), key)))
        judge = passed_at(j_passed, j_value, threshold)
        human = passed_at(h_passed, h_value, threshold)
        if j_status != JudgeStatus.OK or judge is None or human is None:
            row.judge_unassessed += 1
            continue
        row.reviewed += 1
        row.agreed += judge == human
        row.judge_pass_human_fail += judge and not human
        row.judge_fail_human_pass += human and not judge
        row.both_pass += judge and human
        row.both_fail += not judge and not human
        if judge != human and len(row.disagreements) < MAX_DISAGREEMENTS:
            row.disagreements.append(subject_id)
        judges, humans = raters.setdefault((kind, key), ([], []))
        judges.append(judge)
        humans.append(human)
    for pair, row in rows.items():
        row.kappa = cohen_kappa(*raters.get(pair, ([], [])))
        row.kappa_ci = kappa_interval(*raters.get(pair, ([], [])))
    return sorted(rows.values(), key=lambda r: (r.kind, -(r.judge_pass_human_fail + r.judge_fail_human_pass), r.key))


def agreement_entry(row: Agreement, links: dict[int, dict], *, judge: str | None = None) -> dict:
    """An AgreementOut of `row`; `links` turns a disagreeing subject's id into its DisagreementOut
    (`id`, `url`, and `session_id` where there is one)."""
    return {
        "key": row.key,
        "kind": row.kind,
        "judge": judge,
        "n": row.reviewed,
        "kappa": row.kappa,
        "kappa_ci": row.kappa_ci,
        "agreement": None if row.agreement_rate is None else round(row.agreement_rate, 4),
        "confusion": row.confusion,
        "judge_unassessed": row.judge_unassessed,
        "disagreements": [links[s] for s in row.disagreements if s in links],
    }


# Resamples of the paired bootstrap (kappa_difference_interval): enough for a stable 2.5th percentile
# at the sizes a trial has (tens to hundreds of items), in well under a second.
BOOTSTRAP_RESAMPLES = 2000


def kappa_difference_interval(
    human: list[bool], before: list[bool], after: list[bool], *, seed: int, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float] | None:
    """A 95% interval for kappa(after, human) - kappa(before, human) over the same items: the paired
    percentile bootstrap (items resampled with replacement, both judges' kappas on each resample),
    so the items both judges found hard or easy cancel out, which two separate intervals would not.
    `seed` makes it reproducible (a trial answers the same interval every time it is read). None
    when fewer than half the resamples give both kappas (one class only, too few items)."""
    n = len(human)
    if n == 0:
        return None
    rng = random.Random(seed)
    differences = []
    for _ in range(resamples):
        picks = [rng.randrange(n) for _ in range(n)]
        humans = [human[i] for i in picks]
        base = cohen_kappa([before[i] for i in picks], humans)
        head = cohen_kappa([after[i] for i in picks], humans)
        if base is not None and head is not None:
            differences.append(head - base)
    if len(differences) < resamples / 2:
        return None
    differences.sort()
    low = differences[int(0.025 * (len(differences) - 1))]
    high = differences[int(math.ceil(0.975 * (len(differences) - 1)))]
    return round(low, 4), round(high, 4)
