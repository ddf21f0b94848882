"""Human review arithmetic, free of the database: which review is in force, what an item's verdict
becomes once reviewers have spoken, and how well the judge agrees with them.

A review replaces one verdict's pass/fail for the human figures; the judge's verdict stays in the
result untouched. The item's human verdict is then the contract's pass logic (apps.runs.judging.
aggregate.item_outcome) over the verdicts with the overrides applied, so a reviewer who fails a
high-severity rule fails the item, and one who passes a criterion the judge errored on can pass it.
"""

from dataclasses import dataclass

from .judging.aggregate import FAILED, PASSED, item_outcome
from .judging.types import CRITERION, RULE, Verdict


def in_force(reviews) -> dict[tuple[str, str], object]:
    """The newest review per (kind, key) of one result. `reviews` come oldest first."""
    latest = {}
    for review in reviews:
        latest[(review.kind, review.key)] = review
    return latest


def _overridden(verdict: Verdict, latest: dict) -> Verdict:
    review = latest.get((verdict.kind, verdict.key))
    return verdict if review is None else verdict.with_review(review.passed)


def apply_reviews(verdicts: list[Verdict], latest: dict) -> list[Verdict]:
    """The verdicts as the reviewers in force left them: what the human figures count."""
    return [_overridden(verdict, latest) for verdict in verdicts]


def reviewed_verdicts(criteria: list[dict] | None, rules: list[dict] | None, latest: dict) -> tuple[list, list]:
    """Each stored verdict with `review` (the one in force, or None) and `human_passed` added, for display."""
    def annotate(stored, kind):
        return [{**verdict.to_json(), "review": latest.get((kind, verdict.key)),
                 "human_passed": _overridden(verdict, latest).counts_as_passed}
                for verdict in Verdict.list_from_json(stored, kind=kind)]
    return annotate(criteria, CRITERION), annotate(rules, RULE)


def human_outcome(*, criteria: list[dict] | None, rules: list[dict] | None, latest: dict) -> str | None:
    """The item's outcome (passed, failed, unassessed) once a reviewer has spoken; None when nobody
    reviewed it, since a human verdict exists only where a person gave one.

    A partial review (some verdicts reviewed) overrides only the reviewed verdicts; every other one
    keeps the judge's verdict, and the contract's pass logic runs over the lot. So an item whose
    unreviewed high-severity rule the judge skipped stays unassessed until a reviewer judges that
    rule, and an item a reviewer passed one criterion of still fails on a rule the judge failed.
    V1 items (no criteria or rules to review) never have a human outcome. Takes the stored columns."""
    if not latest or criteria is None:
        return None
    reviewed_criteria = [_overridden(c, latest) for c in Verdict.list_from_json(criteria, kind=CRITERION)]
    reviewed_rules = None if rules is None else [_overridden(r, latest)
                                                 for r in Verdict.list_from_json(rules, kind=RULE)]
    return item_outcome(reviewed_criteria, reviewed_rules).outcome


def human_passed(*, criteria: list[dict] | None, rules: list[dict] | None, latest: dict) -> bool | None:
    """human_outcome as the API's boolean: True passed, False failed, None not reviewed or still
    unassessed after the review (the judge's verdict is never shown as a human one)."""
    return {PASSED: True, FAILED: False}.get(human_outcome(criteria=criteria, rules=rules, latest=latest))


def cohen_kappa(judge: list[bool], human: list[bool]) -> float | None:
    """Cohen's kappa of two raters on binary verdicts; None where it is undefined (no pairs, or
    both raters put every verdict in one and the same class, so chance agreement is 1)."""
    n = len(judge)
    if n == 0:
        return None
    observed = sum(j == h for j, h in zip(judge, human)) / n
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


def agreement_table(reviews, labels: dict[tuple[str, str], str] | None = None) -> list[Agreement]:
    """Per verdict (kind, key): counts and Cohen's kappa between the judge and the review in force
    on each result. `reviews` are oldest first; only the newest per (result, kind, key) counts."""
    latest = {}
    for review in reviews:
        latest[(review.result_id, review.kind, review.key)] = review
    rows: dict[tuple[str, str], Agreement] = {}
    pairs: dict[tuple[str, str], tuple[list, list]] = {}
    for (_, kind, key), review in latest.items():
        row = rows.setdefault((kind, key), Agreement(kind=kind, key=key, label=(labels or {}).get((kind, key), key)))
        if review.judge_status != "ok" or review.judge_passed is None:
            row.judge_unassessed += 1
            continue
        row.reviewed += 1
        row.agreed += review.judge_passed == review.passed
        row.judge_pass_human_fail += review.judge_passed and not review.passed
        row.judge_fail_human_pass += review.passed and not review.judge_passed
        judge, human = pairs.setdefault((kind, key), ([], []))
        judge.append(review.judge_passed)
        human.append(review.passed)
    for key, row in rows.items():
        row.kappa = cohen_kappa(*pairs.get(key, ([], [])))
    # The rules the judge gets wrong most often first: that is what a rubric author came to see.
    return sorted(rows.values(), key=lambda r: (r.kind, -(r.judge_pass_human_fail + r.judge_fail_human_pass), r.key))
