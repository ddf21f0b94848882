"""The rule-based question parser, used when no LLM is configured (documented in docs/nlquery.md).

It understands:
- times: "last hour", "past 30 minutes", "last 7 days", "last 2h", "today", "yesterday",
  "since 09:00", "between 10:00 and 11:00", "from 2026-01-20 10:00 to 2026-01-20 12:00";
  "every 5 minutes" sets the step. No time means the last hour.
- aggregations: average/mean/avg, peak/max/maximum/highest, min/minimum/lowest, total/sum.
- label filters: `job="api"`, `instance=web-1`, "on instance web-1", "for job api", "where method is GET".
- metrics: an exact metric name, a synonym ("CPU usage", "memory", "requests", ...) resolved against
  the backend's list, or the words of the question matched against the words of metric names.
- unsupported operations (anomalies, forecasts, predictions, correlations, comparisons, causes,
  alerts, deletions) are refused as such rather than misread as a metric.

Times are wall-clock times in the server's TIME_ZONE (UTC unless configured).
"""

import re
from datetime import datetime, time, timedelta, tzinfo
from math import ceil

from .errors import QueryFailure
from .schemas import Aggregation, MetricsQuery, TimeRange

EXAMPLE_QUESTIONS = (
    "Show CPU usage for the last hour",
    "Average memory over the past 30 minutes",
    "Peak requests for job api since 09:00",
    'Show process_open_fds{instance="web-1"} between 10:00 and 11:00',
)
PARSING_SUGGESTION = "Try a question like: " + "; ".join(f"'{q}'" for q in EXAMPLE_QUESTIONS)
DEFAULT_RANGE = timedelta(hours=1)
TARGET_POINTS = 250
NICE_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)

UNSUPPORTED = (
    (r"\banomal\w*|\boutliers?\b", "Anomaly detection is not supported."),
    (r"\bforecast\w*|\bpredict\w*|\bprojection\w*|\bextrapolat\w*", "Forecasting and prediction are not supported."),
    (r"\bcorrelat\w*", "Correlating metrics is not supported."),
    (r"\bcompar\w*|\bversus\b|\bvs\.?(?=\s)", "Comparing metrics is not supported."),
    (r"\broot[ -]cause\b|^\s*why\b", "Explaining causes is not supported."),
    (r"\b(?:create|set ?up|add|configure)\b.*\balerts?\b", "Creating alerts is not supported."),
    (r"\b(?:delete|drop|remove|purge)\b", "Changing or deleting metrics is not supported."),
    (r"[a-zA-Z_][a-zA-Z0-9_]*\s*(?:!=|=~|!~)", "Only exact label matches (label=value) are supported."),
)
UNSUPPORTED_SUGGESTION = "Try asking for raw metric data instead, e.g. 'Show CPU usage for the last hour'."

AGGREGATION_WORDS: dict[str, Aggregation] = {
    "average": "avg",
    "avg": "avg",
    "mean": "avg",
    "peak": "max",
    "max": "max",
    "maximum": "max",
    "highest": "max",
    "min": "min",
    "minimum": "min",
    "lowest": "min",
    "total": "sum",
    "sum": "sum",
    "combined": "sum",
}

# Phrase -> metric names to try in order; the first the backend has wins.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "cpu": ("process_cpu_seconds_total", "node_cpu_seconds_total", "container_cpu_usage_seconds_total"),
    "processor": ("process_cpu_seconds_total", "node_cpu_seconds_total"),
    "memory": ("process_resident_memory_bytes", "node_memory_Active_bytes", "container_memory_working_set_bytes"),
    "ram": ("process_resident_memory_bytes", "node_memory_Active_bytes"),
    "resident memory": ("process_resident_memory_bytes",),
    "rss": ("process_resident_memory_bytes",),
    "virtual memory": ("process_virtual_memory_bytes",),
    "requests": ("http_requests_total", "django_http_requests_total_by_method_total", "prometheus_http_requests_total"),
    "http requests": (
        "http_requests_total",
        "django_http_requests_total_by_method_total",
        "prometheus_http_requests_total",
    ),
    "traffic": ("http_requests_total", "django_http_requests_total_by_method_total", "prometheus_http_requests_total"),
    "open files": ("process_open_fds",),
    "file descriptors": ("process_open_fds",),
    "goroutines": ("go_goroutines",),
    "agent sessions": ("vayu_agent_sessions_total",),
    "sessions": ("vayu_agent_sessions_total",),
    "active sessions": ("vayu_agent_active_sessions",),
    "targets up": ("up",),
    "uptime": ("up",),
}

