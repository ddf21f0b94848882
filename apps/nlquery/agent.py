"""The `metrics_agent` LangGraph node (seed 001): parse, validate, execute, format, return.

Afterwards exactly one of these holds: success (parsed_query and result set, error None) or failure
(error set, result None). Every failure becomes the contract's QueryError; nothing is retried, and
what only the logs need goes into QueryError.details.
"""

import difflib
import logging
import math
import statistics
import threading
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils import timezone as dj_timezone
from langgraph.graph import END, START, StateGraph
from pydantic import ValidationError

from apps.core.llm.client import llm_configured

from . import parser as rule_parser
from . import promql as promql_builder
from .backends import PrometheusBackend, backend_config, get_backend
from .errors import BackendRejected, BackendUnavailable, OutOfProject, QueryFailure
from .llm_parser import parse_with_llm
from .schemas import (
    AggregationStats,
    DataPoint,
    MetricsQuery,
    MetricsQueryResult,
    MetricsQueryState,
    QueryError,
    initial_state,
)

logger = logging.getLogger(__name__)

NODE_NAME = "metrics_agent"
STEPS = ("parse", "validate", "execute", "format", "return")
MAX_RANGE = timedelta(days=90)
MAX_POINTS_PER_SERIES = 11_000  # Prometheus refuses more than this per series.
MAX_SERIES = 50
CLOCK_SKEW = timedelta(seconds=30)
NOT_CONFIGURED_SUGGESTION = (
    "Set PROMETHEUS_URL, or GRAFANA_URL with GRAFANA_DATASOURCE_UID and GRAFANA_TOKEN, and restart evalsite."
)


def _unavailable(exc: BackendUnavailable) -> QueryFailure:
    return QueryFailure("grafana_unavailable", str(exc), exc.suggestion, exc.details)


def _not_configured() -> QueryFailure:
    problem = backend_config().problem
    message = f"No usable metrics backend is configured: {problem}" if problem else "No metrics backend is configured."
    return QueryFailure("grafana_unavailable", message, NOT_CONFIGURED_SUGGESTION)


# Step 1 ------------------------------------------------------------------------------------------


def _available_for_parsing(backend: PrometheusBackend | None) -> list[str]:
    # The parser only uses the list to resolve synonyms; when the backend is down, parsing goes on
    # without it and the validation step reports the outage as grafana_unavailable.
    if backend is None:
        return []
    try:
        return backend.get_available_metrics()
    except (BackendUnavailable, BackendRejected):
        return []


def parse_step(user_query: str, backend: PrometheusBackend | None, now: datetime, parser: str) -> MetricsQuery:
    available = _available_for_parsing(backend)
    if parser == "llm":
        return parse_with_llm(user_query, available_metrics=available, now=now)
    return rule_parser.parse_question(user_query, available_metrics=available, now=now, tz=ZoneInfo(settings.TIME_ZONE))


# Step 2 ------------------------------------------------------------------------------------------


def closest_metrics(name: str, available: list[str], limit: int = 5) -> list[str]:
    close = difflib.get_close_matches(name, available, n=limit, cutoff=0.4)
    wanted = {t for t in name.lower().split("_") if len(t) > 2}
    sharing = sorted((m for m in available if wanted & set(m.lower().split("_")) and m not in close), key=len)
    found = (close + sharing)[:limit]
    if not found:
        # Nothing resembles the name: offer the everyday metrics the backend does have instead.
        present = set(available)
        found = [name for candidates in rule_parser.SYNONYMS.values() for name in candidates if name in present]
        found = list(dict.fromkeys(found))[:limit]
    return found


