"""The console's reads across apps: the dashboard (runs and agentic evaluations), the compare
landing page and the trace list. Each is a bounded number of queries,
whatever the number of runs, results or evaluations stored."""

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone

from django.db import connection
from django.db.models import Avg, Max, Min, OuterRef, Q, Subquery, Sum
from django.db.models.functions import TruncDay, TruncHour
from django.utils import timezone

from apps.agentic.models import AgentEvaluation
from apps.agentic.selectors import evaluation_summary
from apps.bots.models import Bot
from apps.runs.models import EvaluationResult, EvaluationRun
from apps.runs.judging.aggregate import FAILED, UNASSESSED
from apps.runs.selectors import TABLE_FIELDS, first_failure, unassessed_reasons
from apps.testsets.models import Dataset, TestSet
from apps.traces.models import TRACE_QUERY_TRGM_INDEX, AgentTrace

RUNS_PER_BOT = 10
RECENT_RUNS_SCANNED = 300
TREND_DAYS = 30


def run_recent_list() -> list[EvaluationRun]:
    """The newest runs the dashboard reads, with their bot's and test set's names: one query."""
    return list(EvaluationRun.objects.with_names().newest_first()[:RECENT_RUNS_SCANNED])


def bot_recent_runs_list(*, runs: list[EvaluationRun] | None = None) -> list[dict]:
    """Per bot, its newest runs (newest first)."""
    bots: dict[str, dict] = {}
    for run in run_recent_list() if runs is None else runs:
        bot = bots.setdefault(run.agent_id, {"agent_id": run.agent_id, "name": run.bot_name_value or "(deleted bot)",
                                             "runs": []})
        if len(bot["runs"]) < RUNS_PER_BOT:
            bot["runs"].append(run)
    return list(bots.values())


def run_pass_rate_trend(*, runs: list[EvaluationRun] | None = None) -> dict[str, list]:
    """Pass rate of finished runs over time, one line per test set and bot: a pass rate only
    compares with one of the same test set, so a line never mixes test sets."""
    series: dict[tuple, dict] = {}
    for run in run_recent_list() if runs is None else runs:  # newest first: each line keeps its newest runs
        if not run.is_finished or run.pass_rate is None:
            continue
        key = (run.test_set_id or run.dataset_id, run.agent_id)
        line = series.setdefault(key, {"test_set": run.test_set_name_value or "(deleted test set)",
                                       "bot": run.bot_name_value or "(deleted bot)", "points": []})
        if len(line["points"]) < RUNS_PER_BOT:
            line["points"].append((run.created_at, run.pass_rate))
    # Named by test set; the bot is added only where one test set is run by several bots.
    bots_per_test_set = defaultdict(int)
    for test_set, _ in series:
        bots_per_test_set[test_set] += 1
    return {(line["test_set"] if bots_per_test_set[key[0]] == 1 else f"{line['test_set']} · {line['bot']}"):
            line["points"][::-1] for key, line in series.items()}


def run_filter_choices() -> dict:
    """What the run list's bot and test set dropdowns offer: every bot, test set and question set
    by name (three small queries)."""
    return {"bot_choices": list(Bot.objects.order_by("name", "agent_id").values_list("agent_id", "name")),
            "test_set_choices": list(TestSet.objects.order_by("name").values_list("test_set_id", "name")),
            "question_set_choices": list(Dataset.objects.order_by("name").values_list("dataset_id", "name"))}


def agentic_score_trend() -> dict[str, list]:
    """Average overall score per agent per day over the last TREND_DAYS days (per hour when all of
    it falls within two days, so a new installation still shows a line)."""
    since = timezone.now() - timedelta(days=TREND_DAYS)
    recent = AgentEvaluation.objects.filter(created_at__gte=since, overall_score__isnull=False)
    span = recent.aggregate(first=Min("created_at"), last=Max("created_at"))
    if span["first"] is None:
        return {}
    bucket = TruncHour("created_at") if span["last"] - span["first"] <= timedelta(days=2) else TruncDay("created_at")
    series: dict[str, list] = defaultdict(list)
    rows = (recent.annotate(bucket=bucket).values("agent_name", "bucket").annotate(score=Avg("overall_score"))
            .order_by("agent_name", "bucket"))
    for row in rows:
        series[row["agent_name"] or "(unnamed agent)"].append((row["bucket"], row["score"]))
    return dict(series)


def agentic_score_distribution() -> list[tuple[str, int]]:
    return list(evaluation_summary()["score_distribution"].items())


