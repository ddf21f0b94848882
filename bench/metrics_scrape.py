"""`/metrics` as ingested names pile up: lines, bytes and scrape time, bounded and unbounded.

    .venv/bin/python bench/metrics_scrape.py [--traces 50000] [--names 3000] [--batch 1000] [--repeat 10]
                                             [--pg postgres://postgres@127.0.0.1:5432] [--db evalsite_bench_metrics]

Recreates the PostgreSQL database `--db`, migrates it and loads `--traces` traces of 20 agents and 5
operations with COPY (an agentic evaluation for 30% of them). Then adds `--names` new agent names in
batches of `--batch`, each trace with an agent name and an operation never seen before and an
evaluation of its own, which is how the audit grew /metrics from 2,452 to 70,325 lines. Before the
first batch and after each one, this process scrapes /metrics through Django's test client (the view
and the database collectors, no HTTP) `--repeat` times with the default limit
(EVALSITE_METRICS_MAX_LABEL_VALUES=50) and with the limit lifted, and prints lines, bytes and the
median scrape time of each. Figures only: nothing is asserted. Drops the database at the end unless
--keep.
"""

import argparse
import os
import statistics
import time
from datetime import UTC, datetime, timedelta

import psycopg

from harness import (
    AGENTIC_EVALUATION_COLUMNS,
    add_database_args,
    copy_agentic_scores,
    database_from_args,
    default_project_id,
    django_setup,
    max_id,
    migrate,
    server_env,
)

AGENTS = [f"Agent{n:02d}" for n in range(20)]
OPERATIONS = ["list", "create", "delete", "update", "get"]
RATINGS = [(0.90, "excellent"), (0.75, "good"), (0.60, "acceptable"), (0.40, "poor"), (0.0, "failed")]
UNBOUNDED = 10**9
TRACE_COLUMNS = (
    "session_id",
    "agent_name",
    "user_query",
    "operation",
    "final_response",
    "success",
    "status",
    "start_time",
    "end_time",
    "duration_seconds",
    "tool_call_count",
    "metadata",
    "source",
    "truncated",
    "dropped",
    "created_at",
    "updated_at",
)


def rating(score: float) -> str:
    return next(name for lower, name in RATINGS if score >= lower)


def trace_row(i: int, agent: str, operation: str, now: datetime) -> tuple:
    start = now - timedelta(seconds=i)
    active = i % 13 == 0
    duration = None if active else (i % 600) / 10
    return (
        f"bench-{i:08d}",
        agent,
        "list the clusters",
        operation,
        None if active else "Done.",
        None if active else i % 9 != 0,
        "active" if active else "failed" if i % 9 == 0 else "completed",
        start,
        None if active else start + timedelta(seconds=duration),
        duration,
        0,
        "{}",
        "batch",
        False,
        "{}",
        start,
        start,
    )


def evaluation_row(i: int, agent: str, operation: str, now: datetime) -> tuple:
    score = round((i % 97) / 96, 4)
    return (
        f"bench-{i:08d}",
        "trace",
        agent,
        operation,
        score,
        rating(score),
        "heuristic:v1",
        0,
        0,
        0,
        f"{i:064x}",
        False,
        now,
    )


def copy(dsn: str, first: int, count: int, naming) -> None:
    now = datetime.now(UTC)
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        project = default_project_id(cur)
        with cur.copy(f"COPY traces_agenttrace ({', '.join(TRACE_COLUMNS)}, project_id) FROM STDIN") as out:
            for i in range(first, first + count):
                out.write_row((*trace_row(i, *naming(i), now), project))
        after_id, metrics = max_id(cur, "agentic_agentevaluation"), []
        with cur.copy(f"COPY agentic_agentevaluation ({', '.join(AGENTIC_EVALUATION_COLUMNS)}) FROM STDIN") as out:
            for i in range(first, first + count):
                agent, operation = naming(i)
                if agent not in AGENTS or i % 10 < 3:
                    row = evaluation_row(i, agent, operation, now)
                    out.write_row(row)
                    metrics.append((row[4], row[4], row[4], row[6], now))
        copy_agentic_scores(cur, after_id=after_id, metrics=metrics)
        conn.commit()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE traces_agenttrace")
        conn.execute("ANALYZE agentic_agentevaluation")


def scrape(client, limit: int, repeat: int) -> tuple[int, int, float]:
    from django.test import override_settings

    with override_settings(EVALSITE_METRICS_MAX_LABEL_VALUES=limit):
        body = client.get("/metrics").content
        timings = []
        for _ in range(repeat):
            started = time.perf_counter()
            response = client.get("/metrics")
            timings.append(time.perf_counter() - started)
            assert response.status_code == 200, response.status_code
    return body.count(b"\n"), len(body), statistics.median(timings) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=50_000)
    parser.add_argument("--names", type=int, default=3_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=10)
    add_database_args(parser, db="evalsite_bench_metrics")
    args = parser.parse_args()

    # Loopback scrapes without a token (the client below is 127.0.0.1): no token or allow-list set here.
    os.environ.pop("EVALSITE_METRICS_TOKEN", None)
    os.environ.pop("EVALSITE_METRICS_ALLOW", None)
    extra = {"LOG_LEVEL": "WARNING", "EVALSITE_VAR_DIR": "/tmp/evalsite-bench-metrics"}
    db = database_from_args(args).create()
    dsn = db.url
    env = server_env(dsn, **extra)
    try:
        migrate(env)
        copy(dsn, 0, args.traces, lambda i: (AGENTS[i % len(AGENTS)], OPERATIONS[(i // 20) % len(OPERATIONS)]))

        django_setup(env)
        from django.db import connections
        from django.test import Client

        from apps.agentic.services import evaluation_rollup_rebuild

        client = Client()  # REMOTE_ADDR 127.0.0.1: loopback may scrape without a token
        print(
            f"/metrics on PostgreSQL: {args.traces:,} traces of {len(AGENTS)} agents, then {args.names:,} new "
            f"agent and operation names in batches of {args.batch:,}; median of {args.repeat} scrapes"
        )
        print(
            f"{'new names':>9}  {'limit 50: lines':>15} {'bytes':>9} {'ms':>7}   {'no limit: lines':>15} "
            f"{'bytes':>10} {'ms':>8}"
        )
        added = 0
        while True:
            evaluation_rollup_rebuild()
            bounded = scrape(client, 50, args.repeat)
            unbounded = scrape(client, UNBOUNDED, args.repeat)
            print(
                f"{added:>9,}  {bounded[0]:>15,} {bounded[1]:>9,} {bounded[2]:>7.1f}   {unbounded[0]:>15,} "
                f"{unbounded[1]:>10,} {unbounded[2]:>8.1f}"
            )
            if added >= args.names:
                break
            count = min(args.batch, args.names - added)
            first = args.traces + added
            copy(dsn, first, count, lambda i: (f"new-agent-{i:08d}", f"new-op-{i:08d}"))
            added += count
        connections.close_all()
    finally:
        if not args.keep:
            db.drop()


if __name__ == "__main__":
    main()
