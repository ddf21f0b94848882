"""The console's reads across apps: the dashboard (runs and agentic evaluations), the compare
landing page and the trace list. Each is a bounded number of queries,
whatever the number of runs, results or evaluations stored."""

import json
from base64 import urlsafe_b64decode, urlsafe_b64encode
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import django_filters
from django.db.models import Avg, DateTimeField, F, FloatField, IntegerField, Max, Min, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Cast, NullIf, TruncDay, TruncHour
from django.utils import timezone

from apps.agentic.models import AgentEvaluation
from apps.agentic.selectors import evaluation_summary
from apps.bots.models import Bot
from apps.core.pricing import SpendSplit
from apps.runs.display import first_failure, unassessed_reasons
from apps.runs.judging.aggregate import FAILED, UNASSESSED
from apps.runs.models import EvaluationResult, EvaluationRun, verdict_columns
from apps.runs.selectors import TABLE_FIELDS, run_spend_per_day
from apps.testsets.models import Dataset, TestSet
from apps.traces.costs import NOTHING as NO_TRACE_SPEND
from apps.traces.costs import TraceCost
from apps.traces.filters import ANY, TraceFilter
from apps.traces.models import AgentTrace
from apps.traces.selectors import trace_filter, trace_spend_per_day

from .sorting import Sort, sort_from_param

RUNS_PER_BOT = 10
RECENT_RUNS_SCANNED = 300
TREND_DAYS = 30


def run_recent_list(*, project) -> list[EvaluationRun]:
    """The newest runs of `project` the dashboard reads, with their bot's and test set's names: one query."""
    return list(EvaluationRun.objects.filter(project=project).with_names().newest_first()[:RECENT_RUNS_SCANNED])


def bot_recent_runs_list(*, runs: list[EvaluationRun]) -> list[dict]:
    """Per bot, its newest runs (newest first) among `runs` (run_recent_list's)."""
    bots: dict[str, dict] = {}
    for run in runs:
        bot = bots.setdefault(
            run.agent_id, {"agent_id": run.agent_id, "name": run.bot_name_value or "(deleted bot)", "runs": []}
        )
        if len(bot["runs"]) < RUNS_PER_BOT:
            bot["runs"].append(run)
    return list(bots.values())


def run_pass_rate_trend(*, runs: list[EvaluationRun]) -> dict[str, list]:
    """Pass rate of finished runs over time (`runs`, run_recent_list's), one line per test set and
    bot: a pass rate only compares with one of the same test set, so a line never mixes test sets."""
    series: dict[tuple, dict] = {}
    for run in runs:  # newest first: each line keeps its newest runs
        if not run.is_finished or run.pass_rate is None:
            continue
        key = (run.test_set_id or run.dataset_id, run.agent_id)
        line = series.setdefault(
            key,
            {
                "test_set": run.test_set_name_value or "(deleted test set)",
                "bot": run.bot_name_value or "(deleted bot)",
                "points": [],
            },
        )
        if len(line["points"]) < RUNS_PER_BOT:
            line["points"].append((run.created_at, run.pass_rate))
    # Named by test set; the bot is added only where one test set is run by several bots.
    bots_per_test_set = defaultdict(int)
    for test_set, _ in series:
        bots_per_test_set[test_set] += 1
    return {
        (line["test_set"] if bots_per_test_set[key[0]] == 1 else f"{line['test_set']} · {line['bot']}"): line["points"][
            ::-1
        ]
        for key, line in series.items()
    }


def run_filter_choices(*, project) -> dict:
    """What the run list's bot and test set dropdowns offer: every bot, test set and question set of
    `project` by name (three small queries); another project's names never."""
    return {
        "bot_choices": list(
            Bot.objects.of_project(project).order_by("name", "agent_id").values_list("agent_id", "name")
        ),
        "test_set_choices": list(
            TestSet.objects.filter(project=project).order_by("name").values_list("test_set_id", "name")
        ),
        "question_set_choices": list(
            Dataset.objects.filter(project=project).order_by("name").values_list("dataset_id", "name")
        ),
    }


