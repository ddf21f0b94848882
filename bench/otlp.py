"""OTLP/HTTP ingestion throughput: protobuf exports into gunicorn on PostgreSQL.

    .venv/bin/python bench/otlp.py [--requests 200] [--spans-per-request 512] [--tools 10] [--clients 2]
    .venv/bin/python bench/otlp.py --phoenix [--phoenix-requests 40] [--phoenix-venv /tmp/phoenix-venv]
    .venv/bin/python bench/otlp.py --redaction ...   (PII redaction on for the key's project, every detector)

Creates a fresh PostgreSQL database, migrates it, starts gunicorn and sends pre-built protobuf
ExportTraceServiceRequests from client processes (keep-alive, one request at a time each, a 429/503
retried after its Retry-After as exporters do). Each trace is an agent span and --tools execute_tool
spans, children first (the order the SDK ends and exports them); traces run across request
boundaries, so some children arrive in one request and their root in the next.

A span counts once it is stored and readable: after the run every span id must be in the span
table exactly once, every trace completed with its --tools tool calls in start order. The same rows
are then loaded with psycopg COPY into empty tables, and both rates, their ratio, the CPU per span
of the server and of PostgreSQL, and the load average are printed (the machine may be shared).

--phoenix also runs the same kind of load against Arize Phoenix from a separate virtual environment
(`python3.11 -m venv /tmp/phoenix-venv && /tmp/phoenix-venv/bin/pip install arize-phoenix asyncpg`),
`phoenix serve` on its own fresh PostgreSQL database, counting a span when it is in Phoenix's spans
table, and prints both rates and their ratio.
"""

import argparse
import http.client
import json
import multiprocessing as mp
import os
import random
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from harness import (
    Database,
    Gunicorn,
    add_database_args,
    backend_pids,
    cpu_seconds,
    database_from_args,
    group_pids,
    prepare,
    redaction_enable,
    wait_http,
)

DATACENTERS = ["Delhi", "Mumbai", "Chennai", "Bangalore", "Pune"]


def _attr(key: str, value) -> KeyValue:
    if isinstance(value, str):
        return KeyValue(key=key, value=AnyValue(string_value=value))
    return KeyValue(key=key, value=AnyValue(int_value=value))


# --usage: each trace has one model call (an LLM span with gen_ai.usage.* tokens) of these models in
# turn (two priced by the shipped prices, one without a price), so every trace is priced and adds to
# its day's spend.
USAGE_MODELS = ("gpt-4o", "gpt-4o-mini-2024-07-18", "house-model")