def result_failed_list(*, limit: int = 10) -> list[dict]:
    """The newest failed results (outcome failed: never the unassessed), each with what failed it."""
    results = _newest_results(FAILED, limit)
    for row in results:
        row["anchor"], row["reason"] = first_failure(row["criteria_scores"], row["rubric_scores"])
        row["reason"] = row["reason"] or row["error"] or ""
    return results


def result_unassessed_list(*, limit: int = 10) -> list[dict]:
    """The newest unassessed results, each with why: the verdicts the judge skipped or errored on."""
    results = _newest_results(UNASSESSED, limit)
    for row in results:
        row["reasons"] = unassessed_reasons(row["criteria_scores"], row["rubric_scores"])
        row["anchor"] = row["reasons"][0][0] if row["reasons"] else ""
    return results


def _newest_results(outcome: str, limit: int) -> list[dict]:
    # passed=False first: neither outcome passed, and the newest-by-verdict index serves it.
    results = list(EvaluationResult.objects.done().filter(passed=False, outcome=outcome)
                   .order_by("-finished_at", "-id").values(*TABLE_FIELDS, "run_id")[:limit])
    runs = {r.pk: r for r in EvaluationRun.objects.with_names().filter(pk__in={row["run_id"] for row in results})}
    for row in results:
        row["run"] = runs.get(row["run_id"])
    return results


def result_outcome_totals() -> dict[str, int]:
    """Finished results failed and unassessed over every run, summed from the runs' counters (one
    query over runs, never a scan of the results)."""
    totals = EvaluationRun.objects.aggregate(failed=Sum("failed"), unassessed=Sum("unassessed"))
    return {name: value or 0 for name, value in totals.items()}


def evaluation_poor_list(*, limit: int = 10):
    return list(AgentEvaluation.objects.filter(rating__in=("poor", "failed")).order_by("-created_at", "-id")
                .only("session_id", "agent_name", "operation", "overall_score", "rating", "judge", "created_at")[:limit])


def run_counts() -> dict:
    return EvaluationRun.objects.status_counts()


# --- the compare landing page -------------------------------------------------------------------

COMPARE_CHOICES = 100


def compare_choices(limit: int = COMPARE_CHOICES) -> list[dict]:
    """The newest runs, each with a name a reviewer recognises (bot, test set and version, time):
    what the compare landing page offers in its two selects. Two queries, whatever is stored."""
    runs = list(EvaluationRun.objects.with_bot_names().newest_first()[:limit])
    test_sets = dict(TestSet.objects.filter(pk__in={r.test_set_id for r in runs if r.test_set_id})
                     .values_list("pk", "name"))
    choices = []
    for run in runs:
        if run.test_set_id:
            items = f"{test_sets.get(run.test_set_id, '(deleted test set)')} v{run.test_set_version}"
        else:
            items = "question set"
        choices.append({"run_id": run.run_id, "label": (
            f"{run.bot_name_value or '(deleted bot)'} · {items} · {run.created_at:%Y-%m-%d %H:%M:%S} · {run.status}")})
    return choices


# --- the trace list -----------------------------------------------------------------------------

TRACES_PER_PAGE = 50
# Without a trigram index the query text is searched in this many newest traces only, so a search
# costs the same at a thousand traces as at a million (session ids and agent names are exact or
# prefix matches on their indexes, at any depth).
TRACE_TEXT_SEARCH_WINDOW = 20_000
# Trigram indexes cannot serve shorter needles; those search session ids and agent names only.
TRIGRAM_MIN_LENGTH = 3
MAX_AGENT_CHOICES = 200
UNRATED = "unrated"

_AGENT_NAMES_SQL = """
WITH RECURSIVE agents(name, n) AS (
    SELECT MIN(agent_name), 1 FROM {table}
    UNION ALL
    SELECT (SELECT MIN(agent_name) FROM {table} WHERE agent_name > agents.name), n + 1
    FROM agents WHERE agents.name IS NOT NULL AND n < %s
)
SELECT name FROM agents WHERE name IS NOT NULL
"""
_trigram_index: dict[str, bool] = {}


def trace_agent_names(limit: int = MAX_AGENT_CHOICES) -> list[str]:
    """The distinct agent names of all traces, at most `limit`: one index probe per name (a loose
    index scan written as a recursive query), where SELECT DISTINCT would read every trace."""
    with connection.cursor() as cursor:
        cursor.execute(_AGENT_NAMES_SQL.format(table=AgentTrace._meta.db_table), [limit])
        return [row[0] for row in cursor.fetchall()]


def trace_text_search_indexed() -> bool:
    """Whether the query text has the trigram index of migration traces.0004 (PostgreSQL with
    pg_trgm); asked once per process and database."""
    alias = connection.alias
    if alias not in _trigram_index:
        found = False
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [TRACE_QUERY_TRGM_INDEX])
                found = cursor.fetchone() is not None
        _trigram_index[alias] = found
    return _trigram_index[alias]


