"""Reading one very big trace: the answer's size, time and the reader's peak memory.

    .venv/bin/python bench/trace_read.py [--calls 60000] [--result-bytes 2400] [--database NAME] [--keep]
                                         [--baseline REV]

Recreates database evalsite_bench_traceread (or `--database`) at 127.0.0.1:5432 (user postgres;
`--keep` reuses a loaded one), migrates it and loads, with COPY, one trace of `--calls` tool calls
stored with the order keys the OTLP receiver leaves (1024, 2048, …), each with a tool result of
about `--result-bytes` of JSON (issue 21: 60,000 calls made a 154 MB GET /trace answer and a
162 MB console page), and a 3-call trace of the same shape.

Each read runs in a child process of its own (Django's test client, a staff user): the child first
reads the small trace the same way, so imports, caches and connections are in place, then reads the
big one once, and prints the answer's bytes, the seconds it took and the process's peak RSS (and its
growth over the warm-up's). `--baseline REV` runs the same reads on the code of that git revision
too (exported with `git archive` to a temporary directory; same database), side by side.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness import ROOT, Database, add_database_args, database_from_args, migrate, peak_rss_mb, server_env

BIG, SMALL = "bench-read-big", "bench-read-small"
SEQ_STEP = 1024
CALL_COLUMNS = (
    "trace_id",
    "seq",
    "call_id",
    "tool_name",
    "tool_args",
    "tool_result",
    "success",
    "error",
    "timestamp",
    "duration_ms",
)


def environment(db: Database) -> dict:
    return server_env(
        db.url,
        DJANGO_SETTINGS_MODULE="evalsite.settings",
        LOG_LEVEL="WARNING",
        EVALSITE_VAR_DIR="/tmp/evalsite-bench-traceread",
        PYTHONDONTWRITEBYTECODE="1",
    )


def recreate_and_load(db: Database, calls: int, result_bytes: int) -> None:
    db.create()
    migrate(environment(db))
    started = time.perf_counter()
    now = datetime.now(UTC)
    with db.connect() as conn:
        ids = {}
        for session_id in (BIG, SMALL):
            ids[session_id] = conn.execute(
                "INSERT INTO traces_agenttrace (session_id, agent_name, user_query, intent_detected, operation,"
                " final_response, success, status, start_time, end_time, duration_seconds, tool_call_count, metadata,"
                " source, truncated, dropped, created_at, updated_at, project_id) VALUES (%s, 'BenchAgent',"
                " 'list every pod', 'list_pods', 'list', 'Done.', true, 'completed', %s, %s, 60, %s, '{}', 'otlp',"
                " false, '{}', %s, %s, (SELECT id FROM core_project WHERE slug = 'default'))"
                " RETURNING id",
                [session_id, now - timedelta(minutes=1), now, calls if session_id == BIG else 3, now, now],
            ).fetchone()[0]
        filler = "x" * max(0, result_bytes - 120)
        with conn.cursor().copy(f"COPY traces_toolcall ({', '.join(CALL_COLUMNS)}) FROM STDIN") as copy:
            for session_id, n in ((BIG, calls), (SMALL, 3)):
                for i in range(1, n + 1):
                    result = json.dumps(
                        {"pod": f"pod-{i}", "namespace": "default", "status": "Running", "notes": filler}
                    )
                    copy.write_row(
                        (
                            ids[session_id],
                            i * SEQ_STEP,
                            f"call-{i}",
                            "list_pods",
                            json.dumps({"page": i}),
                            result,
                            True,
                            None,
                            now - timedelta(minutes=1) + timedelta(milliseconds=i),
                            1.5,
                        )
                    )
        conn.commit()
        conn.execute("ANALYZE traces_toolcall")
    print(
        f"loaded one trace of {calls:,} tool calls (~{result_bytes:,} bytes of result each) "
        f"in {time.perf_counter() - started:.1f} s"
    )


READS = {
    "GET /trace/{id} (API)": "/api/v1/metrics/trace/{sid}",
    "GET /trace/{id}/tool-calls, last page": "/api/v1/metrics/trace/{sid}/tool-calls?after={deep}",
    "console trace page": "/console/traces/{sid}/",
    "console trace page, last page": "/console/traces/{sid}/?after={deep}",
    "admin trace change page": "/admin/traces/agenttrace/{pk}/change/",
}


def child(read: str, calls: int) -> None:
    """Runs in the code under test (cwd): one warm-up read of the small trace, then the big one."""
    sys.path.insert(0, os.getcwd())
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from apps.traces.models import AgentTrace

    user, _ = get_user_model().objects.get_or_create(
        username="bench-reader", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    pks = dict(AgentTrace.objects.filter(session_id__in=[BIG, SMALL]).values_list("session_id", "id"))

    def path(session_id, n):
        # The last page starts after the call 500 before the end.
        return READS[read].format(sid=session_id, pk=pks[session_id], deep=max(0, n - 500) * SEQ_STEP)

    def get(url):
        response = client.get(url)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        return response.status_code, len(body)

    get(path(SMALL, 3))
    warm_mb = peak_rss_mb()
    started = time.perf_counter()
    status, size = get(path(BIG, calls))
    seconds = time.perf_counter() - started
    peak_mb = peak_rss_mb()
    print(
        json.dumps(
            {"status": status, "bytes": size, "seconds": seconds, "peak_mb": peak_mb, "growth_mb": peak_mb - warm_mb}
        )
    )


def run_reads(code: Path, db: Database, calls: int) -> dict:
    results = {}
    for read in READS:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", read, "--calls", str(calls)],
            cwd=code,
            env=environment(db),
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            results[read] = {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
        else:
            results[read] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


def export(rev: str) -> Path:
    target = Path(tempfile.mkdtemp(prefix="evalsite-bench-baseline-"))
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def line(label: str, result: dict) -> str:
    if "error" in result:
        return f"  {label:9} failed: {result['error'][:90]}"
    if result["status"] != 200:
        return f"  {label:9} answered {result['status']}"
    return (
        f"  {label:9} {result['bytes'] / 1e6:9.2f} MB {result['seconds']:8.2f} s   peak RSS "
        f"{result['peak_mb']:7.0f} MB (+{result['growth_mb']:.0f} MB over the warm-up)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=60_000)
    parser.add_argument("--result-bytes", type=int, default=2_400)
    add_database_args(parser, db="evalsite_bench_traceread")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="read the trace a previous run loaded and kept (--keep) instead of loading one",
    )
    parser.add_argument("--baseline", metavar="REV", help="also read with the code of this git revision")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.calls)
        return 0
    db = database_from_args(args)
    if not args.reuse:
        recreate_and_load(db, args.calls, args.result_bytes)
    try:
        runs = [("this code", run_reads(ROOT, db, args.calls))]
        if args.baseline:
            baseline = export(args.baseline)
            runs.insert(0, (args.baseline[:10], run_reads(baseline, db, args.calls)))
    finally:
        if not (args.keep or args.reuse):
            db.drop()
    for read in READS:
        print(read)
        for label, results in runs:
            print(line(label, results[read]))
    # The baseline may lack a read (the tool-call pages are new); this code must answer every one.
    return 0 if all(r.get("status") == 200 for r in runs[-1][1].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