KNOWN_LABELS = {
    "instance": "instance",
    "job": "job",
    "method": "method",
    "code": "code",
    "status": "status",
    "handler": "handler",
    "pod": "pod",
    "namespace": "namespace",
    "service": "service",
    "container": "container",
    "host": "host",
    "env": "env",
    "environment": "environment",
    "cluster": "cluster",
    "region": "region",
    "view": "view",
    "agent": "agent_name",
    "agent_name": "agent_name",
    "operation": "operation",
    "node": "node",
}

FILLER = {
    "show",
    "me",
    "display",
    "plot",
    "graph",
    "chart",
    "draw",
    "get",
    "give",
    "list",
    "see",
    "view",
    "what",
    "whats",
    "what's",
    "is",
    "was",
    "are",
    "were",
    "the",
    "a",
    "an",
    "of",
    "for",
    "in",
    "on",
    "over",
    "during",
    "my",
    "our",
    "please",
    "can",
    "could",
    "would",
    "you",
    "i",
    "how",
    "much",
    "many",
    "rate",
    "per",
    "second",
    "usage",
    "utilization",
    "utilisation",
    "consumption",
    "used",
    "use",
    "level",
    "levels",
    "value",
    "values",
    "data",
    "metric",
    "metrics",
    "series",
    "time",
    "trend",
    "at",
    "to",
    "and",
    "all",
    "current",
    "currently",
    "now",
    "by",
    "with",
    "from",
    "been",
    "has",
    "have",
    "there",
    "it",
    "its",
}
QUESTION_WORDS = {
    "show",
    "display",
    "plot",
    "graph",
    "chart",
    "draw",
    "get",
    "give",
    "list",
    "what",
    "whats",
    "what's",
    "how",
    "see",
    "view",
}

NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twelve": 12,
    "fifteen": 15,
    "thirty": 30,
}
UNIT_SECONDS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "wk": 604800,
    "wks": 604800,
    "week": 604800,
    "weeks": 604800,
}
_UNIT = r"(?P<unit>" + "|".join(sorted(UNIT_SECONDS, key=len, reverse=True)) + r")\b"
_COUNT = r"(?:(?P<num>\d+(?:\.\d+)?)\s*|(?P<word>" + "|".join(NUMBER_WORDS) + r")\s+)?"
RELATIVE_RE = re.compile(
    r"\b(?:(?:in|over|during|for)\s+)?(?:the\s+)?(?:last|past|previous)\s+" + _COUNT + _UNIT, re.IGNORECASE
)
STEP_RE = re.compile(
    r"\b(?:every|at|with)\s+" + _COUNT + _UNIT + r"(?:\s+(?:resolution|step|intervals?))?", re.IGNORECASE
)
_POINT = (
    r"(?:\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?|\d{1,2}(?::\d{2}){1,2}\s*(?:am|pm)?"
    r"|\d{1,2}\s*(?:am|pm)|today|yesterday|now|midnight|noon)"
)
BETWEEN_RE = re.compile(
    r"\b(?:between|from)\s+(?P<a>" + _POINT + r")\s+(?:and|to|until|till|-)\s+(?P<b>" + _POINT + r")(?![\w:])",
    re.IGNORECASE,
)
SINCE_RE = re.compile(r"\b(?:since|after)\s+(?P<a>" + _POINT + r")(?![\w:])", re.IGNORECASE)
DANGLING_TIME_RE = re.compile(r"\b(?:between|since)\b", re.IGNORECASE)
YESTERDAY_RE = re.compile(r"\b(?:(?:for|during|on|from)\s+)?yesterday\b", re.IGNORECASE)
TODAY_RE = re.compile(r"\b(?:(?:for|during|on|from)\s+)?today\b", re.IGNORECASE)
EXPLICIT_FILTER_RE = re.compile(
    r"(?P<label>[a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)'|(?P<bare>[^\s,}]+))"
)
PHRASE_FILTER_RE = re.compile(
    r"\b(?:on|for|where|with|in|from)\s+(?:the\s+)?(?P<label>"
    + "|".join(KNOWN_LABELS)
    + r")\s+(?:is\s+|equals\s+|=\s*|of\s+|named\s+)?(?:\"(?P<dq>[^\"]+)\"|'(?P<sq>[^']+)'|(?P<bare>[\w.:/@-]+))",
    re.IGNORECASE,
)
METRIC_NAME_RE = re.compile(r"(?<![\w:])([a-zA-Z_:][a-zA-Z0-9_:]*[_:][a-zA-Z0-9_:]*)(?![\w:])")
BRACES_RE = re.compile(r"[{}]")