def agentic_score_trend(*, project) -> dict[str, list]:
    """Average overall score per agent per day over the last TREND_DAYS days (per hour when all of
    it falls within two days, so a new installation still shows a line), in `project`."""
    since = timezone.now() - timedelta(days=TREND_DAYS)
    recent = AgentEvaluation.objects.filter(project=project, created_at__gte=since, overall_score__isnull=False)
    span = recent.aggregate(first=Min("created_at"), last=Max("created_at"))
    if span["first"] is None:
        return {}
    bucket = TruncHour("created_at") if span["last"] - span["first"] <= timedelta(days=2) else TruncDay("created_at")
    series: dict[str, list] = defaultdict(list)
    rows = (
        recent.annotate(bucket=bucket)
        .values("agent_name", "bucket")
        .annotate(score=Avg("overall_score"))
        .order_by("agent_name", "bucket")
    )
    for row in rows:
        series[row["agent_name"] or "(unnamed agent)"].append((row["bucket"], row["score"]))
    return dict(series)


def agentic_score_distribution(*, project) -> list[tuple[str, int]]:
    return list(evaluation_summary(project_id=project.pk)["score_distribution"].items())


def result_failed_list(*, project, limit: int = 10) -> list[dict]:
    """The newest failed results of `project` (outcome failed: never the unassessed), each with what failed it."""
    results = _newest_results(FAILED, limit, project)
    for row in results:
        row["anchor"], row["reason"] = first_failure(row["criteria_scores"], row["rubric_scores"])
        row["reason"] = row["reason"] or row["error"] or ""
    return results


def result_unassessed_list(*, project, limit: int = 10) -> list[dict]:
    """The newest unassessed results of `project`, each with why: the verdicts the judge skipped or errored on."""
    results = _newest_results(UNASSESSED, limit, project)
    for row in results:
        row["reasons"] = unassessed_reasons(row["criteria_scores"], row["rubric_scores"])
        row["anchor"] = row["reasons"][0][0] if row["reasons"] else ""
    return results


def _newest_results(outcome: str, limit: int, project) -> list[dict]:
    # passed=False first: neither outcome passed, and the newest-by-verdict index serves it.
    results = list(
        EvaluationResult.objects.done()
        .filter(passed=False, outcome=outcome, run__project=project)
        .order_by("-finished_at", "-id")
        .values(*TABLE_FIELDS, "run_id")[:limit]
    )
    verdict_columns(results)
    runs = {r.pk: r for r in EvaluationRun.objects.with_names().filter(pk__in={row["run_id"] for row in results})}
    for row in results:
        row["run"] = runs.get(row["run_id"])
    return results


def result_outcome_totals(*, project) -> dict[str, int]:
    """Finished results failed and unassessed over every run of `project`, summed from the runs'
    counters (one query over runs, never a scan of the results)."""
    totals = EvaluationRun.objects.filter(project=project).aggregate(failed=Sum("failed"), unassessed=Sum("unassessed"))
    return {name: value or 0 for name, value in totals.items()}


def evaluation_poor_list(*, project, limit: int = 10):
    return list(
        AgentEvaluation.objects.filter(project=project, rating__in=("poor", "failed"))
        .order_by("-created_at", "-id")
        .only("session_id", "agent_name", "operation", "overall_score", "rating", "judge", "created_at")[:limit]
    )


NO_RUN_SPEND = SpendSplit(bot=None, judge=None, unpriced_calls=0)


@dataclass(frozen=True)
class DaySpend:
    """One day of a project's spend: its runs' (bot, judge: SpendSplit) and its traces' (TraceCost).
    total sums every amount and is None when nothing of the day was priced; unpriced_calls, the
    calls of both nobody could price."""

    day: date
    runs: SpendSplit = NO_RUN_SPEND
    traces: TraceCost = NO_TRACE_SPEND

    @property
    def total(self) -> Decimal | None:
        amounts = [a for a in (self.runs.total, self.traces.amount) if a is not None]
        return sum(amounts, Decimal(0)) if amounts else None

    @property
    def unpriced_calls(self) -> int:
        return self.runs.unpriced_calls + self.traces.unpriced_calls


def spend_per_day(*, project, days: int = 14) -> list[DaySpend]:
    """The project's spend per day over the last `days` days, newest first: its runs' items by the
    day they finished, its traces by the day they started (each the day it was priced at)."""
    runs = {row["day"]: row["cost"] for row in run_spend_per_day(project=project, days=days)}
    traces = trace_spend_per_day(project=project, days=days)
    return [
        DaySpend(day=day, runs=runs.get(day, NO_RUN_SPEND), traces=traces.get(day, NO_TRACE_SPEND))
        for day in sorted(runs.keys() | traces.keys(), reverse=True)
    ]


