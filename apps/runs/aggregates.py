"""A run's figures over its finished results, summed in the database and kept: the digest.

The run page, the comparison and the API need a few hundred numbers from a run's results (how many
passed, were unassessed, of which type and priority; its criterion and rule verdicts by kind,
severity, scope and status; the tags its items carry; its distinct judges), while the verdict JSON
they come from is several kilobytes per result: a few hundred megabytes at 100,000 results. A
RunDigest is those numbers. On PostgreSQL two GROUP BY queries sum them where the JSON lives (only
the groups travel); elsewhere (SQLite, the embedded default) the rows are streamed through the same
Verdict logic, which is also the reference the PostgreSQL queries are tested against.

Reading that JSON is the expensive part (PostgreSQL detoasts every row: about a second per verdict
column per 100,000 results), so digests are kept in Django's cache. Results are written once, when
they finish (services._record), and reviews never change the judge's verdicts, so:
- a finished run's digest never changes: it is computed once per cache (per process with the
  default local-memory cache) and keyed by the run's status and completed count, which a late
  result would move;
- a run in progress keeps the digest of its results finished before a watermark (LIVE_OVERLAP
  behind the clock, because a result stamped just before may commit later) and each read sums only
  what finished since, so polling a large run never re-reads what it has read.
Figures that depend on human reviews are computed from the reviews on every read (selectors).
"""

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.core.cache import cache
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from .judging.aggregate import (UNASSESSED, weighted_component_scores, weighted_coverage,
                                weighted_verdict_counts)
from .judging.fingerprint import JUDGE_KEYS, distinct_judges, judge_part
from .judging.types import CRITERION, RULE, Verdict
from .models import EvaluationResult, EvaluationRun

# A result stamped finished this long ago may still be committing (services._record stamps, then
# writes the run's counters, then commits); what finished later is read again on the next poll.
LIVE_OVERLAP = timedelta(seconds=10)
CACHE_SECONDS = 24 * 3600
CACHE_PREFIX = "evalsite:runs:digest"


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
        total = RunDigest(rows=self.rows + other.rows, tags=self.tags | other.tags,
                          verdicts={key: list(value) for key, value in self.verdicts.items()},
                          judges={**other.judges, **self.judges}, newest=self.newest)
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

    def results_matching(self, *, passed: bool | None = None, outcome: str | None = None,
                         item_type: str | None = None, priority: str | None = None) -> int:
        """How many finished results the run page's filters on these columns leave."""
        return sum(n for (row_type, row_priority, row_passed, row_outcome), n in self.rows.items()
                   if (passed is None or row_passed is passed) and (outcome is None or row_outcome == outcome)
                   and (not item_type or row_type == item_type) and (not priority or row_priority == priority))

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
            if verdict.kind != RULE or verdict.status != "ok":
                continue
            # The name and severity most of its verdicts carry (one rubric version: all of them).
            entry = rules.setdefault(verdict.key, {"name": verdict.rule_name, "severity": verdict.severity,
                                                   "passed": 0, "total": 0, "score_sum": 0.0})
            entry["total"] += n
            entry["passed"] += bool(verdict.passed) * n
            entry["score_sum"] += score_sum
        return rules

    def filter_choices(self) -> dict[str, list[str]]:
        return {"tags": sorted(self.tags),
                "priorities": sorted({priority for _, priority, _, _ in self.rows if priority}),
                "item_types": sorted({item_type for item_type, _, _, _ in self.rows})}


def _verdict_key(kind: str, rule_id, rule_name, severity, scope, status, passed) -> tuple:
    """What tells verdicts apart for the figures; a criterion's text does not (one per item)."""
    if kind == CRITERION:
        return (CRITERION, "", "", None, None, status, passed)
    return (RULE, rule_id or "", rule_name or "", severity, scope, status, passed)


def _verdict(key: tuple) -> Verdict:
    kind, rule_id, rule_name, severity, scope, status, passed = key
    return Verdict(passed=passed, score=None, reasoning="", judge="", status=status, kind=kind, key=rule_id,
                   rule_name=rule_name, severity=severity, component_scope=scope)


# --- computing ---------------------------------------------------------------------------------

