"""The PromQL tree and its project scoping (apps.nlquery.promql), node by node: every selector that
may read evalsite's own metrics ends with exactly the caller's `project="<slug>"`, however it nests,
and a matcher written in the question cannot widen or move that scope. What these expressions
really return from Prometheus is test_project_isolation.py's business."""

from datetime import UTC, datetime, timedelta

import pytest

from apps.nlquery.errors import OutOfProject
from apps.nlquery.promql import (
    Aggregation,
    BinaryOp,
    Call,
    Matcher,
    NumberLiteral,
    RangeSelector,
    Selector,
    StringLiteral,
    Subquery,
    build,
    render,
    scope_to_project,
    selectors_of,
)
from apps.nlquery.schemas import MetricsQuery, TimeRange

OWN = Matcher("project", "=", "team-b")
SESSIONS = Selector("vayu_agent_sessions_total")
ACTIVE = Selector("vayu_agent_active_sessions")
NODE_CPU = Selector("node_cpu_seconds_total", (Matcher("mode", "=", "user"),))


def assert_scoped(expr, project="team-b"):
    """Every selector that can read evalsite's metrics has the caller's matcher and no other
    project matcher."""
    for selector in selectors_of(expr):
        project_matchers = [m for m in selector.matchers if m.label == "project"]
        if selector.metric is None or selector.metric.startswith(("vayu_", "evalsite_")):
            assert project_matchers == [Matcher("project", "=", project)], render(expr)


def test_an_evalsite_selector_gets_the_callers_project_first():
    scoped = scope_to_project(Selector("vayu_agent_sessions_total", (Matcher("status", "=", "failed"),)), "team-b")
    assert render(scoped) == 'vayu_agent_sessions_total{project="team-b",status="failed"}'


def test_infrastructure_selectors_are_left_as_they_are():
    assert scope_to_project(NODE_CPU, "team-b") == NODE_CPU
    assert render(NODE_CPU) == 'node_cpu_seconds_total{mode="user"}'
    # Without a project too: they belong to no project.
    assert scope_to_project(NODE_CPU, None) == NODE_CPU


@pytest.mark.parametrize(
    "expr",
    [
        # `or` / `unless` with an unscoped side: both sides are walked.
        BinaryOp("or", Selector("vayu_agent_sessions_total", (OWN,)), SESSIONS),
        BinaryOp("unless", SESSIONS, Selector("vayu_agent_sessions_total", (OWN,))),
        BinaryOp("+", NumberLiteral(0), BinaryOp("or", ACTIVE, NODE_CPU)),
        # A subquery around a function around a range.
        Call("max_over_time", (Subquery(Call("rate", (RangeSelector(SESSIONS, 300),)), 3600, 60),)),
        # label_replace rewriting the output label: the input selector is what is scoped.
        Call(
            "label_replace",
            (SESSIONS, StringLiteral("project"), StringLiteral("team-a"), StringLiteral(""), StringLiteral("")),
        ),
        Aggregation("sum", Call("rate", (RangeSelector(SESSIONS, 120),)), by=("project",)),
        # A name written as a matcher, or no name at all, may select evalsite's metrics.
        Selector(None, (Matcher("__name__", "=~", "vayu_.*"),)),
        Selector("up", (Matcher("__name__", "=", "vayu_agent_sessions_total"),)),
        Selector(None, (Matcher("agent_name", "=", "Planner"),)),
        Selector("evalsite_online_evaluations_total"),
    ],
    ids=[
        "or",
        "unless",
        "nested-or",
        "subquery",
        "label_replace",
        "sum-by",
        "name-regex",
        "name-eq",
        "nameless",
        "evalsite",
    ],
)
def test_every_nesting_is_scoped(expr):
    scoped = scope_to_project(expr, "team-b")
    assert_scoped(scoped)
    assert 'project="team-b"' in render(scoped)
    assert scope_to_project(scoped, "team-b") == scoped  # scoping twice changes nothing


def test_name_matchers_are_scoped_in_the_text_too():
    scoped = scope_to_project(Selector(None, (Matcher("__name__", "=~", "vayu_.*"),)), "team-b")
    assert render(scoped) == '{project="team-b",__name__=~"vayu_.*"}'


