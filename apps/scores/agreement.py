"""How well a judge agrees with the people who reviewed it: per (kind, key), over the human score in
force on each subject and the judge's score of the same subject and key. One query for any kind of
subject: run verdicts, agentic metrics and RAG metrics are all Score rows."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

from .models import Score
from .selectors import human_in_force
from .vocabulary import JudgeStatus

# One judge_human_pairs row: (kind, key, human passed, human value, judge status, judge passed, judge value).
PairRow = tuple[str, str, bool | None, float | None, str | None, bool | None, float | None]


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


@dataclass
class Agreement:
    kind: str
    key: str
    label: str
    reviewed: int = 0  # verdicts the judge gave and a reviewer reviewed
    agreed: int = 0
    judge_pass_human_fail: int = 0
    judge_fail_human_pass: int = 0
    judge_unassessed: int = 0  # the judge errored or skipped; reviewed, but nothing to agree with
    kappa: float | None = None

    @property
    def agreement_rate(self) -> float | None:
        return self.agreed / self.reviewed if self.reviewed else None


def _passed(passed: bool | None, value: float | None, threshold: float | None) -> bool | None:
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
    return humans.annotate(
        judge_status=Subquery(judge.values("status")[:1]),
        judge_passed=Subquery(judge.values("passed")[:1]),
        judge_value=Subquery(judge.values("value")[:1]),
    ).values_list("kind", "key", "passed", "value", "judge_status", "judge_passed", "judge_value")


def agreement_table(
    pairs: Iterable[PairRow], *, threshold: float | None = None, labels: dict[tuple[str, str], str] | None = None
) -> list[Agreement]:
    """Counts and Cohen's kappa per (kind, key) over judge_human_pairs rows. The rules the judge gets
    wrong most often first: that is what a rubric author came to see."""
    rows: dict[tuple[str, str], Agreement] = {}
    raters: dict[tuple[str, str], tuple[list[bool], list[bool]]] = {}
    for kind, key, h_passed, h_value, j_status, j_passed, j_value in pairs:
        row = rows.setdefault((kind, key), Agreement(kind=kind, key=key, label=(labels or {}).get((kind, key), key)))
        judge = _passed(j_passed, j_value, threshold)
        human = _passed(h_passed, h_value, threshold)
        if j_status != JudgeStatus.OK or judge is None or human is None:
            row.judge_unassessed += 1
            continue
        row.reviewed += 1
        row.agreed += judge == human
        row.judge_pass_human_fail += judge and not human
        row.judge_fail_human_pass += human and not judge
        judges, humans = raters.setdefault((kind, key), ([], []))
        judges.append(judge)
        humans.append(human)
    for pair, row in rows.items():
        row.kappa = cohen_kappa(*raters.get(pair, ([], [])))
    return sorted(rows.values(), key=lambda r: (r.kind, -(r.judge_pass_human_fail + r.judge_fail_human_pass), r.key))
