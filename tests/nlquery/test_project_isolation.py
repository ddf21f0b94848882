"""A key acts in its own project only, the NL metrics query included: the attacks of project B's
key on project A's evalsite series, against a real Prometheus (the Debian package's binary) holding
both projects' vayu_* series (backfilled with promtool), an evalsite metric without a project label
and a node_exporter-like metric. Every query goes through a recording proxy (tests.fakes.prometheus'
FakeGrafana with an upstream), so the tests also see each PromQL that reached Prometheus.

Each test asserts what B learns (only B's series, or an error answer and no query) and, where it
matters, that the same expression unscoped would have returned A's series: the attack is real."""

import shutil
import time
import urllib.parse

import pytest

from apps.core.models import ProjectRole
from apps.core.projects.resolution import SESSION_KEY
from apps.nlquery.backends import PrometheusBackend
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
    render,
    scope_to_project,
)
from tests.core.factories import MembershipFactory, ProjectFactory, UserFactory, project_key_client
from tests.fakes.prometheus import FakeGrafana, PrometheusProcess
from tests.nlquery.helpers import NO_BINARY

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]

URL = "/api/v1/metrics-query"
TOKEN = "glsa_isolation-token"
ACTIVE = {"team-a": 7, "team-b": 2}  # vayu_agent_active_sessions, constant per project
AGENTS = {"team-a": "secret-planner-a", "team-b": "helper-b"}


def two_projects_history(end: float) -> str:
    """OpenMetrics for the 50 minutes before `end`, every 15 s: what evalsite's /metrics would have
    shown for two projects, plus series that carry no project label."""
    start = int(end) - 50 * 60
    steps = range(50 * 60 // 15 + 1)
    families = {
        "# TYPE vayu_agent_sessions counter": [
            f'vayu_agent_sessions_total{{agent_name="{AGENTS[p]}",status="completed",project="{p}"}} '
            f"{i * (3 if p == 'team-a' else 1)} {start + 15 * i}"
            for p in ACTIVE
            for i in steps
        ],
        "# TYPE vayu_agent_active_sessions gauge": [
            f'vayu_agent_active_sessions{{agent_name="{AGENTS[p]}",project="{p}"}} {n} {start + 15 * i}'
            for p, n in ACTIVE.items()
            for i in steps
        ],
        "# TYPE evalsite_ingestion counter": [
            f'evalsite_ingestion_total{{source="batch",outcome="stored",project="{p}"}} {i * n} {start + 15 * i}'
            for p, n in ACTIVE.items()
            for i in steps
        ],
        "# TYPE node_cpu_seconds counter": [
            f'node_cpu_seconds_total{{cpu="0",mode="user"}} {i * 10} {start + 15 * i}' for i in steps
        ],
    }
    return "\n".join(line for header, samples in families.items() for line in (header, *samples)) + "\n# EOF\n"


@pytest.fixture(scope="module")
def two_projects_prometheus():
    if shutil.which("prometheus") is None or shutil.which("promtool") is None:
        pytest.skip(NO_BINARY)
    server = PrometheusProcess(history=two_projects_history(time.time() - 60))
    try:
        server.wait_ready()
        server.wait_for_samples("vayu_agent_active_sessions", min_series=2)
        server.wait_for_samples("node_cpu_seconds_total")
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def recorder(settings, two_projects_prometheus):
    """PROMETHEUS_URL is a recording proxy in front of the real Prometheus."""
    proxy = FakeGrafana(upstream=two_projects_prometheus.url)
    settings.PROMETHEUS_URL = proxy.url
    yield proxy
    proxy.close()


def queries_sent(proxy: FakeGrafana) -> list[str]:
    return [
        urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)["query"][0]
        for path, _ in proxy.requests
        if path.startswith("/api/v1/query_range")
    ]


@pytest.fixture
def keys(db):
    a, b = ProjectFactory(slug="team-a"), ProjectFactory(slug="team-b")
    return {
        "team-a": project_key_client(a, role=ProjectRole.ADMIN, username="alice"),
        "team-b": project_key_client(b, role=ProjectRole.EDITOR, username="bob"),
    }


