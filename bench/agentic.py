"""Agentic Metrics API at scale: history, summary and export over many stored evaluations, and the
heuristic batch evaluation of stored traces, all through a real server process.

    .venv/bin/python bench/agentic.py [--rows 1000000] [--traces 10000] [--samples 40]

Creates a fresh PostgreSQL database (evalsite_bench_agentic), migrates it, bulk-loads the
evaluations and traces with COPY, starts gunicorn on 127.0.0.1:18100 and measures from a client
in another process: p50/p95 of /summary, /history at offset 0, at offset rows/2 and with each filter;
the streamed export of every row (rows/s, and peak RSS growth of the server worker that served it);
and /evaluate/batch of the stored traces with the heuristic judge (500 per request).
"""

import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
AGENTS = ["OrchestratorAgent", "BillingAgent", "NetworkAgent", "StorageAgent", "SecurityAgent"]
OPERATIONS = ["list", "create", "delete", "update", "get"]
DATACENTERS = ["Delhi", "Mumbai", "Chennai", "Bangalore", "Pune"]


def rating(score):
    for name, bound in (("excellent", 0.9), ("good", 0.75), ("acceptable", 0.6), ("poor", 0.4)):
        if score >= bound:
            return name
    return "failed"


def load_evaluations(dsn: str, n: int) -> float:
    rng = random.Random(7)
    base = datetime(2025, 1, 1, tzinfo=timezone.utc)
    started = time.perf_counter()
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY agentic_agentevaluation (session_id, source, agent_name, operation, intent_detected, resource_type,"
            " user_query, task_adherence, task_adherence_reasoning, task_adherence_status, tool_call_accuracy,"
            " tool_call_accuracy_reasoning, tool_call_accuracy_status, intent_resolution,"
            " intent_resolution_reasoning, intent_resolution_status, overall_score, rating, judge,"
            " input_fingerprint, created_at) FROM STDIN"
        ) as copy:
            for i in range(n):
                op = OPERATIONS[i % len(OPERATIONS)]
                ta, tc, ir = (round(rng.betavariate(5, 1.5), 4) for _ in range(3))
                overall = round(0.4 * ta + 0.3 * tc + 0.3 * ir, 4)
                copy.write_row((
                    f"bench-eval-{i:08d}", "session", AGENTS[i % len(AGENTS)], op, f"{op}_k8s_cluster", "k8s_cluster",
                    f"{op} clusters in {DATACENTERS[i % 5]}", ta, "Passed: a final answer was given.", "ok",
                    tc, "Passed: every tool call succeeded.", "ok", ir, "Passed: an intent was detected.", "ok",
                    overall, rating(overall), "heuristic:v1", "0" * 64, base + timedelta(seconds=i * 3),
                ))
        conn.commit()
    return time.perf_counter() - started


def load_traces(dsn: str, n: int) -> float:
    started = time.perf_counter()
    now = datetime.now(timezone.utc)
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY traces_agenttrace (id, session_id, agent_name, user_query, intent_detected, resource_type,"
            " operation, final_response, success, status, start_time, end_time, duration_seconds, tool_call_count,"
            " metadata, created_at, updated_at) FROM STDIN"
        ) as copy:
            for t in range(1, n + 1):
                dc = DATACENTERS[t % 5]
                copy.write_row((t, f"bench-trace-{t:06d}", AGENTS[t % 5], f"List all Kubernetes clusters in {dc}",
                                "list_k8s_cluster", "k8s_cluster", "list",
                                f"Found 3 clusters in {dc}: prod-{t}-0, prod-{t}-1, prod-{t}-2.", True, "completed",
                                now, now, 1.0, 2, "{}", now, now))
        with cur.copy("COPY traces_toolcall (trace_id, seq, tool_name, tool_args, tool_result, success, timestamp)"
                      " FROM STDIN") as copy:
            for t in range(1, n + 1):
                dc = DATACENTERS[t % 5]
                copy.write_row((t, 1, "check_region", json.dumps({"datacenter": dc}), json.dumps({"ok": True}), True, now))
                copy.write_row((t, 2, "list_k8s_clusters", json.dumps({"datacenter": dc}),
                                json.dumps([{"name": f"prod-{t}-{k}", "status": "running"} for k in range(3)]),
                                t % 50 != 0, now))
        conn.commit()
    return time.perf_counter() - started


def wait_http(url: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=2.0)
            return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise SystemExit(f"server at {url} did not come up")


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def latency_client(base: str, key: str, cases: list[tuple[str, str]], samples: int, out_q):
    """Runs in its own process: times each case `samples` times after two warm-up requests."""
    results = {}
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
        for label, path in cases:
            for _ in range(2):
                client.get(path).raise_for_status()
            times = []
            for _ in range(samples):
                started = time.perf_counter()
                response = client.get(path)
                times.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
            results[label] = (statistics.median(times), percentile(times, 0.95))
    out_q.put(results)


