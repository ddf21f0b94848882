"""Human review arithmetic, free of the database: which review is in force and what an item's verdict
becomes once reviewers have spoken. A review is a human Score row (kind, key, passed); how well the
judge agrees with reviewers is apps.scores.agreement, one query for every kind of subject.

A review replaces one verdict's pass/fail for the human figures; the judge's verdict stays in the
result untouched. The item's human verdict is then the contract's pass logic (apps.runs.judging.
aggregate.item_outcome) over the verdicts with the overrides applied, so a reviewer who fails a
high-severity rule fails the item, and one who passes a criterion the judge errored on can pass it.
"""

import uuid
from dataclasses import dataclass
from datetime import datetime

from apps.scores.vocabulary import JudgeStatus

from .judging.aggregate import FAILED, PASSED, item_outcome
from .judging.types import CRITERION, RULE, Verdict


@dataclass(frozen=True)
class Review:
    """A reviewer's verdict on one criterion or rule of a result, as pages and the API show it: the
    human Score row, beside the judge's verdict it overrides (the machine row of the same result,
    kind and key, read with it: a review keeps no copy of it)."""

    review_id: uuid.UUID
    kind: str
    key: str
    passed: bool
    note: str
    reviewer: object  # the user, or None
    reviewer_name: str
    created_at: datetime
    judge_passed: bool | None  # None where the judge errored or skipped
    judge_status: str
    judge: str

    @classmethod
    def of(cls, score, judged) -> "Review":
        """From a human Score and the judge's Score of the same verdict (None if there is none)."""
        detail = score.detail or {}
        review_id = detail.get("review_id")
        status = judged.status if judged is not None else JudgeStatus.OK.value
        # A human score written without the API's id (by another app) is named by its row.
        return cls(
            review_id=uuid.UUID(review_id) if review_id else uuid.UUID(int=score.pk),
            kind=score.kind,
            key=score.key,
            passed=bool(score.passed),
            note=score.reasoning,
            reviewer=score.author,
            reviewer_name=detail.get("reviewer_name", ""),
            created_at=score.created_at,
            judge_passed=bool(judged.passed) if judged is not None and status == JudgeStatus.OK else None,
            judge_status=status,
            judge=judged.judge if judged is not None else "",
        )


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
        return [
            {
                **verdict.to_json(),
                "review": latest.get((kind, verdict.key)),
                "human_passed": _overridden(verdict, latest).counts_as_passed,
            }
            for verdict in Verdict.list_from_json(stored, kind=kind)
        ]

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
    return human_outcome_of(
        criteria=Verdict.list_from_json(criteria, kind=CRITERION),
        rules=None if rules is None else Verdict.list_from_json(rules, kind=RULE),
        latest=latest,
    )


def human_outcome_of(*, criteria: list[Verdict] | None, rules: list[Verdict] | None, latest: dict) -> str | None:
    """human_outcome of verdicts already read (the results table reads them from their rows)."""
    if not latest or criteria is None:
        return None
    reviewed_rules = None if rules is None else apply_reviews(rules, latest)
    return item_outcome(apply_reviews(criteria, latest), reviewed_rules).outcome


def human_passed(*, criteria: list[dict] | None, rules: list[dict] | None, latest: dict) -> bool | None:
    """human_outcome as the API's boolean: True passed, False failed, None not reviewed or still
    unassessed after the review (the judge's verdict is never shown as a human one)."""
    return {PASSED: True, FAILED: False}.get(human_outcome(criteria=criteria, rules=rules, latest=latest))
