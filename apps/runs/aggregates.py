"""A run's figures over its finished results, summed in the database: the digest.

The run page, the comparison and the API need a few hundred numbers from a run's results (how many
passed, were unassessed, of which type and priority; its criterion and rule verdicts by kind,
severity, scope and status; the tags its items carry; its distinct judges). A RunDigest is those
numbers, from two GROUP BY queries written with the ORM, so they run unchanged on SQLite and
PostgreSQL: one over the run's results, one over its verdicts' Score rows (read by the
score_parent_key index, without touching the results).

A finished run never changes, so its digest is computed once, when it finishes (services._finalize),
and stored on the run (EvaluationRun.digest): the first view of a finished run in a fresh process
reads one row. A run still in progress is summed on each read. Figures that depend on human
reviews are computed from the reviews on every read (selectors).
"""

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Count,
    F,
    FloatField,
    Func,
    Max,
    Q,
    Sum,
    TextField,
    Value,
    When,
)
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Coalesce
from django.utils.dateparse import parse_datetime

from apps.scores.models import Score
from apps.scores.vocabulary import JudgeStatus, SubjectKind

from .judging.aggregate import UNASSESSED, weighted_component_scores, weighted_coverage, weighted_verdict_counts
from .judging.fingerprint import JUDGE_KEYS, distinct_judges, judge_part
from .judging.types import CRITERION, RULE, Verdict
from .models import EvaluationResult, EvaluationRun

# A result stamped finished this long ago may still be committing (services._record stamps, then
# writes the run's counters, then commits): a live page asks again for what finished this long
# before what it has seen.
LIVE_OVERLAP = timedelta(seconds=10)


@dataclass
class RunDigest:
    """Sums over a run's finished results; adding two digests of disjoint results sums them."""

    # (item_type, priority, passed, outcome) -> results
    rows: Counter = field(default_factory=Counter)
    tags: set = field(default_factory=set)
    # (kind, rule_id, rule_name, severity, component_scope, status, passed) -> [verdicts, sum of scores]
    verdicts: dict = field(default_factory=dict)
    # the distinct judges (fingerprint.judge_part), by the key distinct_judges tells them apart with
    judges: dict = field(default_factory=dict)
    # the latest finish time: what a page that was given these results has seen (its live cursor)
    newest: datetime | None = None

    def __add__(self, other: "RunDigest") -> "RunDigest":
        total = RunDigest(
            rows=self.rows + other.rows,
            tags=self.tags | other.tags,
            verdicts={key: list(value) for key, value in self.verdicts.items()},
            judges={**other.judges, **self.judges},
            newest=self.newest,
        )
        total.saw_finish(other.newest)
        for key, (n, score_sum) in other.verdicts.items():
            total.add_verdicts(key, n, score_sum)
        return total

    def add_verdicts(self, key: tuple, n: int, score_sum: float) -> None:
        entry = self.verdicts.setdefault(key, [0, 0.0])
        entry[0] += n
        entry[1] += score_sum

    def saw_finish(self, finished_at: datetime | None) -> None:
        if finished_at is not None and (self.newest is None or finished_at > self.newest):
            self.newest = finished_at

    def add_judge(self, fingerprint: dict | None) -> None:
        if fingerprint:
            part = judge_part(fingerprint)
            self.judges.setdefault(tuple(sorted((k, str(v)) for k, v in part.items())), part)

    # --- stored on a finished run (EvaluationRun.digest) -----------------------------------------

    def to_json(self) -> dict:
        return {
            "rows": [[*key, n] for key, n in self.rows.items()],
            "tags": sorted(self.tags),
            "verdicts": [[*key, n, score_sum] for key, (n, score_sum) in self.verdicts.items()],
            "judges": list(self.judges.values()),
            "newest": self.newest.isoformat() if self.newest else None,
        }

    @classmethod
    def from_json(cls, data: dict) -> "RunDigest":
        digest = cls(
            rows=Counter({tuple(row[:4]): row[4] for row in data["rows"]}),
            tags=set(data["tags"]),
            verdicts={tuple(v[:7]): [v[7], v[8]] for v in data["verdicts"]},
            newest=parse_datetime(data["newest"]) if data.get("newest") else None,
        )
        for part in data["judges"]:
            digest.add_judge(part)
        return digest

    # --- what the pages read ---------------------------------------------------------------------

    def counted(self, kind: str | None = None):
        """(Verdict, how many alike) pairs of one kind (CRITERION or RULE), or of both."""
        for key, (n, _) in self.verdicts.items():
            if kind is None or key[0] == kind:
                yield _verdict(key), n

    @property
    def completed(self) -> int:
        return sum(self.rows.values())

    @property
    def judge_passed(self) -> int:
        return sum(n for (_, _, passed, _), n in self.rows.items() if passed)

    @property
    def unassessed(self) -> int:
        return sum(n for (_, _, _, outcome), n in self.rows.items() if outcome == UNASSESSED)

    def results_matching(
        self,
        *,
        passed: bool | None = None,
        outcome: str | None = None,
        item_type: str | None = None,
        priority: str | None = None,
    ) -> int:
        """How many finished results the run page's filters on these columns leave."""
        return sum(
            n
            for (row_type, row_priority, row_passed, row_outcome), n in self.rows.items()
            if (passed is None or row_passed is passed)
            and (outcome is None or row_outcome == outcome)
            and (not item_type or row_type == item_type)
            and (not priority or row_priority == priority)
        )

    def verdict_counts(self, kind: str) -> dict[str, int]:
        return weighted_verdict_counts(self.counted(kind))

    def coverage(self) -> dict[str, int]:
        return weighted_coverage(self.counted())

    def component_scores(self) -> dict:
        return weighted_component_scores(self.counted(RULE))

    def judge_fingerprints(self) -> list[dict]:
        return distinct_judges(self.judges.values())

    def rule_pass_counts(self) -> dict[str, dict]:
        """Per rule id, the verdicts the judge gave (status ok): name, severity, passed, total, score_sum."""
        rules: dict[str, dict] = {}
        for key, (n, score_sum) in sorted(self.verdicts.items(), key=lambda kv: -kv[1][0]):
            verdict = _verdict(key)
            if verdict.kind != RULE or verdict.status != JudgeStatus.OK:
                continue
            # The name and severity most of its verdicts carry (one rubric version: all of them).
            entry = rules.setdefault(
                verdict.key,
                {"name": verdict.rule_name, "severity": verdict.severity, "passed": 0, "total": 0, "score_sum": 0.0},
            )
            entry["total"] += n
            entry["passed"] += bool(verdict.passed) * n
            entry["score_sum"] += score_sum
        return rules

    def filter_choices(self) -> dict[str, list[str]]:
        return {
            "tags": sorted(self.tags),
            "priorities": sorted({priority for _, priority, _, _ in self.rows if priority}),
            "item_types": sorted({item_type for item_type, _, _, _ in self.rows}),
        }