def make_spans(n_traces: int, n_tools: int, seed: int, usage: bool = False) -> list[tuple[Span, dict]]:
    """(span, expectation) for n_traces traces, children before their agent span."""
    rng = random.Random(seed)
    base_ns = int(datetime(2026, 1, 8, 10, 0, tzinfo=UTC).timestamp() * 1e9)
    out = []
    for t in range(n_traces):
        trace_id = rng.randbytes(16)
        root_id = rng.randbytes(8)
        dc = DATACENTERS[t % len(DATACENTERS)]
        start = base_ns + t * 1_000_000_000
        for c in range(n_tools):
            tool_start = start + (c + 1) * 100_000_000
            span = Span(
                trace_id=trace_id,
                span_id=rng.randbytes(8),
                parent_span_id=root_id,
                name=f"execute_tool tool_{c % 4}",
                kind=Span.SPAN_KIND_INTERNAL,
                start_time_unix_nano=tool_start,
                end_time_unix_nano=tool_start + (10 + c) * 1_000_000,
                attributes=[
                    _attr("gen_ai.operation.name", "execute_tool"),
                    _attr("gen_ai.tool.name", f"tool_{c % 4}"),
                    _attr("gen_ai.tool.call.id", f"call-{c}"),
                    _attr(
                        "gen_ai.tool.call.arguments",
                        json.dumps({"datacenter": dc, "page": c, "filter": {"status": "running"}}),
                    ),
                    _attr(
                        "gen_ai.tool.call.result",
                        json.dumps(
                            [{"name": f"prod-{t}-{c}-{k}", "status": "running", "cpu": 0.5 * k} for k in range(3)]
                        ),
                    ),
                ],
            )
            if c % 9 == 8:
                span.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message="tool failed"))
            out.append((span, {"trace": trace_id.hex(), "tool": c}))
        root = Span(
            trace_id=trace_id,
            span_id=root_id,
            name="invoke_agent",
            kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=start,
            end_time_unix_nano=start + 2_000_000_000,
            attributes=[
                _attr("gen_ai.operation.name", "invoke_agent"),
                _attr("gen_ai.agent.name", f"Agent{t % 3}"),
                _attr(
                    "gen_ai.input.messages",
                    json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": f"List all clusters in {dc}"}]}]
                    ),
                ),
                _attr(
                    "gen_ai.output.messages",
                    json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": f"Found 3 clusters in {dc}."}]}]
                    ),
                ),
                _attr("evalsite.intent", "list_k8s_cluster"),
                _attr("evalsite.resource_type", "k8s_cluster"),
                _attr("evalsite.operation", "list"),
            ],
        )
        if usage:
            # One model call per trace: only LLM spans carry a model and tokens (the OTLP mapping).
            chat_start = start + (n_tools + 1) * 100_000_000
            chat = Span(
                trace_id=trace_id,
                span_id=rng.randbytes(8),
                parent_span_id=root_id,
                name="chat",
                kind=Span.SPAN_KIND_CLIENT,
                start_time_unix_nano=chat_start,
                end_time_unix_nano=chat_start + 50_000_000,
                attributes=[
                    _attr("gen_ai.operation.name", "chat"),
                    _attr("gen_ai.request.model", USAGE_MODELS[t % len(USAGE_MODELS)]),
                    _attr("gen_ai.usage.input_tokens", 1000 + t % 500),
                    _attr("gen_ai.usage.output_tokens", 100 + t % 50),
                ],
            )
            out.append((chat, {"trace": trace_id.hex(), "tool": None}))
        out.append((root, {"trace": trace_id.hex(), "tool": None}))
    return out


def make_bodies(spans: list[tuple[Span, dict]], per_request: int) -> list[bytes]:
    bodies = []
    for i in range(0, len(spans), per_request):
        request = ExportTraceServiceRequest()
        resource_spans = request.resource_spans.add()
        resource_spans.resource.attributes.append(_attr("service.name", "bench-agent"))
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name = "bench"
        scope_spans.spans.extend(span for span, _ in spans[i : i + per_request])
        bodies.append(request.SerializeToString())
    return bodies