def validate_step(query: MetricsQuery, backend: PrometheusBackend | None, now: datetime, project: str | None):
    if backend is None:
        raise _not_configured()
    try:
        available = backend.get_available_metrics()
        info = backend.get_metric_info(query.metric_name)
    except BackendUnavailable as exc:
        raise _unavailable(exc) from exc
    except BackendRejected as exc:
        raise QueryFailure(
            "invalid_query",
            f"The metrics backend refused to list its metrics: {exc}",
            "Check the backend's configuration.",
            exc.details,
        ) from exc
    if query.metric_name not in available:
        suggestions = closest_metrics(query.metric_name, available)
        suggestion = (
            f"Did you mean: {', '.join(suggestions)}?"
            if suggestions
            else "Ask about one of the metrics the backend has; the query page lists examples."
        )
        raise QueryFailure(
            "metric_not_found",
            f"Metric '{query.metric_name}' was not found.",
            suggestion,
            {"suggestions": suggestions, "available_count": len(available)},
        )

    start, end = query.time_range.start_time, query.time_range.end_time
    if end <= start:
        raise QueryFailure(
            "invalid_time_range",
            "The time range ends before it starts.",
            "Put the earlier time first, e.g. 'between 10:00 and 11:00'.",
            {"start": start.isoformat(), "end": end.isoformat()},
        )
    if start > now + CLOCK_SKEW:
        raise QueryFailure(
            "invalid_time_range",
            "The time range starts in the future.",
            "Ask about a past period, e.g. 'the last hour' or 'since 09:00' after 09:00.",
            {"start": start.isoformat(), "now": now.isoformat()},
        )
    if end - start > MAX_RANGE:
        raise QueryFailure(
            "invalid_time_range",
            f"The time range is longer than {MAX_RANGE.days} days.",
            f"Ask about at most the last {MAX_RANGE.days} days.",
            {"seconds": (end - start).total_seconds()},
        )
    step = query.step or rule_parser.choose_step(query.time_range)
    if (end - start).total_seconds() / step > MAX_POINTS_PER_SERIES:
        raise QueryFailure(
            "invalid_time_range",
            "The time range holds too many points for that step.",
            "Use a shorter range or a coarser step, e.g. 'every 5 minutes'.",
            {"step": step, "seconds": (end - start).total_seconds()},
        )
    query = query.model_copy(update={"step": step})
    try:
        # Scoped once the query is known to be valid: the plan carries only the scoped PromQL, so
        # what runs and what the answer shows are the same expression.
        return query, promql_builder.build(query, info, step, project=project)
    except OutOfProject as exc:
        raise QueryFailure("invalid_query", str(exc), exc.suggestion, {**exc.details, "project": project}) from exc


# Step 3 ------------------------------------------------------------------------------------------


def execute_step(query: MetricsQuery, plan: promql_builder.PromqlPlan, backend: PrometheusBackend) -> list[dict]:
    try:
        return backend.query_range(plan.promql, query.time_range.start_time, query.time_range.end_time, query.step)
    except BackendUnavailable as exc:
        raise _unavailable(exc) from exc
    except BackendRejected as exc:
        raise QueryFailure(
            "invalid_query",
            f"The metrics backend rejected the query: {exc}",
            "Check the metric name and label filters; the PromQL that ran is in the details.",
            {**exc.details, "promql": plan.promql},
        ) from exc


# Step 4 ------------------------------------------------------------------------------------------


def format_step(query: MetricsQuery, plan: promql_builder.PromqlPlan, raw: list[dict]) -> MetricsQueryResult:
    if len(raw) > MAX_SERIES:
        raise QueryFailure(
            "invalid_query",
            f"The query returned {len(raw)} series; at most {MAX_SERIES} are shown.",
            "Add a label filter (e.g. 'for job api') or an aggregation (average, peak, total).",
            {"series": len(raw), "promql": plan.promql},
        )
    points: list[DataPoint] = []
    for series in raw:
        labels = {k: str(v) for k, v in (series.get("metric") or {}).items() if k != "__name__"}
        for ts, text in series.get("values") or []:
            value = float(text)
            # NaN and ±Inf (e.g. a rate over a reset) are gaps, not numbers to average.
            if math.isfinite(value):
                points.append(
                    DataPoint(timestamp=datetime.fromtimestamp(float(ts), tz=UTC), value=value, labels=labels)
                )
    points.sort(key=lambda p: (p.timestamp, sorted(p.labels.items())))
    values = [p.value for p in points]
    stats = None
    if values:
        stats = AggregationStats(
            min=min(values),
            max=max(values),
            mean=statistics.fmean(values),
            median=statistics.median(values),
            sum=math.fsum(values),
            count=len(values),
        )
    return MetricsQueryResult(
        metric_name=query.metric_name,
        unit=plan.unit,
        time_range=query.time_range,
        datapoints=points,
        datapoint_count=len(points),
        statistics=stats,
        is_empty=not points,
        promql=plan.promql,
    )