def _verdict_key(kind: str, rule_id, rule_name, severity, scope, status, passed) -> tuple:
    """What tells verdicts apart for the figures; a criterion's text does not (one per item)."""
    if kind == CRITERION:
        return (CRITERION, "", "", None, None, status, passed)
    return (RULE, rule_id or "", rule_name or "", severity or None, scope or None, status, passed)


def _verdict(key: tuple) -> Verdict:
    kind, rule_id, rule_name, severity, scope, status, passed = key
    return Verdict.bare(
        kind=kind,
        key=rule_id,
        status=status,
        passed=passed,
        rule_name=rule_name,
        severity=severity,
        component_scope=scope,
    )


# --- computing ---------------------------------------------------------------------------------


class JsonMemberText(Func):
    """A member of a JSON object column as JSON text ('"2"' for the string "2", '2' for the number),
    so a grouped value keeps its JSON type: Django's KeyTransform reads a string member back as a
    number on SQLite, and a fingerprint's string "2" must not become 2. `->` means the same on both
    databases (SQLite 3.38+); PostgreSQL's jsonb answer is cast to text."""

    output_field = TextField()

    def __init__(self, column: str, key: str):
        super().__init__(F(column), Value(key))

    def as_sql(self, compiler, connection, **extra_context):
        column, column_params = compiler.compile(self.source_expressions[0])
        return f"({column} -> %s)", [*column_params, f"$.{self.source_expressions[1].value}"]

    def as_postgresql(self, compiler, connection, **extra_context):
        column, column_params = compiler.compile(self.source_expressions[0])
        return f"(({column} -> %s)::text)", [*column_params, self.source_expressions[1].value]


def _json_or_none(text: str | None):
    return None if text is None else json.loads(text)


def _settles(column: str, split_at: datetime | None):
    """Whether a row finished at or before the split, as an expression the rows are grouped by."""
    if split_at is None:
        return Value(False, output_field=BooleanField())
    return Case(
        When(**{f"{column}__lte": split_at}, then=Value(True)), default=Value(False), output_field=BooleanField()
    )


