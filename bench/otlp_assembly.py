"""OTLP assembly on big traces: time and peak memory of one small export that lands on a lot of work.

    .venv/bin/python bench/otlp_assembly.py [--children 60000] [--calls 10000 20000] [--checkout PATH]

Creates a fresh PostgreSQL database per scenario, migrates it, prepares the trace in one child
process, then sends the small export in a fresh child process and prints its wall time and the
process's peak resident memory (ru_maxrss) next to the same process's size before the export:

- root after N waiting children: N tool spans of one trace arrive first (exports of 512), then the
  202-byte root span;
- late earlier span: a trace with N tool calls, then one 171-byte tool span that started in the
  middle of them.

The export goes through the OTLP mapping and the service (`otlp_spans_ingest`), as the view calls
it. --checkout runs the same scenarios with another checkout's code (e.g. /work/main) to compare.
The tool-call cap is raised above the number of calls for the late-span scenarios (a 20K-call
trace is beyond the default cap).
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path

from harness import DEFAULT_PG, ROOT, Database, peak_rss_mb

BASE_NS = 1_767_866_400_000_000_000


def _spans(trace_seed: int, n_tools: int, *, with_tools: bool = True):
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    def attr(key, value):
        return KeyValue(key=key, value=AnyValue(string_value=value))

    rng = random.Random(trace_seed)
    trace_id, root_id, late_id = rng.randbytes(16), rng.randbytes(8), rng.randbytes(8)

    def tool(i: int, start_ns: int):
        return Span(
            trace_id=trace_id,
            span_id=rng.randbytes(8),
            parent_span_id=root_id,
            name="execute_tool t",
            start_time_unix_nano=start_ns,
            end_time_unix_nano=start_ns + 1000,
            attributes=[
                attr("gen_ai.operation.name", "execute_tool"),
                attr("gen_ai.tool.name", f"t{i % 7}"),
                attr("gen_ai.tool.call.arguments", json.dumps({"page": i, "dc": "Delhi"})),
            ],
        )

    # Only the preparing process builds the tool spans: the measured one holds nothing but its export.
    tools = [tool(i, BASE_NS + (i + 1) * 1_000_000) for i in range(n_tools)] if with_tools else []
    root = Span(
        trace_id=trace_id,
        span_id=root_id,
        name="invoke_agent",
        start_time_unix_nano=BASE_NS,
        end_time_unix_nano=BASE_NS + 10**13,
        attributes=[attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.agent.name", "Bench")],
    )
    late = Span(
        trace_id=trace_id,
        span_id=late_id,
        parent_span_id=root_id,
        name="execute_tool late",
        start_time_unix_nano=BASE_NS + (n_tools // 2) * 1_000_000 + 500_000,
        end_time_unix_nano=BASE_NS + (n_tools // 2) * 1_000_000 + 600_000,
        attributes=[attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", "late")],
    )
    return root, tools, late


def _body(spans) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.extend(spans)
    return request.SerializeToString()


def _ingest(body: bytes) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from apps.traces.ingestion.otlp.mapping import export_records
    from apps.traces.ingestion.otlp.services import otlp_spans_ingest

    records, _refused, _reason = export_records(ExportTraceServiceRequest.FromString(body))
    otlp_spans_ingest(records=records)


def child(step: str, n: int) -> None:
    """Runs in a child process, in the checkout's directory, with DATABASE_URL set."""
    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    import django

    django.setup()
    root, tools, late = _spans(7, n, with_tools=step.startswith("prepare"))
    if step == "prepare-children":
        for i in range(0, len(tools), 512):
            _ingest(_body(tools[i : i + 512]))
        return
    if step == "prepare-trace":
        _ingest(_body([root, *tools]))
        return
    body = _body([root] if step == "root" else [late])
    before = peak_rss_mb()
    started = time.perf_counter()
    if os.environ.get("BENCH_PROFILE"):
        import cProfile

        cProfile.runctx("_ingest(body)", globals(), {"body": body}, os.environ["BENCH_PROFILE"])
    else:
        _ingest(body)
    elapsed = time.perf_counter() - started
    peak = peak_rss_mb()

    from apps.traces.models import AgentTrace

    trace = AgentTrace.objects.get()
    print(
        json.dumps(
            {
                "bytes": len(body),
                "seconds": round(elapsed, 3),
                "rss_before_mb": round(before),
                "peak_mb": round(peak),
                "tool_calls": trace.tool_calls.count(),
                "truncated": getattr(trace, "truncated", None),
                "dropped": getattr(trace, "dropped", None),
            }
        )
    )


def _run(checkout: Path, env: dict, step: str, n: int) -> str:
    result = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", step, "--n", str(n)],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode:
        return f"failed ({result.returncode}): {result.stderr.strip().splitlines()[-1] if result.stderr else ''}"
    return result.stdout.strip()


def scenario(args, checkout: Path, name: str, prepare: str, step: str, n: int, extra_env: dict) -> None:
    with Database(args.pg, f"bench_otlp_assembly_{uuid.uuid4().hex[:8]}") as db:
        env = {
            **os.environ,
            "DATABASE_URL": db.url,
            "DEBUG": "0",
            "SECRET_KEY": uuid.uuid4().hex,
            "PYTHONPATH": str(checkout),
            **extra_env,
        }
        # The checkout's own manage.py: its migrations, not this one's (harness.migrate runs this checkout's).
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=checkout, env=env, check=True)
        started = time.perf_counter()
        _run(checkout, env, prepare, n)
        prepared = time.perf_counter() - started
        print(f"{name:<38} {checkout}  (prepared in {prepared:.1f} s)\n    {_run(checkout, env, step, n)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default=DEFAULT_PG, help="PostgreSQL server DSN without a database")
    parser.add_argument("--children", type=int, default=60_000)
    parser.add_argument("--calls", type=int, nargs="*", default=[10_000, 20_000])
    parser.add_argument(
        "--checkout", type=Path, action="append", help="run with this checkout's code (repeatable); default this one"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.n)
        return
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; PostgreSQL {args.pg}")
    for checkout in args.checkout or [ROOT]:
        checkout = checkout.resolve()
        scenario(
            args,
            checkout,
            f"root after {args.children} waiting children",
            "prepare-children",
            "root",
            args.children,
            {},
        )
        for n in args.calls:
            scenario(
                args,
                checkout,
                f"late earlier span on a {n}-call trace",
                "prepare-trace",
                "late",
                n,
                {"EVALSITE_OTLP_MAX_TOOL_CALLS_PER_TRACE": str(n + 1000)},
            )


if __name__ == "__main__":
    main()
