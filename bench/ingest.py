"""Trace ingestion throughput through a real server on PostgreSQL.

    .venv/bin/python bench/ingest.py [--traces 20000] [--calls 10] [--batch 500] [--clients 2]
    .venv/bin/python bench/ingest.py --per-call [--traces 1600] [--calls 10] [--clients 8]
    add --redaction to either: PII redaction on for the bench key's project, every detector

--redaction turns on the project's PII redaction with all six detectors (docs/redaction.md) before
the server starts; the traces are the same, so off vs on is the cost of redacting them.

Creates a fresh PostgreSQL database, migrates it, starts gunicorn, and sends the traces from
client processes (pre-built request bodies, keep-alive connections).

Default mode: whole traces through the batch API; then it truncates the tables and loads the same
rows with psycopg COPY in one transaction, and prints both rates and their ratio.

--per-call: agents that record each step as it happens. Every trace is start, intent, one request
per tool call, complete (13 requests with --calls 10); each client works through its traces one
request at a time. Prints requests/s, p50/p95/p99 latency, errors and the server's configuration,
then checks every trace and gap-free seq in the database.
"""

import argparse
import http.client
import json
import multiprocessing as mp
import os
import time
from datetime import UTC, datetime, timedelta

import httpx
import psycopg

from harness import (
    Database,
    Gunicorn,
    add_database_args,
    backend_pids,
    cpu_seconds,
    database_from_args,
    default_project_id,
    group_pids,
    percentile,
    prepare,
    redaction_enable,
)


def make_traces(n_traces: int, n_calls: int, first: int = 0) -> list[dict]:
    """`n_traces` traces of `n_calls` tool calls, numbered from `first` (so chunks of a large load
    get distinct session ids)."""
    base = datetime(2026, 1, 8, 10, 0, tzinfo=UTC)
    datacenters = ["Delhi", "Mumbai", "Chennai", "Bangalore", "Pune"]
    traces = []
    for t in range(first, first + n_traces):
        dc = datacenters[t % len(datacenters)]
        start = base + timedelta(seconds=t)
        calls = [
            {
                "tool_name": f"tool_{c % 4}",
                "tool_args": {"datacenter": dc, "page": c, "filter": {"status": "running"}},
                "tool_result": [{"name": f"prod-{t}-{c}-{k}", "status": "running", "cpu": 0.5 * k} for k in range(3)],
                "success": c % 9 != 8,
                "duration_ms": 10.0 + c,
                "call_id": f"call-{c}",
                "timestamp": (start + timedelta(milliseconds=100 * c)).isoformat(),
            }
            for c in range(n_calls)
        ]
        traces.append(
            {
                "session_id": f"bench-{t:07d}",
                "user_query": f"List all Kubernetes clusters in {dc}",
                "agent_name": f"Agent{t % 3}",
                "intent_detected": "list_k8s_cluster",
                "resource_type": "k8s_cluster",
                "operation": "list",
                "tool_calls": calls,
                "final_response": f"Found 3 clusters in {dc}.",
                "success": True,
                "start_time": start.isoformat(),
                "end_time": (start + timedelta(seconds=2)).isoformat(),
            }
        )
    return traces


def client_worker(url: str, key: str, bodies: list[bytes], start_evt, out_q):
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    accepted = rejected = 0
    with httpx.Client(timeout=120.0, headers=headers) as client:
        start_evt.wait()
        for body in bodies:
            response = client.post(url, content=body)
            response.raise_for_status()
            data = response.json()
            accepted += data["accepted_count"]
            rejected += data["rejected_count"]
    out_q.put((accepted, rejected, time.perf_counter()))


