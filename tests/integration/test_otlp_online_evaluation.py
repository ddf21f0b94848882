"""Issue 14's promise end to end: an agent instrumented with the OpenTelemetry SDK, pointed at
evalsite by the two standard environment variables and nothing else, shows up as a trace with its
tool calls and is judged by a rule on a real worker, without anyone calling evaluate."""

import json

import pytest
from django.db.models import Sum
from opentelemetry.sdk.trace.export import SpanExportResult

from apps.agentic.models import AgentEvaluation, OnlineEvaluationCount
from apps.agentic.rules import services as rule_services
from apps.traces.models import AgentTrace
from tests.agentic.factories import EvaluationRuleFactory
from tests.traces.otlp_support import Agent, otlp_env  # noqa: F401  (fixture)

from .worker import broker_for_tests, celery_worker, sender, wait_for

# transaction=True: the live server answers the exporter from another thread, and the worker is
# another process; both must see committed rows.
pytestmark = [pytest.mark.celery_integration, pytest.mark.django_db(transaction=True)]


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def run_agent(agent: Agent) -> None:
    with agent.tracer.start_as_current_span("invoke_agent K8sAgent") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.agent.name", "K8sAgent")
        root.set_attribute("gen_ai.conversation.id", "otel-online-1")
        root.set_attribute("gen_ai.input.messages", _messages("user", "List all Kubernetes clusters in Delhi"))
        root.set_attribute(
            "gen_ai.output.messages", _messages("assistant", "Found 2 clusters in Delhi: prod-01, dev-02")
        )
        with agent.tracer.start_as_current_span("execute_tool list_k8s_clusters") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "list_k8s_clusters")
            tool.set_attribute("gen_ai.tool.call.id", "call_1")
            tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"datacenter": "Delhi"}))
            tool.set_attribute("gen_ai.tool.call.result", json.dumps([{"name": "prod-01"}, {"name": "dev-02"}]))


def test_an_instrumented_agent_is_stored_and_judged_by_a_rule_on_the_worker(otlp_env, tmp_path, monkeypatch, settings):
    broker_url, options = broker_for_tests(tmp_path)
    app = sender(broker_url, options)
    # The live server runs the receiver in this process, where tasks would run eagerly: what the
    # rules queue must cross the broker to the worker instead.
    monkeypatch.setattr(
        rule_services,
        "_send",
        lambda rule_id, ids, countdown, project_id: app.send_task(
            "apps.agentic.tasks.evaluate_for_rule",
            args=[rule_id, ids],
            kwargs={"project_id": project_id},
            countdown=countdown,
        ),
    )
    # A short settle delay still goes through Celery's countdown, without a 10 s wait in a test.
    settings.EVALSITE_ONLINE_EVALUATION_OTLP_SETTLE_SECONDS = 1
    rule = EvaluationRuleFactory(name="otlp agents", source="otlp", sample_rate=1.0)
    EvaluationRuleFactory(name="rest only", source="rest")

    agent = Agent(service_name="k8s-agent")
    run_agent(agent)
    with celery_worker(broker_url, tmp_path, concurrency=1):
        assert agent.export(agent.spans()) is SpanExportResult.SUCCESS
        trace = AgentTrace.objects.get(session_id="otel-online-1")
        assert (trace.source, trace.agent_name, trace.status) == ("otlp", "K8sAgent", "completed")
        assert [(c.tool_name, c.call_id, c.tool_args) for c in trace.tool_calls.order_by("seq")] == [
            ("list_k8s_clusters", "call_1", {"datacenter": "Delhi"})
        ]
        assert wait_for(lambda: AgentEvaluation.objects.filter(trace=trace).exists(), timeout=90), (
            "no rule judged the OTLP trace on the worker"
        )

    evaluation = AgentEvaluation.objects.get(trace=trace)
    # The OTLP-only rule judged it; the REST-only rule did not match an OTLP trace.
    assert evaluation.rule == rule and evaluation.judge == "heuristic:v1"
    assert evaluation.overall_score is not None
    assert OnlineEvaluationCount.objects.aggregate(n=Sum("count"))["n"] == 1
