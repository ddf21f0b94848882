"""Helpers for the OTLP receiver tests: a real OpenTelemetry SDK whose finished spans are kept in
memory, and the real OTLP/HTTP exporter configured the way an agent is (environment variables)."""

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from apps.core.services import api_key_create


class Agent:
    """A tracer provider that records spans; `export` sends a chosen list with the real exporter."""

    def __init__(self, service_name: str = "k8s-agent"):
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.tracer = self.provider.get_tracer("tests.agent")

    def spans(self):
        return list(self.memory.get_finished_spans())

    def export(self, spans, **exporter_kwargs) -> SpanExportResult:
        # No endpoint or headers here: the exporter reads OTEL_EXPORTER_OTLP_* as in an agent.
        exporter = OTLPSpanExporter(timeout=10, **exporter_kwargs)
        try:
            return exporter.export(spans)
        finally:
            exporter.shutdown()


@pytest.fixture
def otlp_env(live_server, transactional_db, monkeypatch):
    """The two environment variables an agent needs, pointing at a live evalsite."""
    _key, raw = api_key_create(username="otel-agent", staff=False, scopes=["ingest", "read"])
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", live_server.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{raw}")
    return live_server