def copy_rows(dsn: str, traces: list[dict], *, first_pk: int = 1, truncate: bool = True) -> float:
    """Load the same traces and tool calls with COPY, one transaction, as the batch API stores them
    (source "batch"), with primary keys from `first_pk` (after emptying the tables, unless not
    `truncate`: a large load comes in chunks). Returns seconds."""
    now = datetime.now(UTC)
    with psycopg.connect(dsn) as conn:
        if truncate:
            conn.execute("TRUNCATE traces_toolcall, traces_agenttrace RESTART IDENTITY CASCADE")
            conn.commit()
        started = time.perf_counter()
        with conn.transaction(), conn.cursor() as cur:
            project = default_project_id(cur)
            with cur.copy(
                "COPY traces_agenttrace (id, session_id, agent_name, user_query, intent_detected, resource_type,"
                " operation, final_response, success, error, status, start_time, end_time, duration_seconds,"
                " tool_call_count, metadata, content_hash, source, created_at, updated_at, truncated, dropped,"
                " project_id) FROM STDIN"
            ) as copy:
                for pk, t in enumerate(traces, start=first_pk):
                    copy.write_row(
                        (
                            pk,
                            t["session_id"],
                            t["agent_name"],
                            t["user_query"],
                            t["intent_detected"],
                            t["resource_type"],
                            t["operation"],
                            t["final_response"],
                            t["success"],
                            None,
                            "completed",
                            t["start_time"],
                            t["end_time"],
                            2.0,
                            len(t["tool_calls"]),
                            "{}",
                            None,
                            "batch",
                            now,
                            now,
                            False,
                            "{}",
                            project,
                        )
                    )
            with cur.copy(
                "COPY traces_toolcall (trace_id, seq, call_id, tool_name, tool_args, tool_result, success, error,"
                " timestamp, duration_ms) FROM STDIN"
            ) as copy:
                for pk, t in enumerate(traces, start=first_pk):
                    for seq, c in enumerate(t["tool_calls"], start=1):
                        copy.write_row(
                            (
                                pk,
                                seq,
                                c["call_id"],
                                c["tool_name"],
                                json.dumps(c["tool_args"]),
                                json.dumps(c["tool_result"]),
                                c["success"],
                                None,
                                c["timestamp"],
                                c["duration_ms"],
                            )
                        )
            # The ids were given: the next row the app inserts takes the one after the last.
            cur.execute(
                "SELECT setval(pg_get_serial_sequence('traces_agenttrace', 'id'), max(id)) FROM traces_agenttrace"
            )
        return time.perf_counter() - started


def per_call_requests(n_traces: int, n_calls: int, prefix: str) -> list[tuple[str, bytes, int]]:
    """(path, body, expected status) for every request of n_traces traces, in the order an agent sends them."""
    base = "/api/v1/metrics/traces"
    requests = []
    for trace in make_traces(n_traces, n_calls):
        sid = f"{prefix}-{trace['session_id']}"
        requests.append(
            (
                base,
                json.dumps(
                    {"session_id": sid, "user_query": trace["user_query"], "agent_name": trace["agent_name"]}
                ).encode(),
                201,
            )
        )
        requests.append(
            (
                f"{base}/{sid}/intent",
                json.dumps(
                    {
                        "intent": trace["intent_detected"],
                        "resource_type": trace["resource_type"],
                        "operation": trace["operation"],
                    }
                ).encode(),
                200,
            )
        )
        for call in trace["tool_calls"]:
            requests.append((f"{base}/{sid}/tool-calls", json.dumps(call).encode(), 201))
        requests.append(
            (
                f"{base}/{sid}/complete",
                json.dumps({"final_response": trace["final_response"], "success": True}).encode(),
                200,
            )
        )
    return requests


def per_call_client(port: int, key: str, warmup: list, measured: list, start_evt, out_q):
    # http.client rather than httpx: the clients share the server's two cores, so the lighter the
    # client, the more of the machine measures the server.
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json", "Connection": "keep-alive"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def send(path: str, body: bytes) -> int:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status

    for path, body, _ in warmup:
        send(path, body)
    start_evt.wait()
    latencies, errors = [], []
    clock = time.perf_counter
    cpu_started = time.process_time()
    for path, body, expected in measured:
        t0 = clock()
        try:
            status = send(path, body)
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            status = repr(exc)
        latencies.append(clock() - t0)
        if status != expected:
            errors.append(f"{path}: {status}")
    conn.close()
    out_q.put((latencies, errors, clock(), time.process_time() - cpu_started))