# The node ----------------------------------------------------------------------------------------

# What an unexpected exception in each step becomes, so the node's invariant holds whatever breaks.
_UNEXPECTED = {
    "parse": ("parsing_error", "Could not understand your query", rule_parser.PARSING_SUGGESTION),
    "validate": ("invalid_query", "Could not validate the query", "Contact administrator"),
    "execute": ("invalid_query", "Could not run the query", "Contact administrator"),
    "format": ("invalid_query", "Could not format results", "Contact administrator"),
}


@contextmanager
def _step(name: str, timings: dict | None):
    started = time.perf_counter()
    try:
        yield
    except QueryFailure:
        raise
    except ValidationError as exc:
        error_type, message, suggestion = _UNEXPECTED[name]
        raise QueryFailure(
            error_type,
            message,
            suggestion,
            {"step": name, "errors": exc.errors(include_url=False, include_input=False)},
        ) from exc
    except Exception as exc:
        logger.exception("metrics_agent step %s failed unexpectedly", name)
        error_type, message, suggestion = _UNEXPECTED[name]
        raise QueryFailure(error_type, message, suggestion, {"step": name, "exception": type(exc).__name__}) from exc
    finally:
        if timings is not None:
            timings[name] = timings.get(name, 0.0) + (time.perf_counter() - started) * 1000


def _choose_parser(requested: str | None) -> str:
    if requested in ("rules", "llm"):
        return requested
    return "llm" if llm_configured() else "rules"


def metrics_agent(state: MetricsQueryState, config=None) -> MetricsQueryState:
    """The node. `config["configurable"]` carries `project`, the slug of the project the question
    is asked in (evalsite's own metrics are read only there; without one they are refused), and may
    carry `step_timings` (a dict filled with per-step milliseconds, for the benchmark), `parser`
    ("rules" or "llm") and `now` (a fixed clock)."""
    started = time.perf_counter()
    options = (config or {}).get("configurable", {}) if isinstance(config, dict) else {}
    timings = options.get("step_timings")
    now = options.get("now") or dj_timezone.now()
    user_query = state.get("user_query") or ""
    backend = get_backend()
    parsed_query: MetricsQuery | None = None
    result: MetricsQueryResult | None = None
    error: QueryError | None = None
    try:
        with _step("parse", timings):
            parsed_query = parse_step(user_query, backend, now, _choose_parser(options.get("parser")))
        with _step("validate", timings):
            parsed_query, plan = validate_step(parsed_query, backend, now, options.get("project"))
        with _step("execute", timings):
            raw = execute_step(parsed_query, plan, backend)
        with _step("format", timings):
            result = format_step(parsed_query, plan, raw)
    except QueryFailure as failure:
        error, result = failure.error, None
        logger.info("metrics query failed: %s: %s %s", error.error_type, error.message, error.details or "")
    with _step("return", timings):
        return {
            **state,
            "parsed_query": parsed_query,
            "result": result,
            "error": error,
            "processing_time_ms": (time.perf_counter() - started) * 1000,
        }


def build_graph():
    graph = StateGraph(MetricsQueryState)
    graph.add_node(NODE_NAME, metrics_agent)
    graph.add_edge(START, NODE_NAME)
    graph.add_edge(NODE_NAME, END)
    return graph.compile()


_graph = None
_graph_lock = threading.Lock()


def get_graph():
    global _graph
    with _graph_lock:
        if _graph is None:
            _graph = build_graph()
        return _graph


def run_query(user_query: str, **configurable) -> MetricsQueryState:
    """Run the graph on one question; keyword arguments go to the node's `configurable`."""
    return get_graph().invoke(initial_state(user_query), {"configurable": configurable})