def _fail(message: str, details: dict | None = None) -> QueryFailure:
    return QueryFailure("parsing_error", message, PARSING_SUGGESTION, details)


def _count(match: re.Match) -> float:
    if match.group("num"):
        return float(match.group("num"))
    if match.group("word"):
        return float(NUMBER_WORDS[match.group("word").lower()])
    return 1.0


def _time_point(text: str, now: datetime, tz: tzinfo) -> datetime:
    text = text.strip().lower()
    today = now.astimezone(tz).date()
    if text == "now":
        return now
    if text in ("today", "midnight"):
        return datetime.combine(today, time(0), tz)
    if text == "yesterday":
        return datetime.combine(today - timedelta(days=1), time(0), tz)
    if text == "noon":
        return datetime.combine(today, time(12), tz)
    date_match = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?:[ t](\d{1,2}):(\d{2})(?::(\d{2}))?)?", text)
    try:
        if date_match:
            y, mo, d, hh, mm, ss = date_match.groups()
            return datetime(int(y), int(mo), int(d), int(hh or 0), int(mm or 0), int(ss or 0), tzinfo=tz)
        clock = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*(am|pm)?", text)
        if clock:
            hh, mm, ss, meridiem = clock.groups()
            hour = int(hh)
            if meridiem:
                if not 1 <= hour <= 12:
                    raise ValueError("12-hour clock out of range")
                hour = hour % 12 + (12 if meridiem == "pm" else 0)
            return datetime.combine(today, time(hour, int(mm or 0), int(ss or 0)), tz)
    except ValueError as exc:
        raise _fail(f"Could not understand the time '{text}'.", {"time": text}) from exc
    raise _fail(f"Could not understand the time '{text}'.", {"time": text})


def _take(pattern: re.Pattern, text: str) -> tuple[re.Match | None, str]:
    match = pattern.search(text)
    if match is None:
        return None, text
    return match, text[: match.start()] + " " + text[match.end() :]


def _parse_time(text: str, now: datetime, tz: tzinfo) -> tuple[TimeRange | None, str]:
    match, rest = _take(BETWEEN_RE, text)
    if match:
        return TimeRange(start_time=_time_point(match["a"], now, tz), end_time=_time_point(match["b"], now, tz)), rest
    match, rest = _take(SINCE_RE, text)
    if match:
        return TimeRange(start_time=_time_point(match["a"], now, tz), end_time=now), rest
    match, rest = _take(RELATIVE_RE, text)
    if match:
        seconds = _count(match) * UNIT_SECONDS[match["unit"].lower()]
        return TimeRange(start_time=now - timedelta(seconds=seconds), end_time=now), rest
    match, rest = _take(YESTERDAY_RE, text)
    if match:
        midnight = datetime.combine(now.astimezone(tz).date(), time(0), tz)
        return TimeRange(start_time=midnight - timedelta(days=1), end_time=midnight), rest
    match, rest = _take(TODAY_RE, text)
    if match:
        return TimeRange(start_time=datetime.combine(now.astimezone(tz).date(), time(0), tz), end_time=now), rest
    if DANGLING_TIME_RE.search(text):
        raise _fail("Could not understand the time range.", {"text": text})
    return None, text


