"""Trace ingestion has one writer: every door (REST, batch, OTLP) stores new rows through
apps.traces.ingestion.writer, and no module of the app reaches into another's private helpers
(OTLP once imported a private helper of traces/services.py, whose docstring said it was the only
writer). Read from the source, so a new door that bulk-writes on its own fails here."""

import ast
from pathlib import Path

import pytest

from apps.traces.ingestion import batch, rest, writer
from apps.traces.ingestion.otlp import assembly

APP = Path(__file__).resolve().parents[2] / "apps" / "traces"
WRITER = APP / "ingestion" / "writer.py"


def _modules():
    # Migrations are history: they keep the SQL they were written with.
    return [p for p in APP.rglob("*.py") if "migrations" not in p.parts]


def _receiver(node: ast.expr) -> str:
    return ast.unparse(node)


def test_only_the_writer_bulk_inserts_traces_and_tool_calls():
    offenders = []
    for path in _modules():
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            bulk = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "bulk_create"
                and _receiver(node.func.value) in ("AgentTrace.objects", "ToolCall.objects")
            )
            if bulk and path != WRITER:
                offenders.append(f"{path.relative_to(APP)}:{node.lineno}")
        if path != WRITER and '.copy(f"COPY {' in source and ("ToolCall" in source or "_TRACE_TABLE" in source):
            offenders.append(f"{path.relative_to(APP)}: COPY")
    assert offenders == []


def test_no_module_of_the_app_imports_a_private_name():
    offenders = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and any(a.name.startswith("_") for a in node.names):
                offenders.append(f"{path.relative_to(APP)}:{node.lineno}")
    assert offenders == []


@pytest.mark.parametrize("door", [rest, batch, assembly])
def test_each_door_stores_through_the_writer(door):
    # The doors hold the writer's functions themselves, not copies of them.
    used = {
        name
        for name in ("tool_calls_insert", "tool_calls_create", "traces_insert", "traces_completed_announce")
        if getattr(door, name, None) is getattr(writer, name)
    }
    assert used


def test_raw_sql_is_fenced_in_the_fast_path_module():
    # The app's hand-written SQL goes through apps.traces.fastpath: the one check of the database
    # vendor and the one cursor, so the ORM paths beside each fast path stay the rule.
    fastpath = APP / "fastpath.py"
    offenders = [
        f"{path.relative_to(APP)}"
        for path in _modules()
        if path != fastpath and (".vendor" in path.read_text() or ".cursor()" in path.read_text())
    ]
    assert offenders == []
    assert fastpath.read_text().count("connection.vendor") == 1
    assert fastpath.read_text().count(".cursor()") == 1
