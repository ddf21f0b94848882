"""Retention at scale: expiring half of a project's traces while agents keep sending new ones.

    .venv/bin/python bench/retention.py [--traces 2000000] [--calls 10] [--evaluations 0] [--seconds 10]
                                        [--keep] [--reuse]

Creates the PostgreSQL database evalsite_bench_retention, loads --traces traces with --calls tool
calls each by COPY (as the batch API stores them, in the default project), dates the older half 60
days back and gives the project retention_days=30. Starts gunicorn and measures the latency of
small batch ingests (10 traces of 3 tool calls, one request after another) for --seconds while
idle; then runs `manage.py apply_retention` and keeps measuring until it ends. Prints how long the
expiry took (target: <= 2 minutes for half of 2M traces), the ingestion p50/p95 idle and during it
(target: p95 during <= 2x idle), and the table sizes before and after. With --evaluations N, also
N agentic evaluations with their three metric Score rows each, the older half dated back too: the
sizes then show the partitions of both returning their space. Drops the database unless --keep;
--reuse runs again on a kept database (the older half of what is left expires).
"""

import argparse
import subprocess
import threading
import time
import uuid

import httpx
import psycopg

from agentic import load_evaluations
from harness import (
    PYTHON,
    ROOT,
    Gunicorn,
    add_database_args,
    agentic_partitions_ensure,
    agentic_rollup_rebuild,
    database_from_args,
    p50_p95,
    prepare,
)
from ingest import copy_rows, make_traces

# traces_tracekey: the traces' unique keys (traces.0020), a plain table whose space is reused.
SIZES = ("traces_agenttrace", "traces_tracekey", "traces_toolcall", "agentic_agentevaluation", "scores_score")
LOAD_CHUNK = 100_000


def table_mb(dsn: str) -> dict[str, float]:
    """Each table's size on disk with its indexes, summed over its partitions (a partitioned table
    has no storage of its own), and the whole database's."""
    with psycopg.connect(dsn) as conn:
        sizes = {
            t: conn.execute(
                "SELECT coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree(%s)), "
                "pg_total_relation_size(%s))",
                [t, t],
            ).fetchone()[0]
            / 2**20
            for t in SIZES
        }
        sizes["database"] = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 2**20
        return sizes


def ingest_loop(url: str, key: str, stop: threading.Event, samples: list[float], errors: list[str]) -> None:
    """One agent sending batches of 10 fresh traces until `stop`; each request's latency in ms."""
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        while not stop.is_set():
            traces = make_traces(10, 3)
            for t in traces:
                t["session_id"] = f"live-{uuid.uuid4().hex}"
            started = time.perf_counter()
            response = client.post(url, json={"traces": traces})
            samples.append((time.perf_counter() - started) * 1000)
            if response.status_code >= 300:
                errors.append(f"{response.status_code} {response.text[:200]}")