def run_counts(*, project) -> dict:
    return EvaluationRun.objects.filter(project=project).status_counts()


# --- the run list -------------------------------------------------------------------------------

# The run list's sortable columns (?sort=<column> or -<column>): what each orders by. Ties, and the
# default order, are newest first. Names sort as the page shows them: a deleted bot's or test
# set's runs (no name) come last whichever the direction; so do runs with no pass rate yet.
RUN_SORT_FIELDS = {
    "created": "created_at",
    "bot": "bot_name_value",
    "test_set": "test_set_name_value",
    "status": "status",
    "progress": "progress_value",
    "pass_rate": "pass_rate_value",
    "judge": "judge",
}
RUN_DEFAULT_SORT = "-created"


def run_sort(value: str | None) -> Sort:
    return sort_from_param(value, columns=RUN_SORT_FIELDS, default=RUN_DEFAULT_SORT)


def run_list_sorted(runs, *, sort: Sort):
    """`runs` (EvaluationRun.objects.with_names(), filtered) in the order of `sort`."""
    column = RUN_SORT_FIELDS[sort.column]
    if column == "created_at":
        return runs.order_by(*(("-created_at", "-id") if sort.descending else ("created_at", "id")))
    runs = runs.annotate(
        # Shares as the page shows them: completed of total, passed of completed (none before any).
        progress_value=Cast("completed", FloatField()) / NullIf("total", 0),
        pass_rate_value=Cast("passed", FloatField()) / NullIf("completed", 0),
    )
    ordering = F(column).desc(nulls_last=True) if sort.descending else F(column).asc(nulls_last=True)
    return runs.order_by(ordering, "-created_at", "-id")


# --- the compare landing page -------------------------------------------------------------------

COMPARE_CHOICES = 100


def compare_choices(*, project, limit: int = COMPARE_CHOICES) -> list[dict]:
    """The newest runs of `project`, each with a name a reviewer recognises (bot, test set and
    version, time): what the compare landing page offers in its two selects. Two queries, whatever
    is stored."""
    runs = list(EvaluationRun.objects.filter(project=project).with_bot_names().newest_first()[:limit])
    test_sets = dict(
        TestSet.objects.filter(pk__in={r.test_set_id for r in runs if r.test_set_id}).values_list("pk", "name")
    )
    choices = []
    for run in runs:
        if run.test_set_id:
            items = f"{test_sets.get(run.test_set_id, '(deleted test set)')} v{run.test_set_version}"
        else:
            items = "question set"
        choices.append(
            {
                "run_id": run.run_id,
                "label": (
                    f"{run.bot_name_value or '(deleted bot)'} · {items} · "
                    f"{run.created_at:%Y-%m-%d %H:%M:%S} · {run.status}"
                ),
            }
        )
    return choices


# --- the trace list -----------------------------------------------------------------------------

TRACES_PER_PAGE = 50
UNRATED = "unrated"

# The trace list's sortable columns: ?sort=<column> or -<column>. Every order ends newest first
# (start_time, id descending), which makes it total, so keyset pages neither skip nor repeat a trace.
# Not the query text (nobody reads traces in its alphabetical order) nor the latest rating, which
# is computed per row from the evaluations and would be computed for every trace to sort by it.
TRACE_SORT_FIELDS = {
    "started": "start_time",
    "agent": "agent_name",
    "status": "status",
    "source": "source",
    "tool_calls": "tool_call_count",
    "duration": "duration_seconds",
}
TRACE_DEFAULT_SORT = "-started"


def trace_sort(value: str | None) -> Sort:
    return sort_from_param(value, columns=TRACE_SORT_FIELDS, default=TRACE_DEFAULT_SORT)


@dataclass(frozen=True)
class _Key:
    field: str
    descending: bool
    nulls_last: bool  # where a nullable column's empty values go (a NOT NULL column has none)

    def reversed(self) -> "_Key":
        return _Key(self.field, not self.descending, not self.nulls_last)

    def ordering(self):
        # NULLS FIRST/LAST only where there are nulls: on a NOT NULL column it would stop PostgreSQL
        # from reading its index backwards (a DESC index scan gives NULLS FIRST).
        nulls = {"nulls_last": True} if self.nulls_last else {"nulls_first": True}
        expression = F(self.field)
        if not self.nullable:
            return expression.desc() if self.descending else expression.asc()
        return expression.desc(**nulls) if self.descending else expression.asc(**nulls)

    @property
    def nullable(self) -> bool:
        return self.field != "id" and AgentTrace._meta.get_field(self.field).null