def export_client(base: str, key: str, out_q):
    rows = 0
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=600) as client:
        started = time.perf_counter()
        with client.stream("GET", "/api/v1/metrics/export?format=jsonl&stream=1") as response:
            response.raise_for_status()
            for chunk in response.iter_bytes(1 << 16):
                rows += chunk.count(b"\n")
        out_q.put((rows, time.perf_counter() - started))


def batch_client(base: str, key: str, session_ids: list[str], out_q):
    evaluated = 0
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=600) as client:
        started = time.perf_counter()
        for i in range(0, len(session_ids), 500):
            response = client.post("/api/v1/metrics/evaluate/batch",
                                   json={"session_ids": session_ids[i:i + 500], "judge": "heuristic", "force": True})
            response.raise_for_status()
            evaluated += response.json()["evaluated"]
        out_q.put((evaluated, time.perf_counter() - started))


def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def worker_pids(master: int) -> list[int]:
    try:
        with open(f"/proc/{master}/task/{master}/children") as fh:
            return [int(p) for p in fh.read().split()]
    except FileNotFoundError:
        return []


def run_in_process(target, *args):
    ctx = mp.get_context("spawn")
    out_q = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, out_q))
    proc.start()
    result = out_q.get(timeout=3600)
    proc.join()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--server-workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=18100)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="server DSN without database")
    parser.add_argument("--db", default="evalsite_bench_agentic")
    args = parser.parse_args()

    with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{args.db}"')
    dsn = f"{args.pg}/{args.db}"
    env = {**os.environ, "DATABASE_URL": dsn, "DEBUG": "0", "SECRET_KEY": uuid.uuid4().hex,
           "ALLOWED_HOSTS": "127.0.0.1,localhost", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    subprocess.run([PYTHON, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    key = subprocess.run([PYTHON, "manage.py", "create_api_key", "--user", "bench"], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True).stdout.strip()

    eval_seconds = load_evaluations(dsn, args.rows)
    trace_seconds = load_traces(dsn, args.traces)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    print(f"loaded {args.rows:,} evaluations in {eval_seconds:.1f} s (COPY) and {args.traces:,} traces "
          f"in {trace_seconds:.1f} s; VACUUM ANALYZE done")

    server = subprocess.Popen(
        [PYTHON, "-m", "gunicorn", "evalsite.wsgi", "-w", str(args.server_workers), "-b", f"127.0.0.1:{args.port}",
         "--timeout", "600", "--log-level", "warning"],
        cwd=ROOT, env=env, start_new_session=True,
    )
    base = f"http://127.0.0.1:{args.port}"
    try:
        wait_http(f"{base}/api/v1/metrics/health")
        deep = args.rows // 2
        cases = [
            ("/summary", "/api/v1/metrics/summary"),
            ("/history offset 0", "/api/v1/metrics/history?limit=50"),
            (f"/history offset {deep:,}", f"/api/v1/metrics/history?limit=50&offset={deep}"),
            ("/history agent_name", "/api/v1/metrics/history?limit=50&agent_name=NetworkAgent"),
            ("/history operation", "/api/v1/metrics/history?limit=50&operation=delete"),
            ("/history min_score=0.8", "/api/v1/metrics/history?limit=50&min_score=0.8"),
            ("/history all filters", "/api/v1/metrics/history?limit=50&agent_name=NetworkAgent&operation=list"
                                     "&min_score=0.8"),
            ("/history/{session_id}", f"/api/v1/metrics/history/bench-eval-{args.rows // 3:08d}"),
        ]
        latencies = run_in_process(latency_client, base, key, cases, args.samples)

        workers = worker_pids(server.pid)
        baseline = {pid: rss_kb(pid) for pid in workers}
        peak = dict(baseline)
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                for pid in workers:
                    peak[pid] = max(peak.get(pid, 0), rss_kb(pid))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        export_rows, export_seconds = run_in_process(export_client, base, key)
        stop.set()
        sampler.join()
        growth_mb = max((peak[pid] - baseline[pid]) for pid in workers) / 1024 if workers else float("nan")

        session_ids = [f"bench-trace-{t:06d}" for t in range(1, args.traces + 1)]
        evaluated, batch_seconds = run_in_process(batch_client, base, key, session_ids)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)

    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} (shared); "
          f"server: gunicorn x{args.server_workers} sync workers; client: one separate process; "
          f"{args.samples} samples per case")
    print(f"{'case':34} {'p50 ms':>9} {'p95 ms':>9}")
    for label, (p50, p95) in latencies.items():
        print(f"{label:34} {p50:9.1f} {p95:9.1f}")
    print(f"streamed export : {export_rows:,} rows in {export_seconds:.1f} s = {export_rows / export_seconds:,.0f} rows/s;"
          f" server worker peak RSS growth {growth_mb:.1f} MB")
    print(f"batch evaluate  : {evaluated:,} stored traces, heuristic judge, 500 per request, in {batch_seconds:.1f} s"
          f" = {evaluated / batch_seconds:,.0f} sessions/s")
    if export_rows != args.rows or evaluated != args.traces:
        raise SystemExit(f"incomplete: exported {export_rows}/{args.rows}, evaluated {evaluated}/{args.traces}")

    with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)')


if __name__ == "__main__":
    main()