def _add_result_groups(digests: dict, run_pks: list[int], after, split_at) -> None:
    results = EvaluationResult.objects.done().filter(run_id__in=run_pks)
    if after is not None:
        results = results.filter(Q(finished_at__gt=after) | Q(finished_at__isnull=True))
    groups = (
        results.order_by()
        .annotate(
            settles=_settles("finished_at", split_at),
            priority=KeyTextTransform("priority", "item"),
            tags=KeyTransform("tags", "item"),
        )
        .values("run_id", "settles", "item_type", "priority", "passed", "outcome", "tags")
        .annotate(n=Count("id"), newest=Max("finished_at"))
    )
    for group in groups:
        digest = digests.setdefault((group["run_id"], group["settles"]), RunDigest())
        digest.rows[(group["item_type"], group["priority"] or "", group["passed"], group["outcome"])] += group["n"]
        digest.saw_finish(group["newest"])
        tags = group["tags"]
        if isinstance(tags, list):
            digest.tags.update(tag for tag in tags if isinstance(tag, str))


def _add_verdict_groups(digests: dict, run_pks: list[int], after, split_at) -> None:
    # Score.created_at is the result's finish time (services._record stamps both alike).
    scores = (
        Score.objects.of(SubjectKind.RUN_RESULT).machine().filter(parent_id__in=run_pks, kind__in=(CRITERION, RULE))
    )
    if after is not None:
        scores = scores.filter(created_at__gt=after)
    is_rule = Q(kind=RULE)
    judges = {f"judge_{key}": JsonMemberText("fingerprint", key) for key in JUDGE_KEYS}
    groups = (
        scores.order_by()
        .annotate(
            settles=_settles("created_at", split_at),
            rule_id=Case(When(is_rule, then=F("key")), default=Value(""), output_field=CharField()),
            rule_name=Case(
                When(is_rule, then=KeyTextTransform("rule_name", "detail")), default=Value(""), output_field=CharField()
            ),
            **judges,
        )
        .values(
            "parent_id", "settles", "kind", "rule_id", "rule_name", "severity", "scope", "status", "passed", *judges
        )
        .annotate(n=Count("id"), score_sum=Sum(Coalesce("value", Value(0.0), output_field=FloatField())))
    )
    for group in groups:
        digest = digests.setdefault((group["parent_id"], group["settles"]), RunDigest())
        key = _verdict_key(
            group["kind"],
            group["rule_id"],
            group["rule_name"],
            group["severity"],
            group["scope"],
            group["status"],
            group["passed"],
        )
        digest.add_verdicts(key, group["n"], group["score_sum"] or 0.0)
        judge = {key: _json_or_none(group[f"judge_{key}"]) for key in JUDGE_KEYS}
        digest.add_judge({key: value for key, value in judge.items() if value is not None})


def compute_digests(
    run_pks: list[int], *, after: datetime | None = None, split_at: datetime | None = None
) -> dict[tuple[int, bool], RunDigest]:
    """Digests of the runs' finished results (those finished after `after`, and those without a
    finish time, when it is given), per (run pk, finished at or before `split_at`)."""
    digests: dict[tuple[int, bool], RunDigest] = {}
    _add_result_groups(digests, run_pks, after, split_at)
    _add_verdict_groups(digests, run_pks, after, split_at)
    return digests


def compute_digest(run: EvaluationRun) -> RunDigest:
    return compute_digests([run.pk]).get((run.pk, False), RunDigest())


def _stored(run: EvaluationRun) -> RunDigest | None:
    """The digest stored on a finished run, if it still counts every result (an item that was
    under way when its run was cancelled may finish after)."""
    if not run.is_finished or not run.digest:
        return None
    digest = RunDigest.from_json(run.digest)
    return digest if digest.completed == run.completed else None


def run_digests(runs: list[EvaluationRun]) -> dict[int, RunDigest]:
    """Per run pk, the digest of its finished results: the stored one of a finished run, the rest
    computed in one pass. A finished run without a stored digest (finished before digests were
    stored, or counted again since) gets one stored, so this is computed once."""
    digests: dict[int, RunDigest] = {}
    missing = []
    for run in runs:
        stored = _stored(run)
        if stored is not None:
            digests[run.pk] = stored
        else:
            missing.append(run)
    if missing:
        computed = compute_digests([run.pk for run in missing])
        for run in missing:
            digests[run.pk] = computed.get((run.pk, False), RunDigest())
            if run.is_finished:
                run.digest = digests[run.pk].to_json()
                EvaluationRun.objects.filter(pk=run.pk).update(digest=run.digest)
    return digests


def run_digest(run: EvaluationRun) -> RunDigest:
    return run_digests([run])[run.pk]