def client_worker(port: int, path: str, key: str | None, bodies: list[bytes], start_evt, out_q):
    headers = {"Content-Type": "application/x-protobuf", "Connection": "keep-alive"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    start_evt.wait()
    errors, retries = [], 0
    for body in bodies:
        while True:
            try:
                conn.request("POST", path, body=body, headers=headers)
                response = conn.getresponse()
                payload = response.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                errors.append(repr(exc))
                break
            if response.status in (429, 502, 503, 504):
                retries += 1
                time.sleep(float(response.getheader("Retry-After") or 1))
                continue
            if response.status != 200:
                errors.append(f"{response.status}: {payload[:200]!r}")
            elif payload not in (b"", b"{}"):
                # A partial_success answer: some spans were refused.
                errors.append(f"partial success: {payload[:200]!r}")
            break
    conn.close()
    out_q.put((errors, retries, time.perf_counter()))


_start_events: list = []


def send(port: int, path: str, key: str | None, bodies: list[bytes], clients: int):
    ctx = mp.get_context("spawn")
    start_evt, out_q = ctx.Event(), ctx.Queue()
    # Consecutive bodies to different clients: a trace cut by a request boundary arrives in two
    # requests sent concurrently.
    shares = [bodies[i::clients] for i in range(clients)]
    procs = [ctx.Process(target=client_worker, args=(port, path, key, share, start_evt, out_q)) for share in shares]
    for p in procs:
        p.start()
    time.sleep(1.5)
    started = time.perf_counter()
    start_evt.set()
    # Kept alive until the run ends: a collected Event unlinks its semaphore, and a client still
    # starting on a loaded machine then dies unpickling it (and the run waits for it forever).
    _start_events.append(start_evt)
    return procs, out_q, started


def collect(procs, out_q, started):
    results = [out_q.get(timeout=3600) for _ in procs]
    for p in procs:
        p.join()
    errors = [e for r in results for e in r[0]]
    return errors, sum(r[1] for r in results), max(r[2] for r in results) - started


def verify(dsn: str, expected: list[tuple[Span, dict]], n_traces: int, n_tools: int) -> str:
    """Every span stored once and readable: raise if not."""
    with psycopg.connect(dsn) as conn:
        spans, distinct = conn.execute(
            "SELECT count(*), count(DISTINCT (otel_trace_id, span_id)) FROM traces_otlpspan"
        ).fetchone()
        waiting = conn.execute("SELECT count(*) FROM traces_otlpspan WHERE payload IS NOT NULL").fetchone()[0]
        traces, good = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE t.status IN ('completed', 'failed') AND t.tool_call_count = %s "
            # seq is a sort key (OTLP spaces the values for late calls): n distinct values, in start order.
            "  AND t.source = 'otlp' AND (SELECT count(DISTINCT c.seq) = %s AND bool_and(c.ordered) FROM "
            "  (SELECT seq, timestamp >= coalesce(lag(timestamp) OVER (ORDER BY seq), timestamp) AS ordered "
            "   FROM traces_toolcall WHERE trace_id = t.id) c)) FROM traces_agenttrace t",
            (n_tools, n_tools),
        ).fetchone()
        calls, distinct_calls = conn.execute(
            "SELECT count(*), count(DISTINCT (c.trace_id, c.call_id)) FROM traces_toolcall c"
        ).fetchone()
        stored_ids = {row[0] for row in conn.execute("SELECT otel_trace_id FROM traces_agenttrace")}
    expected_traces = {e["trace"] for _, e in expected}
    problems = []
    if (spans, distinct) != (len(expected), len(expected)):
        problems.append(f"span table holds {spans} rows ({distinct} distinct) for {len(expected)} spans")
    if waiting:
        problems.append(f"{waiting} spans still waiting for their root")
    if (traces, good) != (n_traces, n_traces) or stored_ids != expected_traces:
        problems.append(f"{good}/{traces} complete traces, expected {n_traces}")
    if (calls, distinct_calls) != (n_traces * n_tools, n_traces * n_tools):
        problems.append(f"{calls} tool calls ({distinct_calls} distinct), expected {n_traces * n_tools}")
    if problems:
        raise SystemExit("stored spans do not match: " + "; ".join(problems))
    return (
        f"all {len(expected)} spans stored exactly once: {n_traces} traces completed, each with "
        f"{n_tools} tool calls in start order"
    )


def copy_same_rows(dsn: str) -> tuple[float, int]:
    """Reload exactly the rows the API stored, with COPY into emptied tables. Returns (seconds, rows)."""
    with psycopg.connect(dsn) as conn:
        tables = {}
        for table in ("traces_agenttrace", "traces_toolcall", "traces_otlpspan"):
            # A query, not the table: traces_toolcall is partitioned on PostgreSQL (traces.0016), and
            # COPY … TO refuses a partitioned table.
            with conn.cursor().copy(f"COPY (SELECT * FROM {table}) TO STDOUT") as copy:
                tables[table] = b"".join(bytes(chunk) for chunk in copy)
        conn.execute("TRUNCATE traces_toolcall, traces_agenttrace, traces_otlpspan CASCADE")
        conn.commit()
        rows = sum(data.count(b"\n") for data in tables.values())
        started = time.perf_counter()
        with conn.transaction():
            for table in ("traces_agenttrace", "traces_toolcall", "traces_otlpspan"):
                with conn.cursor().copy(f"COPY {table} FROM STDIN") as copy:
                    copy.write(tables[table])
        return time.perf_counter() - started, rows