def _trace_keys(sort: Sort) -> list[_Key]:
    column = TRACE_SORT_FIELDS[sort.column]
    keys = [_Key(column, sort.descending, nulls_last=True)] if column != "start_time" else []
    # Ties (and the default order) newest first; by start_time itself in the direction asked for.
    newest = sort.descending if column == "start_time" else True
    return keys + [_Key("start_time", newest, nulls_last=True), _Key("id", newest, nulls_last=True)]


def _after(keys: list[_Key], values: tuple) -> Q:
    """Rows after `values` in the order of `keys`: (k1 beyond v1) or (k1 = v1 and (k2 beyond v2 ...))."""
    condition = None
    for key, value in reversed(list(zip(keys, values, strict=False))):
        beyond = _beyond(key, value)
        condition = beyond if condition is None else beyond | (_equal(key, value) & condition)
    first, value = keys[0], values[0]
    if not first.nullable:
        # Redundant, but lets the index scan start at the cursor instead of filtering up to it.
        condition &= Q(**{f"{first.field}__{'lte' if first.descending else 'gte'}": value})
    return condition


def _beyond(key: _Key, value) -> Q:
    if value is None:  # in the empty values: only the other values can follow, when they come after
        return Q(pk__in=[]) if key.nulls_last else Q(**{f"{key.field}__isnull": False})
    beyond = Q(**{f"{key.field}__{'lt' if key.descending else 'gt'}": value})
    if key.nullable and key.nulls_last:
        beyond |= Q(**{f"{key.field}__isnull": True})
    return beyond


def _equal(key: _Key, value) -> Q:
    return Q(**{f"{key.field}__isnull": True}) if value is None else Q(**{key.field: value})


@dataclass(frozen=True)
class TraceCursor:
    """A position in one sort order of the trace list: the sort and the values of its keys (the
    sorted column's, then start_time and id) at a trace; opaque in URLs."""

    sort: str
    values: tuple

    def encode(self) -> str:
        values = [v.isoformat() if isinstance(v, datetime) else v for v in self.values]
        return urlsafe_b64encode(json.dumps([self.sort, values]).encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, value: str, *, sort: Sort) -> "TraceCursor | None":
        """The cursor in `value`, or None when it is not one of this sort order (a stale link)."""
        try:
            sort_param, values = json.loads(urlsafe_b64decode((value or "") + "=" * (-len(value or "") % 4)))
            keys = _trace_keys(sort)
            if sort_param != sort.param or len(values) != len(keys):
                return None
            return cls(sort_param, tuple(_parse_key_value(key, v) for key, v in zip(keys, values, strict=False)))
        except (ValueError, TypeError):
            return None


def _parse_key_value(key: _Key, value):
    if value is None:
        if not key.nullable:
            raise ValueError(f"{key.field} has no empty values")
        return None
    model_field = AgentTrace._meta.get_field(key.field) if key.field != "id" else None
    if model_field is None or isinstance(model_field, IntegerField):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{key.field} is a whole number")
        return value
    if isinstance(model_field, DateTimeField):
        moment = datetime.fromisoformat(value)
        return moment if timezone.is_aware(moment) else timezone.make_aware(moment, UTC)
    if isinstance(model_field, FloatField):
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"{key.field} is text")
    return value


@dataclass
class TracePage:
    traces: list
    newer: TraceCursor | None  # the cursor of the page before (None on the first page)
    older: TraceCursor | None  # the cursor of the page after (None on the last page)
    text_search: str  # "trigram", "window" or "" (no text search made)
    sort: Sort = field(default_factory=lambda: trace_sort(None))
    filterset: "ConsoleTraceFilter | None" = None  # the bound filters: their form, what they chose


