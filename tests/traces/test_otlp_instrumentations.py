"""Real instrumentations, real clients, a local fake OpenAI server: whatever spans they emit must
land as a sensible trace through POST /v1/traces."""

import json

import pytest
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent
from openai import OpenAI
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk.trace.export import SpanExportResult

from apps.traces.models import AgentTrace

from .otlp_support import Agent, otlp_env  # noqa: F401  (fixture)


@tool
def list_clusters(datacenter: str) -> str:
    """List the Kubernetes clusters of a datacenter."""
    return json.dumps([{"name": f"prod-{datacenter.lower()}-{i}", "status": "running"} for i in range(3)])


@pytest.fixture
def langchain_agent():
    agent = Agent(service_name="langgraph-service")
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=agent.provider)
    yield agent
    instrumentor.uninstrument()


def test_openinference_langgraph_agent(otlp_env, openai_server, langchain_agent):
    openai_server.push_tool_calls([{"name": "list_clusters", "arguments": {"datacenter": "Delhi"}}])
    openai_server.push_text("Delhi runs 3 clusters: prod-delhi-0, prod-delhi-1 and prod-delhi-2.")
    model = ChatOpenAI(model="gpt-4o-mini", base_url=openai_server.url, api_key="test-key", max_retries=0)
    graph = create_react_agent(model, [list_clusters])
    result = graph.invoke({"messages": [("user", "List the clusters in Delhi")]})
    assert "prod-delhi-2" in result["messages"][-1].content

    spans = langchain_agent.spans()
    kinds = {s.attributes.get("openinference.span.kind") for s in spans}
    assert {"CHAIN", "LLM", "TOOL"} <= kinds
    # Children first and the root last, in two exports, as a BatchSpanProcessor may send them.
    assert langchain_agent.export(spans[: len(spans) // 2]) is SpanExportResult.SUCCESS
    assert not AgentTrace.objects.exists()
    assert langchain_agent.export(spans[len(spans) // 2 :]) is SpanExportResult.SUCCESS

    trace = AgentTrace.objects.get()
    assert trace.source == "otlp" and trace.status == "completed"
    assert trace.agent_name == "langgraph-service"
    assert trace.user_query == "List the clusters in Delhi"
    assert trace.final_response == "Delhi runs 3 clusters: prod-delhi-0, prod-delhi-1 and prod-delhi-2."
    call = trace.tool_calls.get()
    assert (call.tool_name, call.call_id, call.success) == ("list_clusters", "call_0", True)
    # OpenInference records a one-argument tool's input as the bare value, not the arguments object.
    assert call.tool_args == {"input": "Delhi"}
    assert call.tool_result == [{"name": f"prod-delhi-{i}", "status": "running"} for i in range(3)]
    otel = trace.metadata["otel"]
    assert otel["models"] and all("gpt-4o-mini" in m for m in otel["models"])
    assert otel["usage"] == {"input_tokens": 22, "output_tokens": 14}  # two model calls of 11 + 7 tokens


@pytest.fixture
def openai_instrumented(monkeypatch):
    # The latest GenAI conventions with content on the span: gen_ai.input/output.messages.
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only")
    agent = Agent(service_name="support-bot")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=agent.provider)
    yield agent
    instrumentor.uninstrument()


def test_openai_v2_instrumentation_inside_an_agent_span(otlp_env, openai_server, openai_instrumented):
    agent = openai_instrumented
    openai_server.push_text("Your cluster is healthy.")
    client = OpenAI(base_url=openai_server.url, api_key="test-key", max_retries=0)
    with agent.tracer.start_as_current_span("invoke_agent support") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.agent.name", "SupportBot")
        root.set_attribute("gen_ai.conversation.id", "support-42")
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Is my cluster healthy?"}]
        )
    assert reply.choices[0].message.content == "Your cluster is healthy."

    spans = agent.spans()
    chat = next(s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat")
    assert chat.parent is not None
    assert agent.export(spans) is SpanExportResult.SUCCESS
    trace = AgentTrace.objects.get()
    assert (trace.session_id, trace.agent_name, trace.status) == ("support-42", "SupportBot", "completed")
    # The agent span carries no messages: query and answer come from the model call under it.
    assert (trace.user_query, trace.final_response) == ("Is my cluster healthy?", "Your cluster is healthy.")
    otel = trace.metadata["otel"]
    assert otel["models"] == ["gpt-4o-mini"]
    assert otel["usage"] == {"input_tokens": 11, "output_tokens": 7}
    assert trace.tool_calls.count() == 0


def test_openai_v2_instrumentation_alone(otlp_env, openai_server, openai_instrumented):
    """A bare model call, no agent span: its own span is the root and makes a one-step trace."""
    agent = openai_instrumented
    openai_server.push_text("Restarting pods drains them first.")
    client = OpenAI(base_url=openai_server.url, api_key="test-key", max_retries=0)
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "How do restarts work?"}])
    assert agent.export(agent.spans()) is SpanExportResult.SUCCESS
    trace = AgentTrace.objects.get()
    assert trace.agent_name == "support-bot" and trace.status == "completed"
    assert (trace.user_query, trace.final_response) == ("How do restarts work?", "Restarting pods drains them first.")
    assert trace.metadata["otel"]["usage"] == {"input_tokens": 11, "output_tokens": 7}