def measure(url: str, key: str, seconds: float | None, until: threading.Event | None = None) -> tuple[list, list]:
    stop, samples, errors = threading.Event(), [], []
    worker = threading.Thread(target=ingest_loop, args=(url, key, stop, samples, errors))
    worker.start()
    if until is not None:
        until.wait()
    else:
        time.sleep(seconds)
    stop.set()
    worker.join()
    return samples, errors


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=2_000_000)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--evaluations", type=int, default=0, help="agentic evaluations loaded too (not with --reuse)")
    parser.add_argument("--seconds", type=float, default=10.0, help="idle ingestion measured this long")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="run on the database a --keep run left (migrated, not reloaded): the older half of the traces "
        "left is dated back",
    )
    add_database_args(parser, db="evalsite_bench_retention")
    args = parser.parse_args()

    args.keep = args.keep or args.reuse
    db = database_from_args(args)
    if not args.reuse:
        db.create()
    env, key = prepare(db)
    if not args.reuse:
        # The partitions of the traces and their tool calls the load needs, made before it as Celery
        # beat makes them ahead of ingestion (apps.traces.partitions); COPY gives the traces their ids.
        for table in ("traces_agenttrace", "traces_toolcall"):
            subprocess.run(
                [PYTHON, "manage.py", "partitions", "--ensure", "--table", table, "--upto", str(args.traces)],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
            )
        if args.evaluations:
            agentic_partitions_ensure(env, args.evaluations)
    try:
        # In chunks: 2M traces built at once would not fit in memory.
        load_seconds = 0.0
        for first in range(0, 0 if args.reuse else args.traces, LOAD_CHUNK):
            chunk = make_traces(min(LOAD_CHUNK, args.traces - first), args.calls, first=first)
            load_seconds += copy_rows(db.url, chunk, first_pk=first + 1, truncate=first == 0)
        if args.evaluations and not args.reuse:
            load_seconds += sum(load_evaluations(db.url, args.evaluations))
            agentic_rollup_rebuild(env)
        with psycopg.connect(db.url, autocommit=True) as conn:
            # The older half: of the --traces loaded, or (--reuse) of what earlier runs left.
            older = (
                conn.execute("SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY id) FROM traces_agenttrace")
                if args.reuse
                else conn.execute("SELECT %s::bigint", [args.traces // 2])
            ).fetchone()[0]
            conn.execute("UPDATE traces_agenttrace SET created_at = now() - interval '60 days' WHERE id <= %s", [older])
            if args.evaluations and not args.reuse:
                # The evaluations' own spread of dates is replaced: the older half expired, the rest new.
                conn.execute(
                    "UPDATE agentic_agentevaluation SET created_at = CASE WHEN id <= %s "
                    "THEN now() - interval '60 days' ELSE now() END",
                    [args.evaluations // 2],
                )
                conn.execute("VACUUM ANALYZE agentic_agentevaluation")
            conn.execute("UPDATE core_project SET retention_days = 30 WHERE slug = 'default'")
            conn.execute("VACUUM ANALYZE traces_agenttrace")
            conn.execute("VACUUM ANALYZE traces_toolcall")
            stored, half = conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE created_at < now() - interval '30 days') "
                "FROM traces_agenttrace"
            ).fetchone()
            live_before = conn.execute(
                "SELECT count(*) FROM traces_agenttrace WHERE session_id LIKE 'live-%'"
            ).fetchone()[0]
            calls = conn.execute(
                "SELECT count(*) FROM traces_toolcall c JOIN traces_agenttrace t ON t.id = c.trace_id "
                "WHERE t.created_at < now() - interval '30 days'"
            ).fetchone()[0]
        before = table_mb(db.url)
        print(
            f"load: {args.traces:,} traces x {args.calls} tool calls by COPY in {load_seconds:.1f} s"
            f"{' (reused)' if args.reuse else ''}; {stored:,} stored, {half:,} dated 60 days back, retention 30 days"
        )
        with Gunicorn(env, workers=2, ready_path="/api/v1/metrics/health") as server:
            url = f"{server.url}/api/v1/metrics/traces/batch"
            idle, idle_errors = measure(url, key, args.seconds)
            done = threading.Event()
            expiry: dict = {}

            def expire():
                started = time.perf_counter()
                expiry["output"] = subprocess.run(
                    [PYTHON, "manage.py", "apply_retention"], cwd=ROOT, env=env, capture_output=True, text=True
                )
                expiry["seconds"] = time.perf_counter() - started
                done.set()

            threading.Thread(target=expire).start()
            during, during_errors = measure(url, key, None, until=done)
        output = expiry["output"]
        if output.returncode != 0:
            raise SystemExit(f"apply_retention failed:\n{output.stdout}\n{output.stderr}")
        with psycopg.connect(db.url) as conn:
            left_old = conn.execute(
                "SELECT (SELECT count(*) FROM traces_agenttrace WHERE created_at < now() - interval '30 days') "
                "+ (SELECT count(*) FROM agentic_agentevaluation WHERE created_at < now() - interval '30 days')"
            ).fetchone()[0]
            live = conn.execute("SELECT count(*) FROM traces_agenttrace WHERE session_id LIKE 'live-%'").fetchone()[0]
        after = table_mb(db.url)
        idle_p50, idle_p95 = p50_p95(idle)
        during_p50, during_p95 = p50_p95(during)
        print(output.stdout.strip())
        print(
            f"expired {half:,} traces ({calls:,} tool calls)"
            + (f" and {args.evaluations // 2:,} agentic evaluations" if args.evaluations and not args.reuse else "")
            + f" in {expiry['seconds']:.1f} s (target <= 120 s for 1,000,000 traces); {left_old} expired rows left"
        )
        print(
            f"ingestion (10 traces x 3 calls per request): idle p50 {idle_p50:.1f} ms p95 {idle_p95:.1f} ms "
            f"({len(idle)} requests); during expiry p50 {during_p50:.1f} ms p95 {during_p95:.1f} ms "
            f"({len(during)} requests); p95 ratio {during_p95 / idle_p95:.2f} (target <= 2); "
            f"errors {len(idle_errors) + len(during_errors)}"
        )
        print(
            "table sizes (MB, with indexes) before -> after: "
            + ", ".join(f"{t} {before[t]:.0f} -> {after[t]:.0f}" for t in (*SIZES, "database"))
            + " (tool calls: partitions whose every trace expired are dropped, their space returned to the "
            "disk; traces, evaluations and their Score rows: deleted by batches, then the partitions they "
            "emptied dropped, their space returned; the traces' keys: deleted with them, space reused)"
        )
        sent = 10 * (len(idle) + len(during))
        live -= live_before  # a reused database keeps the live traces of earlier runs
        print(f"live traces stored {live:,} of {sent:,} sent")
        if left_old or idle_errors or during_errors or live != sent:
            raise SystemExit(1)
    finally:
        if not args.keep:
            db.drop()


if __name__ == "__main__":
    main()