@dataclass(frozen=True)
class TraceCursor:
    """A position in the newest-first order: (start_time, id) of a trace."""

    start_time: datetime
    pk: int

    def encode(self) -> str:
        return f"{self.start_time.isoformat()}_{self.pk}"

    @classmethod
    def decode(cls, value: str) -> "TraceCursor | None":
        stamp, _, pk = (value or "").rpartition("_")
        try:
            moment = datetime.fromisoformat(stamp)
            return cls(moment if timezone.is_aware(moment) else timezone.make_aware(moment, dt_timezone.utc), int(pk))
        except ValueError:
            return None


@dataclass
class TracePage:
    traces: list
    newer: TraceCursor | None  # the cursor of the page before (None on the first page)
    older: TraceCursor | None  # the cursor of the page after (None on the last page)
    text_search: str  # "trigram", "window" or "" (no text search made)


def _search(q: str) -> tuple[Q, str]:
    matched = Q(session_id=q) | Q(session_id__startswith=q) | Q(agent_name=q)
    if len(q) < TRIGRAM_MIN_LENGTH:
        return matched, ""
    if trace_text_search_indexed():
        return matched | Q(user_query__icontains=q), "trigram"
    window = AgentTrace.objects.order_by("-start_time", "-id").values("pk")[:TRACE_TEXT_SEARCH_WINDOW]
    return matched | Q(user_query__icontains=q, pk__in=window), "window"


def trace_list_page(*, q: str = "", agent: str = "", status: str = "", rating: str = "", source: str = "",
                    date_from: date | None = None, date_to: date | None = None,
                    after: TraceCursor | None = None, before: TraceCursor | None = None,
                    per_page: int | None = None) -> TracePage:
    """One page of traces, newest first, by keyset: every page is one query reading about
    `per_page` index entries (plus what the filters skip), however deep it is and however many
    traces are stored. `rating` is the rating of the trace's latest agentic evaluation."""
    per_page = per_page or TRACES_PER_PAGE
    latest = AgentEvaluation.objects.filter(session_id=OuterRef("session_id")).order_by("-created_at", "-id")
    traces = AgentTrace.objects.annotate(
        latest_rating=Subquery(latest.values("rating")[:1]),
        latest_score=Subquery(latest.values("overall_score")[:1]),
        # What the row's "add to queue" adds: the latest evaluation, the one whose rating it shows.
        latest_evaluation_id=Subquery(latest.values("pk")[:1]),
    ).only("session_id", "agent_name", "user_query", "status", "source", "start_time", "duration_seconds",
           "tool_call_count", "success")
    text_search = ""
    if q:
        condition, text_search = _search(q)
        traces = traces.filter(condition)
    if agent:
        traces = traces.filter(agent_name=agent)
    if status:
        traces = traces.filter(status=status)
    if source:
        traces = traces.filter(source=source)
    if rating == UNRATED:
        traces = traces.filter(latest_rating__isnull=True)
    elif rating:
        traces = traces.filter(latest_rating=rating)
    if date_from:
        traces = traces.filter(start_time__gte=_day_start(date_from))
    if date_to:
        traces = traces.filter(start_time__lt=_day_start(date_to + timedelta(days=1)))
    if before is not None:
        # The page before: the oldest `per_page` traces newer than the cursor, read upwards.
        rows = list(traces.filter(Q(start_time__gt=before.start_time) |
                                  Q(start_time=before.start_time, pk__gt=before.pk),
                                  start_time__gte=before.start_time)
                    .order_by("start_time", "id")[:per_page + 1])
        more_newer = len(rows) > per_page
        rows = list(reversed(rows[:per_page]))
        return TracePage(traces=rows, newer=_cursor(rows[0]) if more_newer and rows else None,
                         older=_cursor(rows[-1]) if rows else None, text_search=text_search)
    if after is not None:
        # The redundant bound lets the index scan start at the cursor instead of filtering up to it.
        traces = traces.filter(Q(start_time__lt=after.start_time) | Q(start_time=after.start_time, pk__lt=after.pk),
                               start_time__lte=after.start_time)
    rows = list(traces.order_by("-start_time", "-id")[:per_page + 1])
    more_older = len(rows) > per_page
    rows = rows[:per_page]
    return TracePage(traces=rows, newer=_cursor(rows[0]) if after is not None and rows else None,
                     older=_cursor(rows[-1]) if more_older else None, text_search=text_search)


def _cursor(trace: AgentTrace) -> TraceCursor:
    return TraceCursor(trace.start_time, trace.pk)


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), dt_timezone.utc)
