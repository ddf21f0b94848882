"""Agentic Metrics API at scale: a million stored evaluations behind a real server.

    .venv/bin/python bench/agentic.py [--rows 1000000] [--batch-traces 10000] [--samples 40]

Creates the PostgreSQL database evalsite_bench_agentic, migrates it, bulk-loads --rows evaluations
with COPY (spread over agents, operations, judges, scores and six months of timestamps) and
--batch-traces traces, then starts gunicorn on 127.0.0.1:18600. This process is the client: it
measures p50/p95 of /summary and of /history at offset 0, at offset rows/2 and with each filter;
streams the whole export (rows/s, and the peak RSS growth of the server's workers read from /proc);
and evaluates every loaded trace through /evaluate/batch with the heuristic judge. Drops the
database at the end unless --keep.
"""

import argparse
import os
import random
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta

import httpx
import psycopg

from harness import (
    AGENTIC_EVALUATION_COLUMNS,
    Gunicorn,
    add_database_args,
    agentic_partitions_ensure,
    agentic_rollup_rebuild,
    copy_agentic_scores,
    database_from_args,
    default_project_id,
    p50_p95,
    prepare,
    rss_mb,
)
from ingest import copy_rows, make_traces

AGENTS = ["OrchestratorAgent", "BillingAgent", "NetworkAgent", "StorageAgent", "ComputeAgent"]
OPERATIONS = ["list", "create", "delete", "update", "get"]
RATINGS = [(0.90, "excellent"), (0.75, "good"), (0.60, "acceptable"), (0.40, "poor"), (0.0, "failed")]
METRICS = ("task_adherence", "tool_call_accuracy", "intent_resolution")


def rating(score: float) -> str:
    return next(name for lower, name in RATINGS if score >= lower)