def ask(client, question: str) -> dict:
    response = client.post(URL, {"query": question}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def projects_in(body: dict) -> set:
    return {p["labels"].get("project") for p in body["result"]["datapoints"]}


def test_each_key_reads_only_its_own_projects_series(keys, recorder):
    for project, client in keys.items():
        body = ask(client, "Show vayu_agent_active_sessions for the last hour")
        assert body["error"] is None, body["error"]
        result = body["result"]
        assert result["promql"] == f'vayu_agent_active_sessions{{project="{project}"}}'
        assert result["datapoint_count"] > 0
        assert projects_in(body) == {project}
        assert {p["value"] for p in result["datapoints"]} == {ACTIVE[project]}
        assert {p["labels"]["agent_name"] for p in result["datapoints"]} == {AGENTS[project]}
    # What ran is what the answers showed, nothing unscoped besides.
    assert queries_sent(recorder) == [
        'vayu_agent_active_sessions{project="team-a"}',
        'vayu_agent_active_sessions{project="team-b"}',
    ]


def test_aggregations_and_rates_add_up_the_callers_series_only(keys, recorder):
    total = ask(keys["team-b"], "Total vayu_agent_active_sessions for the last hour")
    assert total["result"]["promql"] == 'sum(vayu_agent_active_sessions{project="team-b"})'
    assert {p["value"] for p in total["result"]["datapoints"]} == {ACTIVE["team-b"]}  # not 7 + 2
    rate = ask(keys["team-b"], "Total vayu_agent_sessions_total for the last hour")
    assert rate["result"]["promql"] == 'sum(rate(vayu_agent_sessions_total{project="team-b"}[120s]))'
    # B's counter grows by 1 per 15 s, A's by 3: B's rate alone is 1/15.
    assert rate["result"]["statistics"]["max"] == pytest.approx(1 / 15)
    assert "secret-planner-a" not in str(total) + str(rate)


def test_a_filter_naming_another_project_is_an_error_answer_and_runs_nothing(keys, recorder):
    for question in (
        'Show vayu_agent_active_sessions{project="team-a"} for the last hour',
        "Show vayu_agent_active_sessions with project=team-a for the last hour",
        'Show vayu_agent_sessions_total{project=""} for the last hour',
    ):
        body = ask(keys["team-b"], question)
        assert body["result"] is None
        assert body["error"]["error_type"] == "invalid_query"
        assert "team-b" in body["error"]["message"] and "team-a" not in body["error"]["message"]
    assert queries_sent(recorder) == []


def test_the_callers_own_project_filter_is_accepted_once(keys, recorder):
    body = ask(keys["team-b"], 'Show vayu_agent_active_sessions{project="team-b"} for the last hour')
    assert body["error"] is None, body["error"]
    assert body["result"]["promql"] == 'vayu_agent_active_sessions{project="team-b"}'
    assert projects_in(body) == {"team-b"}


@pytest.mark.parametrize(
    "question",
    [
        'Show vayu_agent_active_sessions{project=~".*"} for the last hour',
        'Show vayu_agent_active_sessions{project!="team-b"} for the last hour',
        'Show {__name__=~"vayu_.*"} for the last hour',
    ],
)
def test_regex_and_negated_matchers_are_refused_before_any_query(keys, recorder, question):
    body = ask(keys["team-b"], question)
    assert body["result"] is None and body["error"]["error_type"] == "unsupported_operation"
    assert queries_sent(recorder) == []


@pytest.mark.parametrize(
    "question",
    [
        "Show vayu_agent_active_sessions or vayu_agent_sessions_total for the last hour",
        "Show vayu_agent_active_sessions unless vayu_agent_active_sessions for the last hour",
        'Show node_cpu_seconds_total{__name__="vayu_agent_active_sessions"} for the last hour',
        "Show vayu_agent_active_sessions for job evalsite or project team-a for the last hour",
    ],
)
def test_operators_and_name_matchers_in_a_question_do_not_reach_another_project(keys, recorder, question):
    body = ask(keys["team-b"], question)
    if body["error"] is None:
        # An aggregation ("total" in a metric's name reads as one) leaves no labels: its values say
        # whose series it added up, and B's alone are 2 (A and B together: 9).
        assert projects_in(body) <= {"team-b", None}
        assert {p["value"] for p in body["result"]["datapoints"]} <= {ACTIVE["team-b"]}
    assert AGENTS["team-a"] not in str(body)
    sent = queries_sent(recorder)
    assert sent and all('project="team-b"' in q for q in sent), sent
    assert all(" or " not in q and " unless " not in q and "team-a" not in q for q in sent), sent


# The LLM path: whatever the model answers becomes a MetricsQuery first, then the same tree.


def test_an_llm_answer_cannot_move_the_scope(keys, recorder, openai_server):
    openai_server.push_json({"metric_name": "vayu_agent_active_sessions", "filters": {"project": "team-a"}})
    refused = ask(keys["team-b"], "How many sessions are active in team-a?")
    assert refused["error"]["error_type"] == "invalid_query" and refused["result"] is None

    openai_server.push_json({"metric_name": '{__name__=~"vayu_.*"}'})
    assert ask(keys["team-b"], "Everything of vayu")["error"]["error_type"] == "parsing_error"

    openai_server.push_json({"metric_name": "vayu_agent_active_sessions", "filters": {"project=~": ".*"}})
    assert ask(keys["team-b"], "Active sessions anywhere")["error"]["error_type"] == "parsing_error"

    openai_server.push_json(
        {"metric_name": "node_cpu_seconds_total", "filters": {"__name__": "vayu_agent_active_sessions"}}
    )
    renamed = ask(keys["team-b"], "Active sessions, by another name")
    # Scoped as an evalsite selector (its __name__ matcher may name one); Prometheus then refuses
    # a name set twice. Either way nothing of A's comes back.
    assert renamed["result"] is None and renamed["error"]["error_type"] == "invalid_query"
    assert queries_sent(recorder)[-1] == (
        'rate(node_cpu_seconds_total{project="team-b",__name__="vayu_agent_active_sessions"}[120s])'
    )

    openai_server.push_json({"metric_name": "vayu_agent_active_sessions"})
    own = ask(keys["team-b"], "Active sessions")
    assert own["error"] is None and projects_in(own) == {"team-b"}
    assert all("team-a" not in q for q in queries_sent(recorder))


# The tree itself, written out and run: expressions no question can produce today (binary
# operators, subqueries, label_replace) are scoped the same way, and really return B's series only.


def _matrix(url: str, expr) -> list[dict]:
    backend = PrometheusBackend(url, timeout=10)
    try:
        end = time.time()
        from datetime import UTC, datetime

        return backend.query_range(
            render(expr), datetime.fromtimestamp(end - 1800, UTC), datetime.fromtimestamp(end, UTC), 60
        )
    finally:
        backend.close()


ACTIVE_SEL = Selector("vayu_agent_active_sessions")
ATTACKS = {
    "or": BinaryOp("or", Selector("vayu_agent_active_sessions", (Matcher("project", "=", "team-b"),)), ACTIVE_SEL),
    "unless": BinaryOp("unless", ACTIVE_SEL, Selector("node_cpu_seconds_total")),
    "subquery": Call("max_over_time", (Subquery(ACTIVE_SEL, 600, 60),)),
    "label_replace": Call(
        "label_replace",
        (ACTIVE_SEL, StringLiteral("project"), StringLiteral("team-b"), StringLiteral(""), StringLiteral("")),
    ),
    "name-regex": Selector(None, (Matcher("__name__", "=~", "vayu_.*"),)),
    "sum-by-project": Aggregation(
        "sum", Call("rate", (RangeSelector(Selector("vayu_agent_sessions_total"), 300),)), by=("project",)
    ),
    "arithmetic": BinaryOp("*", ACTIVE_SEL, NumberLiteral(1)),
}


@pytest.mark.parametrize("name", ATTACKS)
def test_scoped_trees_return_only_the_callers_series_from_prometheus(two_projects_prometheus, name):
    attack = ATTACKS[name]
    unscoped = _matrix(two_projects_prometheus.url, attack)
    # Unscoped, A's series come back (or, for label_replace, A's values under B's name): a real leak.
    assert any(s["metric"].get("project") == "team-a" for s in unscoped) or {
        float(v) for s in unscoped for _, v in s["values"]
    } >= {ACTIVE["team-a"]}
    scoped = _matrix(two_projects_prometheus.url, scope_to_project(attack, "team-b"))
    assert scoped, render(scope_to_project(attack, "team-b"))
    assert {s["metric"].get("project") for s in scoped} <= {"team-b", None}
    if name in ("label_replace", "subquery", "arithmetic", "or"):
        assert {float(v) for s in scoped for _, v in s["values"]} == {ACTIVE["team-b"]}


def test_a_tree_with_another_projects_matcher_is_refused_whatever_its_depth():
    for matcher in (Matcher("project", "=~", ".*"), Matcher("project", "=", "team-a")):
        attack = BinaryOp(
            "or",
            ACTIVE_SEL,
            Call("max_over_time", (Subquery(Selector("vayu_agent_active_sessions", (matcher,)), 600),)),
        )
        with pytest.raises(OutOfProject):
            scope_to_project(attack, "team-b")


# What carries no project label.


def test_infrastructure_metrics_are_deployment_wide(keys, recorder):
    for client in keys.values():
        body = ask(client, "Show node_cpu_seconds_total for the last hour")
        assert body["error"] is None, body["error"]
        assert body["result"]["promql"] == "rate(node_cpu_seconds_total[120s])"
        assert body["result"]["datapoint_count"] > 0


def test_the_ingestion_ledger_series_are_read_per_project(keys, recorder, default_key_api):
    # evalsite_ingestion_total carries the project (the ledger is per project): each key reads its
    # own project's rate, and default's key, whose project sent nothing, reads nothing.
    for slug, client in keys.items():
        body = ask(client, "Show evalsite_ingestion_total for the last hour")
        assert body["error"] is None, body["error"]
        assert f'project="{slug}"' in body["result"]["promql"]
        # The project's own rate (n per 15 s), never the sum over both projects (9 per 15 s); the
        # window's first points see part of the range, so only the top is the full rate.
        values = [point["value"] for point in body["result"]["datapoints"]]
        assert max(values) == pytest.approx(ACTIVE[slug] / 15, rel=0.02), (slug, values)
    body = ask(default_key_api, "Show evalsite_ingestion_total for the last hour")
    assert body["result"]["is_empty"] is True and body["result"]["datapoints"] == []


# The Grafana backend runs the same scoped PromQL.


def test_grafana_backend_is_scoped_the_same_way(settings, two_projects_prometheus, keys):
    grafana = FakeGrafana(uid="prom", token=TOKEN, upstream=two_projects_prometheus.url)
    settings.PROMETHEUS_URL = ""
    settings.GRAFANA_URL, settings.GRAFANA_DATASOURCE_UID, settings.GRAFANA_TOKEN = grafana.url, "prom", TOKEN
    try:
        body = ask(keys["team-b"], "Show vayu_agent_active_sessions for the last hour")
        assert body["error"] is None, body["error"]
        assert body["result"]["promql"] == 'vayu_agent_active_sessions{project="team-b"}'
        assert projects_in(body) == {"team-b"}
        refused = ask(keys["team-b"], 'Show vayu_agent_active_sessions{project="team-a"} for the last hour')
        assert refused["error"]["error_type"] == "invalid_query"
        sent = [
            urllib.parse.parse_qs(urllib.parse.urlsplit(p).query)["query"][0]
            for p, _ in grafana.requests
            if "/api/v1/query_range" in p
        ]
        assert sent == ['vayu_agent_active_sessions{project="team-b"}']
        infra = ask(keys["team-b"], "Show node_cpu_seconds_total for the last hour")
        assert infra["result"]["datapoint_count"] > 0
    finally:
        grafana.close()


# The console page: a person asks in the project chosen with the switcher.


def test_the_page_answers_in_the_session_project(client, keys, recorder):
    user = UserFactory(username="carol")
    MembershipFactory(project=ProjectFactory(slug="team-a"), user=user, role=ProjectRole.EDITOR)
    MembershipFactory(project=ProjectFactory(slug="team-b"), user=user, role=ProjectRole.EDITOR)
    client.force_login(user)
    for project in ("team-b", "team-a"):
        session = client.session
        session[SESSION_KEY] = project
        session.save()
        html = client.get(
            "/metrics-query/", {"q": "Show vayu_agent_active_sessions for the last hour"}
        ).content.decode()
        assert 'id="query-error"' not in html
        assert f"vayu_agent_active_sessions{{project=&quot;{project}&quot;}}" in html
        other = "team-a" if project == "team-b" else "team-b"
        assert AGENTS[project] in html and AGENTS[other] not in html
