"""Trace ingestion: three doors and one writer.

- rest.py: the per-step lifecycle (POST /traces, …/intent, …/tool-calls, …/complete);
- batch.py: whole traces (POST /traces/batch);
- otlp/: OpenTelemetry spans (POST /v1/traces): decode.py and mapping.py read the export,
  services.py stores the spans and assembles traces, assembly.py builds and merges them;
- writer.py: the one writer of new AgentTrace and ToolCall rows, which all three call.

Every door records what came in and what became of it in the ingestion ledger (apps.traces.ledger).
"""