def _parse_filters(text: str) -> tuple[dict[str, str], str]:
    filters: dict[str, str] = {}
    for pattern in (EXPLICIT_FILTER_RE, PHRASE_FILTER_RE):
        while True:
            match, text = _take(pattern, text)
            if match is None:
                break
            label = match["label"]
            label = KNOWN_LABELS.get(label.lower(), label) if pattern is PHRASE_FILTER_RE else label
            value = next(v for v in (match["dq"], match["sq"], match["bare"]) if v is not None)
            filters[label] = value
    return filters, text


def _parse_aggregation(words: list[str]) -> tuple[Aggregation, list[str]]:
    for index, word in enumerate(words):
        if word in AGGREGATION_WORDS:
            return AGGREGATION_WORDS[word], words[:index] + words[index + 1 :]
    return "none", words


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _find_synonym(words: list[str], available: list[str]) -> str | None:
    joined = " " + " ".join(words) + " "
    for phrase in sorted(SYNONYMS, key=len, reverse=True):
        if f" {phrase} " in joined:
            candidates = SYNONYMS[phrase]
            present = set(available)
            return next((name for name in candidates if name in present), candidates[0])
    return None


def _match_words(words: list[str], available: list[str]) -> str | None:
    wanted = {_singular(w) for w in words}
    best = None
    for name in available:
        tokens = {_singular(t) for t in name.lower().split("_") if t}
        if wanted <= tokens and (best is None or len(name) < len(best)):
            best = name
    return best


def choose_step(time_range: TimeRange) -> int:
    seconds = max((time_range.end_time - time_range.start_time).total_seconds(), 1.0)
    wanted = ceil(seconds / TARGET_POINTS)
    return next((step for step in NICE_STEPS if step >= wanted), NICE_STEPS[-1])


def check_unsupported(question: str) -> None:
    for pattern, message in UNSUPPORTED:
        if re.search(pattern, question, re.IGNORECASE):
            raise QueryFailure("unsupported_operation", message, UNSUPPORTED_SUGGESTION, {"pattern": pattern})


def parse_question(question: str, *, available_metrics: list[str], now: datetime, tz: tzinfo) -> MetricsQuery:
    """Turn a question into a MetricsQuery, or raise QueryFailure (parsing_error, unsupported_operation).

    Whether the metric exists and the time range makes sense is the validation step's business.
    """
    if not question or not question.strip():
        raise _fail("Could not understand your query: it is empty.")
    check_unsupported(question)
    time_range, text = _parse_time(question, now, tz)
    step_match, text = _take(STEP_RE, text)
    filters, text = _parse_filters(text)
    text = BRACES_RE.sub(" ", text)

    explicit, text = _take(METRIC_NAME_RE, text)
    words = re.findall(r"[a-z0-9']+", text.lower())
    aggregation, words = _parse_aggregation(words)
    recognised_structure = bool(
        time_range or filters or aggregation != "none" or step_match or QUESTION_WORDS.intersection(words)
    )
    content = [w for w in words if w not in FILLER]

    if explicit:
        metric_name = explicit.group(1)
    else:
        metric_name = _find_synonym(content, available_metrics) or (
            _match_words(content, available_metrics) if content else None
        )
        if metric_name is None:
            if not content or not recognised_structure:
                raise _fail("Could not understand your query.", {"words": content})
            # A question about something we cannot match: the validation step reports it as
            # metric_not_found, with the closest names the backend has.
            metric_name = "_".join(re.sub(r"[^a-z0-9_]", "", w) for w in content).strip("_")
            if not metric_name or metric_name[0].isdigit():
                raise _fail("Could not understand which metric you mean.", {"words": content})

    time_range = time_range or TimeRange(start_time=now - DEFAULT_RANGE, end_time=now)
    step = int(max(_count(step_match) * UNIT_SECONDS[step_match["unit"].lower()], 1)) if step_match else None
    return MetricsQuery(
        metric_name=metric_name[:200],
        time_range=time_range,
        aggregation=aggregation,
        filters=filters,
        step=step or choose_step(time_range),
    )
