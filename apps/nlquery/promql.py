"""PromQL built from a MetricsQuery as a small syntax tree, scoped to the caller's project, then
written out: counters become per-second rates, and the unit follows.

Project scoping (docs/nlquery.md, "Projects"): evalsite's own metrics (`vayu_*`, `evalsite_*`) carry
a `project` label holding the project's slug, and every selector that may name one of them gets
`project="<slug>"` from the server. It is done on the tree, after the question is validated, so it
reaches every selector however the expression nests (`or`, `unless`, subqueries, `label_replace`),
and a matcher the question wrote cannot widen it: a `project` matcher other than the caller's own
exact one is refused. Other metrics (node_exporter, process_*, django_*) carry no project label:
they describe the shared deployment and are answered as they are.
"""

import re
from dataclasses import dataclass, replace
from typing import Literal

from .backends import MetricInfo
from .errors import OutOfProject
from .schemas import LABEL_NAME_PATTERN, METRIC_NAME_PATTERN, MetricsQuery

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


# Metric-name prefixes of what evalsite itself exports (apps/traces/metrics.py, ledger_metrics.py,
# apps/agentic/metrics.py). A prefix rather than a list of names: a family added later is scoped
# from its first scrape, and one without the label answers empty instead of every project's series.
EVALSITE_METRIC_PREFIXES = ("vayu_", "evalsite_")
PROJECT_LABEL = "project"
NAME_LABEL = "__name__"

_METRIC_NAME = re.compile(METRIC_NAME_PATTERN)
_LABEL_NAME = re.compile(LABEL_NAME_PATTERN)
_FUNCTION_NAME = re.compile(r"^[a-z_]+$")
MatchOp = Literal["=", "!=", "=~", "!~"]
AGGREGATION_OPS = frozenset({"sum", "avg", "min", "max", "count", "group", "stddev", "stdvar"})
BINARY_OPS = frozenset({"+", "-", "*", "/", "%", "^", "==", "!=", "<", ">", "<=", ">=", "and", "or", "unless"})


# The tree ----------------------------------------------------------------------------------------
# Each node checks its own parts when made, so writing a tree out can never produce syntax that
# its parts did not ask for: names are names, and every string is quoted and escaped.


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _check(pattern: re.Pattern, value: str, what: str) -> None:
    if not pattern.match(value):
        raise ValueError(f"not a PromQL {what}: {value!r}")


@dataclass(frozen=True)
class Matcher:
    label: str
    op: MatchOp
    value: str

    def __post_init__(self):
        _check(_LABEL_NAME, self.label, "label name")
        if self.op not in ("=", "!=", "=~", "!~"):
            raise ValueError(f"not a PromQL matcher: {self.op!r}")


@dataclass(frozen=True)
class Selector:
    """An instant vector selector: `name{matchers}`, or `{matchers}` without a literal name."""

    metric: str | None
    matchers: tuple[Matcher, ...] = ()

    def __post_init__(self):
        if self.metric is not None:
            _check(_METRIC_NAME, self.metric, "metric name")
        elif not self.matchers:
            raise ValueError("a selector needs a metric name or a matcher")


@dataclass(frozen=True)
class RangeSelector:
    selector: Selector
    seconds: int


@dataclass(frozen=True)
class Subquery:
    expr: "Expr"
    seconds: int
    step_seconds: int | None = None


@dataclass(frozen=True)
class StringLiteral:
    value: str


@dataclass(frozen=True)
class NumberLiteral:
    value: float


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple["Expr", ...]

    def __post_init__(self):
        _check(_FUNCTION_NAME, self.function, "function name")


@dataclass(frozen=True)
class Aggregation:
    op: str
    expr: "Expr"
    by: tuple[str, ...] = ()

    def __post_init__(self):
        if self.op not in AGGREGATION_OPS:
            raise ValueError(f"not a PromQL aggregation: {self.op!r}")
        for label in self.by:
            _check(_LABEL_NAME, label, "label name")


@dataclass(frozen=True)
class BinaryOp:
    op: str
    left: "Expr"
    right: "Expr"

    def __post_init__(self):
        if self.op not in BINARY_OPS:
            raise ValueError(f"not a PromQL binary operator: {self.op!r}")


Expr = Selector | RangeSelector | Subquery | StringLiteral | NumberLiteral | Call | Aggregation | BinaryOp