def run_per_call(args, env: dict, key: str, db: Database) -> None:
    clients = args.clients or 8
    n_traces = args.traces or 1600
    per_client = n_traces // clients
    shares = [per_call_requests(per_client, args.calls, f"c{i}") for i in range(clients)]
    warmups = [per_call_requests(2, args.calls, f"warm{i}") for i in range(clients)]
    with Gunicorn(
        env,
        port=args.port,
        workers=args.server_workers,
        threads=args.server_threads,
        worker_class=args.worker_class,
        keep_alive=30,
    ) as server:
        ctx = mp.get_context("spawn")
        start_evt, out_q = ctx.Event(), ctx.Queue()
        procs = [
            ctx.Process(target=per_call_client, args=(server.port, key, warm, share, start_evt, out_q))
            for warm, share in zip(warmups, shares, strict=True)
        ]
        for p in procs:
            p.start()
        time.sleep(2.0)
        # Every server thread has its PostgreSQL connection open after the warm-up (CONN_MAX_AGE).
        backends = backend_pids(db)
        server_pids = group_pids(server.pid)
        load_before = os.getloadavg()
        server_cpu, db_cpu = cpu_seconds(server_pids), cpu_seconds(backends)
        started = time.perf_counter()
        start_evt.set()
        results = [out_q.get(timeout=900) for _ in procs]
        seconds = max(r[2] for r in results) - started
        server_cpu, db_cpu = cpu_seconds(server_pids) - server_cpu, cpu_seconds(backends) - db_cpu
        load_after = os.getloadavg()
        for p in procs:
            p.join()

    latencies = sorted(lat for r in results for lat in r[0])
    errors = [e for r in results for e in r[1]]
    with db.connect() as conn:
        stored = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE t.status = 'completed' AND t.tool_call_count = %s"
            "  AND (SELECT count(*) FILTER (WHERE c.seq BETWEEN 1 AND %s) FROM traces_toolcall c"
            "       WHERE c.trace_id = t.id) = %s) FROM traces_agenttrace t WHERE t.session_id NOT LIKE 'warm%%'",
            (args.calls, args.calls, args.calls),
        ).fetchone()

    n = len(latencies)
    ms = lambda q: 1000 * percentile(latencies, q)  # noqa: E731
    client_cpu = sum(r[3] for r in results)
    print(
        f"machine: {os.cpu_count()} cores, load average (1 min) {load_before[0]:.2f} before the run, "
        f"{load_after[0]:.2f} after"
    )
    print(
        f"server: gunicorn {args.worker_class}, {args.server_workers} workers x {args.server_threads} threads, "
        "keep-alive; "
        f"DB_CONN_MAX_AGE={env.get('DB_CONN_MAX_AGE', '60 (default)')}, "
        f"EVALSITE_API_KEY_CACHE_SECONDS={env.get('EVALSITE_API_KEY_CACHE_SECONDS', '(default)')}"
    )
    print(
        f"clients: {clients} processes, one request at a time each, keep-alive; "
        f"{per_client} traces x {2 + args.calls + 1} requests each (after 2 warm-up traces)"
    )
    print(
        f"per-call ingest: {n} requests in {seconds:.2f} s = {n / seconds:,.0f} requests/s; "
        f"latency p50 {ms(0.50):.1f} ms, p95 {ms(0.95):.1f} ms, p99 {ms(0.99):.1f} ms, "
        f"max {1000 * latencies[-1]:.1f} ms"
    )
    print(
        f"CPU per request: server {1000 * server_cpu / n:.2f} ms, PostgreSQL {1000 * db_cpu / n:.2f} ms, "
        f"clients {1000 * client_cpu / n:.2f} ms; the run used {(server_cpu + db_cpu + client_cpu) / seconds:.2f} "
        f"of {os.cpu_count()} cores (the rest went to other processes or idle)"
    )
    print(f"errors: {len(errors)}" + (f" (first: {errors[:3]})" if errors else ""))
    print(
        f"stored: {stored[1]}/{stored[0]} traces completed with {args.calls} gap-free tool calls "
        f"(expected {per_client * clients})"
    )
    if errors or stored != (per_client * clients, per_client * clients):
        raise SystemExit("per-call ingestion incomplete")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-call", action="store_true", help="one request per step instead of batches")
    parser.add_argument("--traces", type=int, default=None, help="default 20000; --per-call: 1600")
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--clients", type=int, default=None, help="default 2; --per-call: 8")
    parser.add_argument("--server-workers", type=int, default=2)
    parser.add_argument("--server-threads", type=int, default=4, help="--per-call only (gthread)")
    parser.add_argument("--worker-class", default="gthread", help="--per-call only: gunicorn -k (gthread, sync)")
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    parser.add_argument("--redaction", action="store_true", help="PII redaction on, every detector")
    add_database_args(parser, db="evalsite_bench_ingest")
    args = parser.parse_args()

    with database_from_args(args) as db:
        env, key = prepare(db, EVALSITE_MAX_BODY_BYTES=str(64 * 1024 * 1024))
        if args.redaction:
            redaction_enable(db)
        print(f"redaction: {'on, every detector' if args.redaction else 'off'}")
        if args.per_call:
            run_per_call(args, env, key, db)
        else:
            run_batches(args, env, key, db)


