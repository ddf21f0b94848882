"""PromQL built from a MetricsQuery: counters become per-second rates, and the unit follows."""

from dataclasses import dataclass

from .backends import MetricInfo
from .schemas import MetricsQuery

HISTOGRAM_PART_SUFFIXES = ("_bucket", "_count", "_sum")
UNIT_SUFFIXES = (
    "seconds",
    "bytes",
    "ratio",
    "percent",
    "celsius",
    "volts",
    "amperes",
    "joules",
    "grams",
    "meters",
    "hertz",
)
# The rate window must hold at least two scrapes, even with a 1-minute scrape interval.
MIN_RATE_WINDOW_SECONDS = 120


@dataclass(frozen=True)
class PromqlPlan:
    promql: str
    unit: str
    is_rate: bool


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def selector(query: MetricsQuery) -> str:
    if not query.filters:
        return query.metric_name
    matchers = ",".join(f'{label}="{_escape(value)}"' for label, value in sorted(query.filters.items()))
    return f"{query.metric_name}{{{matchers}}}"


def is_counter(metric_name: str, info: MetricInfo | None) -> bool:
    if info is not None and info.type == "counter":
        return True
    if info is not None and info.type in ("gauge",):
        return False
    return metric_name.endswith("_total") or metric_name.endswith(HISTOGRAM_PART_SUFFIXES)


def base_unit(metric_name: str, info: MetricInfo | None) -> str:
    if info is not None and info.unit:
        return info.unit
    name = metric_name
    for suffix in ("_total", *HISTOGRAM_PART_SUFFIXES):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    last = name.rsplit("_", 1)[-1]
    return last if last in UNIT_SUFFIXES else ""


def get_metric_unit(metric_name: str, info: MetricInfo | None) -> str:
    """The unit of what the node returns: a counter's unit per second, since counters are rates."""
    unit = base_unit(metric_name, info)
    if is_counter(metric_name, info) and not metric_name.endswith("_bucket"):
        return f"{unit}/s" if unit else "1/s"
    return unit


def build(query: MetricsQuery, info: MetricInfo | None, step: int) -> PromqlPlan:
    expression = selector(query)
    rate = is_counter(query.metric_name, info)
    if rate:
        window = max(2 * step, MIN_RATE_WINDOW_SECONDS)
        expression = f"rate({expression}[{window}s])"
    if query.aggregation != "none":
        expression = f"{query.aggregation}({expression})"
    return PromqlPlan(promql=expression, unit=get_metric_unit(query.metric_name, info), is_rate=rate)