def run_evalsite(args, spans, bodies) -> float:
    with database_from_args(args) as db:
        return measure_evalsite(args, db, spans, bodies)


def measure_evalsite(args, db: Database, spans, bodies) -> float:
    env, key = prepare(db)
    if getattr(args, "redaction", False):
        redaction_enable(db)
    print(f"redaction: {'on, every detector' if getattr(args, 'redaction', False) else 'off'}")
    with Gunicorn(env, port=args.port, workers=args.server_workers, keep_alive=30) as server:
        # One warm-up export per worker process (imports, connection, key cache) outside the timing.
        warm = make_bodies(make_spans(args.server_workers * 2, args.tools, seed=999), args.spans_per_request)
        procs, out_q, started = send(server.port, "/v1/traces", key, warm, args.clients)
        collect(procs, out_q, started)
        with db.connect(autocommit=True) as conn:
            conn.execute("TRUNCATE traces_toolcall, traces_agenttrace, traces_otlpspan CASCADE")
        procs, out_q, started = send(server.port, "/v1/traces", key, bodies, args.clients)
        backends = backend_pids(db)
        server_pids = group_pids(server.pid)
        load_before = os.getloadavg()
        server_cpu, db_cpu = cpu_seconds(server_pids), cpu_seconds(backends)
        errors, retries, seconds = collect(procs, out_q, started)
        server_cpu, db_cpu = cpu_seconds(server_pids) - server_cpu, cpu_seconds(backends) - db_cpu
        load_after = os.getloadavg()
    if errors:
        raise SystemExit(f"{len(errors)} exports failed; first: {errors[:3]}")
    checked = verify(db.url, spans, args.traces, args.tools)
    copy_seconds, rows = copy_same_rows(db.url)
    n = len(spans)
    rate, copy_rate = n / seconds, n / copy_seconds
    payload_mb = sum(len(b) for b in bodies) / 1e6
    print(
        f"machine: {os.cpu_count()} cores, load average (1 min) {load_before[0]:.2f} before the run, "
        f"{load_after[0]:.2f} after (other processes share the machine)"
    )
    print(
        f"load: {len(bodies)} protobuf exports of {args.spans_per_request} spans ({payload_mb:.1f} MB), "
        f"{args.traces} traces of 1 agent + {args.tools} tool spans, {args.clients} client processes; "
        f"server gunicorn x{args.server_workers} (sync), PostgreSQL"
    )
    print(
        f"evalsite OTLP : {n} spans in {seconds:.2f} s = {rate:,.0f} spans/s stored ({retries} retries after 429/503)"
    )
    print(
        f"CPU per span  : server {1e6 * server_cpu / n:.0f} us, PostgreSQL {1e6 * db_cpu / n:.0f} us; "
        f"the run used {(server_cpu + db_cpu) / seconds:.2f} of {os.cpu_count()} cores for server + database"
    )
    print(f"checked       : {checked}")
    print(
        f"raw COPY      : the same {rows} rows (traces, tool calls, span ids) in {copy_seconds:.2f} s "
        f"= {copy_rate:,.0f} spans/s"
    )
    print(
        f"ratio         : the receiver reaches {100 * rate / copy_rate:.0f}% of raw COPY "
        f"({copy_rate / rate:.1f}x slower)"
    )
    return rate