def run_batches(args, env: dict, key: str, db: Database) -> None:
    args.traces = args.traces or 20_000
    args.clients = args.clients or 2

    traces = make_traces(args.traces, args.calls)
    bodies = [json.dumps({"traces": traces[i : i + args.batch]}).encode() for i in range(0, len(traces), args.batch)]
    payload_mb = sum(len(b) for b in bodies) / 1e6

    with Gunicorn(env, port=args.port, workers=args.server_workers) as server:
        url = f"{server.url}/api/v1/metrics/traces/batch"
        ctx = mp.get_context("spawn")
        start_evt, out_q = ctx.Event(), ctx.Queue()
        shares = [bodies[i :: args.clients] for i in range(args.clients)]
        procs = [ctx.Process(target=client_worker, args=(url, key, share, start_evt, out_q)) for share in shares]
        for p in procs:
            p.start()
        time.sleep(1.0)
        # Server CPU is steadier than wall time on a shared machine (off vs on --redaction).
        server_pids = group_pids(server.pid)
        server_cpu = cpu_seconds(server_pids)
        started = time.perf_counter()
        start_evt.set()
        results = [out_q.get(timeout=900) for _ in procs]
        server_cpu = cpu_seconds(server_pids) - server_cpu
        for p in procs:
            p.join()
        api_seconds = max(r[2] for r in results) - started
        accepted, rejected = sum(r[0] for r in results), sum(r[1] for r in results)

    with db.connect() as conn:
        stored_traces = conn.execute("SELECT count(*) FROM traces_agenttrace").fetchone()[0]
        stored_calls = conn.execute("SELECT count(*) FROM traces_toolcall").fetchone()[0]
    expected_calls = args.traces * args.calls
    if (accepted, rejected, stored_traces, stored_calls) != (args.traces, 0, args.traces, expected_calls):
        raise SystemExit(
            f"ingestion incomplete: accepted={accepted} rejected={rejected} stored={stored_traces}/{stored_calls}"
        )

    copy_seconds = copy_rows(db.url, traces)
    rows = args.traces + expected_calls
    api_tps, copy_tps = args.traces / api_seconds, args.traces / copy_seconds

    print(
        f"machine: {os.cpu_count()} cores; server: gunicorn x{args.server_workers}; "
        f"clients: {args.clients} processes; batches of {args.batch}; payload {payload_mb:.1f} MB"
    )
    print(
        f"API batch ingest : {args.traces} traces x {args.calls} tool calls in {api_seconds:.2f} s "
        f"= {api_tps:,.0f} traces/s, {rows / api_seconds:,.0f} rows/s; "
        f"server CPU {1e6 * server_cpu / args.traces:,.0f} us per trace"
    )
    print(
        f"raw COPY         : same {rows} rows in {copy_seconds:.2f} s "
        f"= {copy_tps:,.0f} traces/s, {rows / copy_seconds:,.0f} rows/s"
    )
    print(
        f"ratio            : API is {copy_tps / api_tps:.1f}x slower than raw COPY "
        f"({100 * api_tps / copy_tps:.0f}% of COPY throughput)"
    )


if __name__ == "__main__":
    main()