def render(expr: Expr) -> str:
    """The PromQL text of a tree."""
    match expr:
        case Selector(metric=metric, matchers=matchers):
            inside = ",".join(f'{m.label}{m.op}"{_escape(m.value)}"' for m in matchers)
            if metric is None:
                return f"{{{inside}}}"
            return f"{metric}{{{inside}}}" if inside else metric
        case RangeSelector(selector=selector, seconds=seconds):
            return f"{render(selector)}[{int(seconds)}s]"
        case Subquery(expr=inner, seconds=seconds, step_seconds=step):
            return f"({render(inner)})[{int(seconds)}s:{f'{int(step)}s' if step else ''}]"
        case StringLiteral(value=value):
            return f'"{_escape(value)}"'
        case NumberLiteral(value=value):
            return repr(float(value))
        case Call(function=function, args=args):
            return f"{function}({', '.join(render(a) for a in args)})"
        case Aggregation(op=op, expr=inner, by=by):
            grouping = f" by ({', '.join(by)})" if by else ""
            return f"{op}{grouping}({render(inner)})"
        case BinaryOp(op=op, left=left, right=right):
            return f"({render(left)}) {op} ({render(right)})"
    raise TypeError(f"not a PromQL node: {expr!r}")


# Project scoping ---------------------------------------------------------------------------------


def is_evalsite_metric(name: str) -> bool:
    return name.startswith(EVALSITE_METRIC_PREFIXES)


def may_select_evalsite_metrics(selector: Selector) -> bool:
    """Whether `selector` can match a series of evalsite's own. One without a literal name, or with
    a `__name__` matcher (`{__name__=~"vayu_.*"}`), may match any metric: it counts as evalsite's, so
    a name written as a matcher cannot slip past the scoping."""
    if selector.metric is None or any(m.label == NAME_LABEL for m in selector.matchers):
        return True
    return is_evalsite_metric(selector.metric)


def scope_selector(selector: Selector, project: str | None) -> Selector:
    if not may_select_evalsite_metrics(selector):
        return selector
    if project is None:
        raise OutOfProject(
            "evalsite's own metrics are kept per project, and this question was asked outside any project.",
            "Ask through the API with a project's key, or from the console.",
        )
    own = Matcher(PROJECT_LABEL, "=", project)
    for matcher in selector.matchers:
        # Only the caller's own exact matcher may stay (it is the one added anyway): any other, an
        # equality naming another project, a regex or a negation, would widen or move the scope.
        if matcher.label == PROJECT_LABEL and matcher != own:
            raise OutOfProject(
                f"You act in project '{project}': the metrics query reads only its series of evalsite's metrics.",
                f'Leave out the project filter; evalsite adds project="{project}" to its own metrics.',
                {"matcher": f"{matcher.label}{matcher.op}{matcher.value!r}"},
            )
    rest = tuple(m for m in selector.matchers if m != own)
    return replace(selector, matchers=(own, *rest))


def scope_to_project(expr: Expr, project: str | None) -> Expr:
    """`expr` with every selector that may name an evalsite metric restricted to `project` (a
    slug); OutOfProject when the expression asks for another project's series, or names evalsite's
    metrics with no project to scope them to. Every node kind is walked, so nothing nests past it."""
    match expr:
        case Selector():
            return scope_selector(expr, project)
        case RangeSelector():
            return replace(expr, selector=scope_selector(expr.selector, project))
        case Subquery() | Aggregation():
            return replace(expr, expr=scope_to_project(expr.expr, project))
        case Call():
            return replace(expr, args=tuple(scope_to_project(a, project) for a in expr.args))
        case BinaryOp():
            return replace(expr, left=scope_to_project(expr.left, project), right=scope_to_project(expr.right, project))
        case StringLiteral() | NumberLiteral():
            return expr
    raise TypeError(f"not a PromQL node: {expr!r}")


def selectors_of(expr: Expr) -> list[Selector]:
    """Every selector in `expr`, for checks that each one is scoped."""
    match expr:
        case Selector():
            return [expr]
        case RangeSelector():
            return [expr.selector]
        case Subquery() | Aggregation():
            return selectors_of(expr.expr)
        case Call():
            return [s for a in expr.args for s in selectors_of(a)]
        case BinaryOp():
            return selectors_of(expr.left) + selectors_of(expr.right)
    return []


# From a MetricsQuery -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PromqlPlan:
    expr: Expr
    promql: str
    unit: str
    is_rate: bool


def selector(query: MetricsQuery) -> Selector:
    return Selector(
        query.metric_name, tuple(Matcher(label, "=", value) for label, value in sorted(query.filters.items()))
    )


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


def build(query: MetricsQuery, info: MetricInfo | None, step: int, *, project: str | None) -> PromqlPlan:
    """The plan for a validated query, scoped to `project` (a slug; see the module's docstring).
    Scoping is the last thing done to the tree, and only the scoped tree is written out: no
    unscoped PromQL leaves this function."""
    expression: Expr = selector(query)
    rate = is_counter(query.metric_name, info)
    if rate:
        window = max(2 * step, MIN_RATE_WINDOW_SECONDS)
        expression = Call("rate", (RangeSelector(expression, window),))
    if query.aggregation != "none":
        expression = Aggregation(query.aggregation, expression)
    scoped = scope_to_project(expression, project)
    return PromqlPlan(expr=scoped, promql=render(scoped), unit=get_metric_unit(query.metric_name, info), is_rate=rate)