class ConsoleTraceFilter(TraceFilter):
    """The trace list's filters plus the rating of a trace's latest agentic evaluation, which the
    traces app cannot know (agentic sits above it): the queryset carries it as `latest_rating`."""

    rating = django_filters.ChoiceFilter(
        method="filter_rating",
        label="Latest rating",
        empty_label=ANY,
        choices=AgentEvaluation.Rating.choices + [(UNRATED, "not evaluated")],
    )

    # The form shows the rating beside the status, where it always was; the filters apply in the
    # order they did before the FilterSet, so the page's SQL is the same statement as then.
    FORM_ORDER = ("q", "agent", "status", "rating", "source", "date_from", "date_to")
    FILTER_ORDER = ("q", "agent", "status", "source", "rating", "date_from", "date_to")

    def get_form_class(self):
        form = super().get_form_class()
        form.field_order = self.FORM_ORDER
        return form

    def filter_queryset(self, queryset):
        values = self.form.cleaned_data  # the values that validated
        for name in self.FILTER_ORDER:
            if name in values:
                queryset = self.filters[name].filter(queryset, values[name])
        return queryset

    def filter_rating(self, queryset, name: str, value: str):
        if value == UNRATED:
            return queryset.filter(latest_rating__isnull=True)
        return queryset.filter(latest_rating=value)


def trace_list_page(
    *,
    filters=None,
    sort: Sort | None = None,
    after: TraceCursor | None = None,
    before: TraceCursor | None = None,
    per_page: int | None = None,
    agent_names: list[str] | None = None,
    project_id: int,
) -> TracePage:
    """One page of the traces `filters` choose (ConsoleTraceFilter, through the traces app's
    trace_filter), newest first unless `sort` says otherwise, by keyset: every page is one
    query reading about `per_page` index entries (plus what the filters skip) in the default order,
    however deep it is and however many traces are stored. `rating` is the rating of the trace's
    latest agentic evaluation. `agent_names` are the agents to choose among and the names a search
    matches agents among (trace_agent_names() when not given). The page carries the bound FilterSet
    (`filterset.form` shows the values that did not validate, which are left out). Of the
    project `project_id` only, as is the latest evaluation each row shows."""
    per_page = per_page or TRACES_PER_PAGE
    sort = sort or trace_sort(None)
    keys = _trace_keys(sort)
    latest = AgentEvaluation.objects.filter(project_id=project_id, session_id=OuterRef("session_id")).order_by(
        "-created_at", "-id"
    )
    annotated = (
        AgentTrace.objects.filter(project_id=project_id)
        .annotate(
            latest_rating=Subquery(latest.values("rating")[:1]),
            latest_score=Subquery(latest.values("overall_score")[:1]),
            # What the row's "add to queue" adds: the latest evaluation, the one whose rating it shows.
            latest_evaluation_id=Subquery(latest.values("pk")[:1]),
        )
        .only(
            "session_id",
            "agent_name",
            "user_query",
            "status",
            "source",
            "start_time",
            "duration_seconds",
            "tool_call_count",
            "success",
            "cost",
            "unpriced_calls",
        )
    )
    filterset = trace_filter(
        filters=filters,
        queryset=annotated,
        filterset=ConsoleTraceFilter,
        agent_names=agent_names,
        project_id=project_id,
    )
    traces = filterset.qs
    found = {"filterset": filterset, "text_search": filterset.text_search, "sort": sort}
    if before is not None and before.sort == sort.param:
        # The page before: the `per_page` traces just before the cursor, read backwards.
        backwards = [key.reversed() for key in keys]
        rows = list(
            traces.filter(_after(backwards, before.values)).order_by(*(key.ordering() for key in backwards))[
                : per_page + 1
            ]
        )
        more_before = len(rows) > per_page
        rows = list(reversed(rows[:per_page]))
        return TracePage(
            traces=rows,
            newer=_cursor(rows[0], keys, sort) if more_before and rows else None,
            older=_cursor(rows[-1], keys, sort) if rows else None,
            **found,
        )
    paged = after is not None and after.sort == sort.param
    if paged:
        traces = traces.filter(_after(keys, after.values))
    rows = list(traces.order_by(*(key.ordering() for key in keys))[: per_page + 1])
    more_after = len(rows) > per_page
    rows = rows[:per_page]
    return TracePage(
        traces=rows,
        newer=_cursor(rows[0], keys, sort) if paged and rows else None,
        older=_cursor(rows[-1], keys, sort) if more_after else None,
        **found,
    )


def _cursor(trace: AgentTrace, keys: list[_Key], sort: Sort) -> TraceCursor:
    return TraceCursor(sort.param, tuple(getattr(trace, key.field) for key in keys))