def load_evaluations(dsn: str, rows: int) -> tuple[float, float]:
    """COPYs the evaluations, then their three metric Score rows each (as the service stores them).
    Returns the seconds each took."""
    rnd = random.Random(7)
    start = datetime(2026, 6, 1, tzinfo=UTC)
    step = timedelta(days=180) / rows
    reasoning = (
        "Passed: a tool fits the operation and resource (list_k8s_clusters); every argument value comes "
        "from the query or an earlier result. Failed: tool results missing from the answer: dev-02."
    )
    started = time.perf_counter()
    metrics = []
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        project = default_project_id(cur)
        with cur.copy(f"COPY agentic_agentevaluation ({', '.join(AGENTIC_EVALUATION_COLUMNS)}) FROM STDIN") as copy:
            for i in range(rows):
                task, tool, intent = (round(rnd.betavariate(5, 1.5), 4) for _ in METRICS)
                overall = round(0.4 * task + 0.3 * tool + 0.3 * intent, 4)
                llm = i % 4 == 0
                metrics.append((task, tool, intent, "openai:gpt-4o-mini" if llm else "heuristic:v1", start + step * i))
                copy.write_row(
                    (
                        f"bench-eval-{i:08d}",
                        "trace",
                        AGENTS[i % 5],
                        OPERATIONS[(i // 5) % 5],
                        overall,
                        rating(overall),
                        "openai:gpt-4o-mini" if llm else "heuristic:v1",
                        900 if llm else 0,
                        120 if llm else 0,
                        1020 if llm else 0,
                        f"{i:064x}",
                        False,
                        start + step * i,
                        project,
                    )
                )
        conn.commit()
        evaluations_seconds = time.perf_counter() - started
        started = time.perf_counter()
        copy_agentic_scores(cur, after_id=0, metrics=metrics, reasoning=reasoning)
        conn.commit()
    scores_seconds = time.perf_counter() - started
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE agentic_agentevaluation")
        conn.execute("VACUUM ANALYZE scores_score")
    return evaluations_seconds, scores_seconds


def percentiles(samples: list[float]) -> tuple[float, float]:
    p50, p95 = p50_p95(samples)
    return p50 * 1000, p95 * 1000


def timed_get(client: httpx.Client, url: str, n: int) -> tuple[float, float]:
    for _ in range(3):
        client.get(url).raise_for_status()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        client.get(url).raise_for_status()
        samples.append(time.perf_counter() - t0)
    return percentiles(samples)


def worker_pids(master: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def measure_export(client: httpx.Client, base: str, master: int) -> tuple[int, float, float]:
    pids = worker_pids(master)
    baseline = {pid: rss_mb(pid) for pid in pids}
    peak = dict(baseline)
    done = threading.Event()

    def sample():
        while not done.is_set():
            for pid in pids:
                peak[pid] = max(peak[pid], rss_mb(pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    lines = 0
    t0 = time.perf_counter()
    with client.stream("GET", f"{base}/export?format=jsonl&download=true", timeout=600) as response:
        response.raise_for_status()
        for chunk in response.iter_bytes():
            lines += chunk.count(b"\n")
    seconds = time.perf_counter() - t0
    done.set()
    sampler.join()
    growth_mb = max(peak[pid] - baseline[pid] for pid in pids)
    return lines, seconds, growth_mb


def measure_batch(base: str, key: str, n_traces: int, clients: int) -> tuple[int, float]:
    ids = [f"bench-{t:07d}" for t in range(n_traces)]
    chunks = [ids[i : i + 500] for i in range(0, len(ids), 500)]
    evaluated = [0] * clients

    def run(k: int):
        with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=300) as client:
            for chunk in chunks[k::clients]:
                response = client.post(f"{base}/evaluate/batch", json={"session_ids": chunk, "judge": "heuristic"})
                response.raise_for_status()
                evaluated[k] += response.json()["evaluated"]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(evaluated), time.perf_counter() - t0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch-traces", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--server-workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    add_database_args(parser, db="evalsite_bench_agentic")
    args = parser.parse_args()

    db = database_from_args(args).create()
    dsn = db.url
    env, key = prepare(db, EVALSITE_AGENTIC_EXPORT_INLINE_MAX_ROWS="1000")

    # Traces first: copy_rows truncates the trace tables with CASCADE, which would empty evaluations too.
    trace_seconds = copy_rows(dsn, make_traces(args.batch_traces, 3))
    # For the load and the batch after it.
    agentic_partitions_ensure(env, args.rows + args.batch_traces)
    load_seconds, scores_seconds = load_evaluations(dsn, args.rows)
    t0 = time.perf_counter()
    agentic_rollup_rebuild(env)
    rebuild_seconds = time.perf_counter() - t0
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE traces_agenttrace")
        conn.execute("VACUUM ANALYZE traces_toolcall")
    server = Gunicorn(
        env, port=args.port, workers=args.server_workers, timeout=600, ready_path="/api/v1/metrics/health"
    )
    print(f"machine: {os.cpu_count()} cores (shared); server: gunicorn x{args.server_workers} on {server.url}")
    print(
        f"load: {args.rows:,} evaluations by COPY in {load_seconds:.1f} s ({args.rows / load_seconds:,.0f} rows/s), "
        f"their {3 * args.rows:,} metric Score rows in {scores_seconds:.1f} s; "
        f"{args.batch_traces:,} traces x 3 tool calls in {trace_seconds:.1f} s; summary totals rebuilt in "
        f"{rebuild_seconds:.1f} s"
    )

    base = f"{server.url}/api/v1/metrics"
    try:
        server.start()
        deep = args.rows // 2
        with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
            print(f"\n{'endpoint':<58} {'p50 ms':>8} {'p95 ms':>8}   ({args.samples} sequential requests)")
            for label, url in [
                ("GET /summary", f"{base}/summary"),
                ("GET /history (offset 0)", f"{base}/history"),
                (f"GET /history?offset={deep}", f"{base}/history?offset={deep}"),
                ("GET /history?agent_name=NetworkAgent", f"{base}/history?agent_name=NetworkAgent"),
                ("GET /history?operation=delete", f"{base}/history?operation=delete"),
                ("GET /history?min_score=0.8", f"{base}/history?min_score=0.8"),
                ("GET /history?min_score=0.97 (selective)", f"{base}/history?min_score=0.97"),
                (
                    "GET /history?agent_name=..&operation=..&min_score=0.8",
                    f"{base}/history?agent_name=NetworkAgent&operation=delete&min_score=0.8",
                ),
                ("GET /history?limit=500", f"{base}/history?limit=500"),
                ("GET /history/{session_id}", f"{base}/history/bench-eval-{args.rows // 3:08d}"),
            ]:
                p50, p95 = timed_get(client, url, args.samples)
                print(f"{label:<58} {p50:>8.1f} {p95:>8.1f}")
            lines, seconds, growth = measure_export(client, base, server.pid)
        if lines != args.rows:
            raise SystemExit(f"export returned {lines} rows, expected {args.rows}")
        print(
            f"\nstreamed export (jsonl): {lines:,} rows in {seconds:.1f} s = {lines / seconds:,.0f} rows/s; "
            f"peak server worker RSS growth {growth:.1f} MB"
        )
        evaluated, seconds = measure_batch(base, key, args.batch_traces, args.server_workers)
        if evaluated != args.batch_traces:
            raise SystemExit(f"batch evaluated {evaluated}, expected {args.batch_traces}")
        print(
            f"/evaluate/batch (heuristic:v1): {evaluated:,} stored traces in {seconds:.1f} s = "
            f"{evaluated / seconds:,.0f} sessions/s ({args.server_workers} concurrent clients, 500 ids per request)"
        )
    finally:
        server.stop()
        if not args.keep:
            db.drop()


if __name__ == "__main__":
    main()
