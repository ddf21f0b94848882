"""A RAG evaluation's metrics as Score rows (subject `rag_evaluation`, kind `metric`, key = the
metric's name, position = its place among the requested tests), and back into the words seed 002 and
the history answer with.

A requested test has one of six statuses in the answers (`TestStatus`); a Score has the platform's
one JudgeStatus plus a short reason, so the six map onto (status, reason) pairs without loss. A test
that ran keeps its details object, the contract's evidence behind the score, verbatim in `detail`;
one that did not run (missing, unsupported, not run) has no score and no details, only the missing
parameter names in `detail["missing"]`."""

from dataclasses import dataclass

from django.db import models
from django.db.models import Q

from apps.scores.models import Score
from apps.scores.vocabulary import JudgeStatus, Reason, ScoreKind, ScoreSource, SubjectKind

from .payload import UNSUPPORTED

LLM_JUDGE_PREFIX = "openai:"


class TestStatus(models.TextChoices):
    """A requested test's status as GET /api/v1/trace/history's test_results and a metric's details
    name it (seed 002's words): JudgeStatus's error and skipped, "scored" for its ok, and three
    statuses of tests that never ran, stored as skipped with a reason."""

    SCORED = "scored"
    ERROR = JudgeStatus.ERROR.value
    SKIPPED = JudgeStatus.SKIPPED.value
    MISSING = "missing"
    UNSUPPORTED = "unsupported"
    NOT_RUN = "not_run", "Not run"  # complete, but another test was missing and partial mode was off


_STORED = {
    TestStatus.SCORED: (JudgeStatus.OK, Reason.NONE),
    TestStatus.ERROR: (JudgeStatus.ERROR, Reason.NONE),
    TestStatus.SKIPPED: (JudgeStatus.SKIPPED, Reason.NONE),
    TestStatus.MISSING: (JudgeStatus.SKIPPED, Reason.MISSING),
    TestStatus.UNSUPPORTED: (JudgeStatus.SKIPPED, Reason.UNSUPPORTED),
    TestStatus.NOT_RUN: (JudgeStatus.SKIPPED, Reason.NOT_RUN),
}
_WORD = {stored: word for word, stored in _STORED.items()}
# A test with one of these reasons never ran: it is in `missing` and test_results, never in
# evaluation_scores or details.
NOT_RAN = (Reason.MISSING, Reason.UNSUPPORTED, Reason.NOT_RUN)


def status_q(word: str) -> Q:
    """The Score rows of tests whose answered status is `word`."""
    status, reason = _STORED[TestStatus(word)]
    return Q(status=status, reason=reason)


def ran(score: Score) -> bool:
    return score.reason not in NOT_RAN


def source_of(judge: str) -> str:
    """An LLM judged when the judge is one ("openai:<model>"); "deterministic" is Ragas' string and
    id metrics and evalsite's lexical ones, code."""
    return ScoreSource.LLM if judge.startswith(LLM_JUDGE_PREFIX) else ScoreSource.CODE


def metric_scores(*, missing: dict, scores: dict, details: dict) -> list[Score]:
    """Unsaved Score rows for one evaluation's requested tests, in the order of `missing` (the
    requested order); the caller sets subject_id."""
    return [_score(position, name, absent, scores, details) for position, (name, absent) in enumerate(missing.items())]


def _score(position: int, name: str, absent, scores: dict, details: dict) -> Score:
    row = Score(
        subject_kind=SubjectKind.RAG_EVALUATION,
        kind=ScoreKind.METRIC,
        key=name,
        position=position,
        source=ScoreSource.CODE,
    )
    if absent:
        word = TestStatus.UNSUPPORTED if absent == [UNSUPPORTED] else TestStatus.MISSING
        row.detail = {"missing": list(absent)}
    elif name not in details:
        word = TestStatus.NOT_RUN
    else:
        evidence = details[name]
        word = TestStatus(evidence.get("status", TestStatus.SCORED))
        row.value = scores.get(name)
        row.judge = evidence.get("judge", "")
        row.source = source_of(row.judge)
        row.reasoning = evidence.get("reason", "")
        row.usage = evidence.get("usage")
        row.detail = evidence
    row.status, row.reason = _STORED[word]
    return row


@dataclass(frozen=True)
class TestResult:
    """One requested test as test_results answers it (TraceTestOut reads these attributes)."""

    name: str
    status: str
    score: float | None
    method: str
    judge: str
    missing: list[str]
    reasoning: str

    @property
    def status_label(self) -> str:
        return TestStatus(self.status).label.lower()

    @classmethod
    def of(cls, score: Score) -> "TestResult":
        detail = score.detail or {}
        return cls(
            name=score.key,
            status=_WORD.get((score.status, score.reason), score.status),
            score=score.value,
            method=detail.get("method", "") if ran(score) else "",
            judge=score.judge,
            missing=list(detail.get("missing", [])) if not ran(score) else [],
            reasoning=score.reasoning,
        )