def digest_from_rows(rows, split_at: datetime | None = None) -> dict[tuple[int, bool], RunDigest]:
    """Digests from (run pk, finished_at, item_type, item, passed, outcome, criteria_scores,
    rubric_scores) rows through the Verdict logic the engine and pages use (the reference for the
    SQL below), per (run pk, settles): whether the result finished at or before `split_at`."""
    digests: dict[tuple[int, bool], RunDigest] = {}
    for run_pk, finished_at, item_type, item, passed, outcome, criteria, rules in rows:
        settles = finished_at is not None and split_at is not None and finished_at <= split_at
        digest = digests.setdefault((run_pk, settles), RunDigest())
        item = item if isinstance(item, dict) else {}
        digest.rows[(item_type, item.get("priority") or "", passed, outcome)] += 1
        tags = item.get("tags")
        if isinstance(tags, list):
            digest.tags.update(tag for tag in tags if isinstance(tag, str))
        digest.saw_finish(finished_at)
        for verdict in Verdict.list_from_json(criteria, kind=CRITERION) + Verdict.list_from_json(rules, kind=RULE):
            key = _verdict_key(verdict.kind, verdict.key, verdict.rule_name, verdict.severity,
                               verdict.component_scope, verdict.status, verdict.passed)
            score = verdict.score if isinstance(verdict.score, int | float) and not isinstance(verdict.score, bool) else 0
            digest.add_verdicts(key, 1, float(score))
            digest.add_judge(verdict.fingerprint)
    return digests


# {settles}: whether a row finished at or before the split (a boolean expression); {window}: which
# rows are read. Only the groups leave the database.
_ROWS_SQL = """
SELECT run_id, {settles}, item_type, item->>'priority', passed, outcome, (item->'tags')::text, COUNT(*),
       MAX(finished_at)
FROM {table} WHERE run_id = ANY(%s) AND state = 'done' AND ({window})
GROUP BY 1, 2, 3, 4, 5, 6, 7
"""

_JUDGE_COLUMNS = ", ".join(f"(v.e->'fingerprint'->'{key}')::text" for key in JUDGE_KEYS)
_VERDICTS_SQL = f"""
SELECT r.run_id, {{settles}}, v.kind, v.e->>'rule_id', v.e->>'rule_name', v.e->>'severity',
       v.e->>'component_scope', (v.e->'status')::text, (v.e->'passed')::text, {_JUDGE_COLUMNS}, COUNT(*),
       SUM(CASE WHEN jsonb_typeof(v.e->'score') = 'number' THEN (v.e->>'score')::float ELSE 0 END)
FROM {{table}} r CROSS JOIN LATERAL (
    SELECT '{CRITERION}' AS kind, e FROM jsonb_array_elements(
        CASE WHEN jsonb_typeof(r.criteria_scores) = 'array' THEN r.criteria_scores ELSE '[]'::jsonb END) e
    UNION ALL
    SELECT '{RULE}', e FROM jsonb_array_elements(
        CASE WHEN jsonb_typeof(r.rubric_scores) = 'array' THEN r.rubric_scores ELSE '[]'::jsonb END) e
) v
WHERE r.run_id = ANY(%s) AND r.state = 'done' AND ({{window}})
GROUP BY {", ".join(str(n) for n in range(1, 10 + len(JUDGE_KEYS)))}
"""


def _json_or(text: str | None, missing):
    return missing if text is None else json.loads(text)


def _slices_sql(column: str, after: datetime | None, split_at: datetime | None) -> tuple[str, list, str, list]:
    """(window, its parameters, settles, its parameters) as SQL on `column`, the finish time."""
    window, window_params = ("TRUE", []) if after is None else (f"{column} > %s OR {column} IS NULL", [after])
    settles, settles_params = ("FALSE", []) if split_at is None else (
        f"({column} IS NOT NULL AND {column} <= %s)", [split_at])
    return window, window_params, settles, settles_params


