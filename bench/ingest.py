"""Trace ingestion throughput: the batch API through a real server vs raw COPY into PostgreSQL.

    .venv/bin/python bench/ingest.py [--traces 20000] [--calls 10] [--batch 500] [--clients 2]

Creates a fresh PostgreSQL database, migrates it, starts gunicorn, and sends the traces from
client processes (pre-built request bodies, keep-alive connections). Then it truncates the tables
and loads the same rows with psycopg COPY in one transaction. Prints both rates and their ratio.
"""

import argparse
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable


def make_traces(n_traces: int, n_calls: int) -> list[dict]:
    base = datetime(2026, 1, 8, 10, 0, tzinfo=timezone.utc)
    datacenters = ["Delhi", "Mumbai", "Chennai", "Bangalore", "Pune"]
    traces = []
    for t in range(n_traces):
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
        traces.append({
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
        })
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


def admin_conn(dsn_base: str, dbname: str = "postgres"):
    return psycopg.connect(f"{dsn_base}/{dbname}", autocommit=True)


def wait_http(url: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=2.0)
            return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise SystemExit(f"server at {url} did not come up")


def copy_rows(dsn: str, traces: list[dict]) -> float:
    """Load the same traces and tool calls with COPY, one transaction. Returns seconds."""
    now = datetime.now(timezone.utc)
    with psycopg.connect(dsn) as conn:
        conn.execute("TRUNCATE traces_toolcall, traces_agenttrace RESTART IDENTITY CASCADE")
        conn.commit()
        started = time.perf_counter()
        with conn.transaction(), conn.cursor() as cur:
            with cur.copy(
                "COPY traces_agenttrace (id, session_id, agent_name, user_query, intent_detected, resource_type,"
                " operation, final_response, success, error, status, start_time, end_time, duration_seconds,"
                " tool_call_count, metadata, content_hash, created_at, updated_at) FROM STDIN"
            ) as copy:
                for pk, t in enumerate(traces, start=1):
                    copy.write_row((pk, t["session_id"], t["agent_name"], t["user_query"], t["intent_detected"],
                                    t["resource_type"], t["operation"], t["final_response"], t["success"], None,
                                    "completed", t["start_time"], t["end_time"], 2.0, len(t["tool_calls"]), "{}",
                                    None, now, now))
            with cur.copy(
                "COPY traces_toolcall (trace_id, seq, call_id, tool_name, tool_args, tool_result, success, error,"
                " timestamp, duration_ms) FROM STDIN"
            ) as copy:
                for pk, t in enumerate(traces, start=1):
                    for seq, c in enumerate(t["tool_calls"], start=1):
                        copy.write_row((pk, seq, c["call_id"], c["tool_name"], json.dumps(c["tool_args"]),
                                        json.dumps(c["tool_result"]), c["success"], None, c["timestamp"],
                                        c["duration_ms"]))
        return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--server-workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=18050)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="server DSN without database")
    parser.add_argument("--db", default="evalsite_bench_ingest")
    args = parser.parse_args()

    with admin_conn(args.pg) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{args.db}"')
    dsn = f"{args.pg}/{args.db}"
    env = {**os.environ, "DATABASE_URL": dsn, "DEBUG": "0", "SECRET_KEY": uuid.uuid4().hex,
           "ALLOWED_HOSTS": "127.0.0.1,localhost", "EVALSITE_MAX_BODY_BYTES": str(64 * 1024 * 1024)}
    subprocess.run([PYTHON, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    key = subprocess.run([PYTHON, "manage.py", "create_api_key", "--user", "bench"], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True).stdout.strip()

    traces = make_traces(args.traces, args.calls)
    bodies = [json.dumps({"traces": traces[i:i + args.batch]}).encode() for i in range(0, len(traces), args.batch)]
    payload_mb = sum(len(b) for b in bodies) / 1e6

    server = subprocess.Popen(
        [PYTHON, "-m", "gunicorn", "evalsite.wsgi", "-w", str(args.server_workers), "-b", f"127.0.0.1:{args.port}",
         "--timeout", "300", "--log-level", "warning"],
        cwd=ROOT, env=env, start_new_session=True,
    )
    try:
        wait_http(f"http://127.0.0.1:{args.port}/api/v1/metrics/trace/none")
        url = f"http://127.0.0.1:{args.port}/api/v1/metrics/traces/batch"
        ctx = mp.get_context("spawn")
        start_evt, out_q = ctx.Event(), ctx.Queue()
        shares = [bodies[i::args.clients] for i in range(args.clients)]
        procs = [ctx.Process(target=client_worker, args=(url, key, share, start_evt, out_q)) for share in shares]
        for p in procs:
            p.start()
        time.sleep(1.0)
        started = time.perf_counter()
        start_evt.set()
        results = [out_q.get(timeout=900) for _ in procs]
        for p in procs:
            p.join()
        api_seconds = max(r[2] for r in results) - started
        accepted, rejected = sum(r[0] for r in results), sum(r[1] for r in results)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)

    with psycopg.connect(dsn) as conn:
        stored_traces = conn.execute("SELECT count(*) FROM traces_agenttrace").fetchone()[0]
        stored_calls = conn.execute("SELECT count(*) FROM traces_toolcall").fetchone()[0]
    expected_calls = args.traces * args.calls
    if (accepted, rejected, stored_traces, stored_calls) != (args.traces, 0, args.traces, expected_calls):
        raise SystemExit(f"ingestion incomplete: accepted={accepted} rejected={rejected} "
                         f"stored={stored_traces}/{stored_calls}")

    copy_seconds = copy_rows(dsn, traces)
    rows = args.traces + expected_calls
    api_tps, copy_tps = args.traces / api_seconds, args.traces / copy_seconds

    print(f"machine: {os.cpu_count()} cores; server: gunicorn x{args.server_workers}; "
          f"clients: {args.clients} processes; batches of {args.batch}; payload {payload_mb:.1f} MB")
    print(f"API batch ingest : {args.traces} traces x {args.calls} tool calls in {api_seconds:.2f} s "
          f"= {api_tps:,.0f} traces/s, {rows / api_seconds:,.0f} rows/s")
    print(f"raw COPY         : same {rows} rows in {copy_seconds:.2f} s "
          f"= {copy_tps:,.0f} traces/s, {rows / copy_seconds:,.0f} rows/s")
    print(f"ratio            : API is {copy_tps / api_tps:.1f}x slower than raw COPY "
          f"({100 * api_tps / copy_tps:.0f}% of COPY throughput)")

    with admin_conn(args.pg) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)')


if __name__ == "__main__":
    main()