def test_the_callers_own_project_matcher_is_kept_once():
    scoped = scope_to_project(Selector("vayu_agent_sessions_total", (OWN, Matcher("status", "=", "ok"))), "team-b")
    assert scoped.matchers == (OWN, Matcher("status", "=", "ok"))


@pytest.mark.parametrize(
    "matcher",
    [
        Matcher("project", "=", "team-a"),
        Matcher("project", "=~", ".*"),
        Matcher("project", "=~", "team-b|team-a"),
        Matcher("project", "!=", "team-b"),
        Matcher("project", "!~", "team-b"),
        Matcher("project", "=", ""),
    ],
    ids=["other", "regex-all", "regex-both", "not-own", "not-regex", "empty"],
)
def test_any_other_project_matcher_is_refused(matcher):
    for expr in (
        Selector("vayu_agent_sessions_total", (matcher,)),
        BinaryOp(
            "or", Selector("vayu_agent_sessions_total", (OWN,)), Selector("vayu_agent_active_sessions", (matcher,))
        ),
        Call("max_over_time", (Subquery(Selector(None, (Matcher("__name__", "=~", "vayu_.*"), matcher)), 600),)),
    ):
        with pytest.raises(OutOfProject) as caught:
            scope_to_project(expr, "team-b")
        assert "team-b" in str(caught.value) and "team-a" not in str(caught.value)


def test_a_project_matcher_on_an_infrastructure_metric_is_the_exporters_business():
    # node_exporter's (or anyone's) own `project` label is not evalsite's: nothing to scope.
    foreign = Selector("gcp_instance_cpu", (Matcher("project", "=", "team-a"),))
    assert scope_to_project(foreign, "team-b") == foreign


def test_without_a_project_evalsite_metrics_are_refused():
    with pytest.raises(OutOfProject):
        scope_to_project(BinaryOp("or", NODE_CPU, SESSIONS), None)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Matcher('project"}', "=", "x"),
        lambda: Matcher("project", "=~~", "x"),
        lambda: Selector("vayu_x or up"),
        lambda: Selector(None, ()),
        lambda: Call("rate(up) or vector", ()),
        lambda: Aggregation("sum by (x) (up) or sum", SESSIONS),
        lambda: BinaryOp("or on()", SESSIONS, SESSIONS),
    ],
)
def test_nodes_refuse_parts_that_would_write_other_syntax(make):
    with pytest.raises(ValueError):
        make()


def test_values_are_escaped_so_they_cannot_close_the_matcher():
    escaped = render(scope_to_project(Selector("vayu_x", (Matcher("agent_name", "=", '"} or vayu_x{a="'),)), "b"))
    assert escaped == 'vayu_x{project="b",agent_name="\\"} or vayu_x{a=\\""}'


NOW = datetime(2026, 1, 21, 12, 30, tzinfo=UTC)


def _query(**kwargs):
    kwargs.setdefault("time_range", TimeRange(start_time=NOW - timedelta(hours=1), end_time=NOW))
    return MetricsQuery(**kwargs)


def test_build_scopes_counters_aggregations_and_filters():
    plan = build(
        _query(metric_name="vayu_agent_sessions_total", aggregation="sum", filters={"status": "failed"}),
        None,
        15,
        project="team-b",
    )
    assert plan.promql == 'sum(rate(vayu_agent_sessions_total{project="team-b",status="failed"}[120s]))'
    assert_scoped(plan.expr)


def test_build_keeps_the_known_infrastructure_promql():
    plan = build(_query(metric_name="process_cpu_seconds_total"), None, 15, project="team-b")
    assert plan.promql == "rate(process_cpu_seconds_total[120s])"
    plan = build(_query(metric_name="process_resident_memory_bytes", aggregation="max"), None, 15, project=None)
    assert plan.promql == "max(process_resident_memory_bytes)"


def test_build_refuses_a_filter_naming_another_project():
    with pytest.raises(OutOfProject):
        build(
            _query(metric_name="vayu_agent_active_sessions", filters={"project": "team-a"}), None, 15, project="team-b"
        )