def run_phoenix(args) -> float | None:
    phoenix = Path(args.phoenix_venv) / "bin" / "phoenix"
    if not phoenix.exists():
        print(
            f"phoenix       : not measured, {phoenix} is missing (install: python3.11 -m venv {args.phoenix_venv} "
            f"&& {args.phoenix_venv}/bin/pip install arize-phoenix asyncpg)"
        )
        return None
    n_traces = args.phoenix_requests * args.spans_per_request // (args.tools + 1)
    spans = make_spans(n_traces, args.tools, seed=7)
    bodies = make_bodies(spans, args.spans_per_request)
    with database_from_args(args, suffix="_phoenix") as db:
        return measure_phoenix(args, db, phoenix, spans, bodies)


def measure_phoenix(args, db: Database, phoenix: Path, spans, bodies) -> float:
    workdir = Path(f"/tmp/bench-phoenix-{os.getpid()}")
    workdir.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PHOENIX_SQL_DATABASE_URL": db.url.replace("postgres://", "postgresql://"),
        "PHOENIX_PORT": str(args.phoenix_port),
        "PHOENIX_GRPC_PORT": str(args.phoenix_port + 1),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    env.pop("VIRTUAL_ENV", None)
    server = subprocess.Popen(
        [str(phoenix), "serve"],
        env=env,
        start_new_session=True,
        stdout=open(workdir / "phoenix.log", "wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_http(f"http://127.0.0.1:{args.phoenix_port}/healthz", timeout=180)
        procs, out_q, started = send(args.phoenix_port, "/v1/traces", None, bodies, args.clients)
        errors, retries, accepted_seconds = collect(procs, out_q, started)
        stored = 0
        deadline = time.monotonic() + args.phoenix_timeout
        with db.connect(autocommit=True) as conn:
            while time.monotonic() < deadline:
                stored = conn.execute("SELECT count(*) FROM spans").fetchone()[0]
                if stored >= len(spans):
                    break
                time.sleep(0.5)
            stored_seconds = time.perf_counter() - started
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    n = len(spans)
    print(
        f"phoenix       : {n} spans accepted in {accepted_seconds:.2f} s = {n / accepted_seconds:,.0f} spans/s; "
        f"{stored} stored after {stored_seconds:.1f} s = {stored / stored_seconds:,.0f} spans/s stored"
        + (f" ({len(errors)} export errors, first: {errors[:2]})" if errors else "")
    )
    if stored < n:
        print(f"phoenix       : stored only {stored}/{n} within {args.phoenix_timeout} s")
    return stored / stored_seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--spans-per-request", type=int, default=512)
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--server-workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    add_database_args(parser, db="evalsite_bench_otlp")
    parser.add_argument("--phoenix", action="store_true", help="also run the load against Arize Phoenix")
    parser.add_argument("--phoenix-venv", default="/tmp/phoenix-venv")
    parser.add_argument(
        "--phoenix-requests",
        type=int,
        default=40,
        help="exports sent to Phoenix (it stores slowly: keep the run short)",
    )
    parser.add_argument("--phoenix-port", type=int, default=18070)
    parser.add_argument("--phoenix-timeout", type=float, default=600)
    parser.add_argument("--skip-evalsite", action="store_true", help="only the Phoenix run")
    parser.add_argument("--redaction", action="store_true", help="PII redaction on (every detector) for evalsite")
    parser.add_argument(
        "--usage", action="store_true", help="each trace has a model call with gen_ai.usage.* tokens (priced traces)"
    )
    args = parser.parse_args()
    args.traces = args.requests * args.spans_per_request // (args.tools + 1 + args.usage)

    rate = None
    if not args.skip_evalsite:
        spans = make_spans(args.traces, args.tools, seed=1, usage=args.usage)
        rate = run_evalsite(args, spans, make_bodies(spans, args.spans_per_request))
    if args.phoenix:
        phoenix_rate = run_phoenix(args)
        if rate and phoenix_rate:
            print(
                f"vs phoenix    : evalsite stores {rate / phoenix_rate:,.0f}x as many spans per second "
                f"({rate:,.0f} vs {phoenix_rate:,.0f})"
            )


if __name__ == "__main__":
    main()