def _digests_postgresql(run_pks: list[int], after, split_at) -> dict[tuple[int, bool], RunDigest]:
    digests: dict[tuple[int, bool], RunDigest] = {}
    table = connection.ops.quote_name(EvaluationResult._meta.db_table)
    with connection.cursor() as cursor:
        window, window_params, settles, settles_params = _slices_sql("finished_at", after, split_at)
        cursor.execute(_ROWS_SQL.format(table=table, window=window, settles=settles),
                       [*settles_params, run_pks, *window_params])
        for run_pk, settled, item_type, priority, passed, outcome, tags, n, newest in cursor.fetchall():
            digest = digests.setdefault((run_pk, settled), RunDigest())
            digest.rows[(item_type, priority or "", passed, outcome)] += n
            digest.saw_finish(newest)
            tags = _json_or(tags, [])
            if isinstance(tags, list):
                digest.tags.update(tag for tag in tags if isinstance(tag, str))
        window, window_params, settles, settles_params = _slices_sql("r.finished_at", after, split_at)
        cursor.execute(_VERDICTS_SQL.format(table=table, window=window, settles=settles),
                       [*settles_params, run_pks, *window_params])
        for run_pk, settled, kind, rule_id, rule_name, severity, scope, status, passed, *rest in cursor.fetchall():
            judge, (n, score_sum) = rest[:len(JUDGE_KEYS)], rest[len(JUDGE_KEYS):]
            digest = digests.setdefault((run_pk, settled), RunDigest())
            key = _verdict_key(kind, rule_id, rule_name, severity, scope, _json_or(status, "ok"), _json_or(passed, None))
            digest.add_verdicts(key, n, score_sum or 0.0)
            digest.add_judge({k: json.loads(v) for k, v in zip(JUDGE_KEYS, judge) if v is not None})
    return digests


def compute_digests(run_pks: list[int], *, after: datetime | None = None,
                    split_at: datetime | None = None) -> dict[tuple[int, bool], RunDigest]:
    """Digests of the runs' finished results (those finished after `after`, and those without a
    finish time, when it is given), uncached, per (run pk, finished at or before `split_at`)."""
    if connection.vendor == "postgresql":
        return _digests_postgresql(run_pks, after, split_at)
    results = EvaluationResult.objects.done().filter(run__in=run_pks)
    if after is not None:
        results = results.filter(Q(finished_at__gt=after) | Q(finished_at__isnull=True))
    rows = results.order_by().values_list("run_id", "finished_at", "item_type", "item", "passed", "outcome",
                                          "criteria_scores", "rubric_scores")
    return digest_from_rows(rows.iterator(chunk_size=2000), split_at)


def _finished_key(run: EvaluationRun) -> str:
    return f"{CACHE_PREFIX}:{run.run_id}:{run.status}:{run.completed}"


def _live_digest(run: EvaluationRun) -> RunDigest:
    """A run in progress: what it kept (results finished before `since`), plus one read of those
    finished since, of which the ones older than LIVE_OVERLAP are kept in turn."""
    key = f"{CACHE_PREFIX}:{run.run_id}:live"
    watermark = timezone.now() - LIVE_OVERLAP
    since, settled = cache.get(key) or (None, RunDigest())
    parts = compute_digests([run.pk], after=since, split_at=watermark)
    settle, tail = parts.get((run.pk, True), RunDigest()), parts.get((run.pk, False), RunDigest())
    if since is not None and settled.completed + settle.completed + tail.completed < run.completed:
        # Fewer results than the engine counted when the run was read: one stamped before `since`
        # committed after it was kept (LIVE_OVERLAP was not enough). Read the run again.
        since, settled = None, RunDigest()
        parts = compute_digests([run.pk], split_at=watermark)
        settle, tail = parts.get((run.pk, True), RunDigest()), parts.get((run.pk, False), RunDigest())
    settled = settled + settle
    cache.set(key, (max(watermark, since) if since else watermark, settled), CACHE_SECONDS)
    return settled + tail


def run_digests(runs: list[EvaluationRun]) -> dict[int, RunDigest]:
    """Per run pk, the digest of its finished results: kept ones where the cache has them, the
    missing finished ones in one computation, runs in progress from what they kept plus what
    finished since."""
    digests: dict[int, RunDigest] = {}
    missing = []
    for run in runs:
        if not run.is_finished:
            digests[run.pk] = _live_digest(run)
        elif (kept := cache.get(_finished_key(run))) is not None:
            digests[run.pk] = kept
        else:
            missing.append(run)
    if missing:
        computed = compute_digests([run.pk for run in missing])
        for run in missing:
            digest = computed.get((run.pk, False), RunDigest())
            cache.set(_finished_key(run), digest, CACHE_SECONDS)
            digests[run.pk] = digest
    return digests


def run_digest(run: EvaluationRun) -> RunDigest:
    return run_digests([run])[run.pk]
