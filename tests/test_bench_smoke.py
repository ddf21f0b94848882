"""Every script in bench/ runs at its smallest size and prints its figures, so a change that breaks a
benchmark fails CI ("Benchmarks must keep running: CI runs them small").

Each script runs as a child process with a timeout. The figures are not judged (no timed tests): a
script that exits 1 only because a timing target was missed on a busy machine still ran, and is
accepted when it says so in its last line. Scripts that need PostgreSQL run only when DATABASE_URL is
PostgreSQL on loopback; they get databases of their own named after the test database's, ports are
picked free, and Redis (bench/runs.py) and the prometheus binaries (bench/nlquery.py) are skipped
when absent.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# Only a guard against a hung script: the smallest sizes take 5-20 s on a quiet 2-core machine, but a bare
# `migrate` alone took 160 s with the machine shared by eight test runs, and no test may fail for that.
TIMEOUT = 900

pytestmark = pytest.mark.subprocess


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bench(script: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "DJANGO_SETTINGS_MODULE", "OPENAI_API_KEY", "OPENAI_BASE_URL"}
    }
    clean.update(env or {})
    return subprocess.run(
        [sys.executable, f"bench/{script}", *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=TIMEOUT
    )


def assert_ran(result: subprocess.CompletedProcess, *figures: str, target_missed: str | None = None) -> None:
    """Exit 0 (or 1 with `target_missed` in the output: a timing target missed is a figure, not a
    breakage) and every `figures` pattern in what it printed."""
    output = f"stdout:\n{result.stdout[-4000:]}\nstderr:\n{result.stderr[-4000:]}"
    missed = target_missed is not None and result.returncode == 1 and re.search(target_missed, result.stdout)
    assert result.returncode == 0 or missed, output
    assert "Traceback" not in result.stdout + result.stderr, output
    for pattern in figures:
        assert re.search(pattern, result.stdout, re.MULTILINE), f"no line matching {pattern!r}\n{output}"


@pytest.fixture
def pg(on_postgres) -> dict:
    """The test run's PostgreSQL server: {'base': scheme://user@host:port, 'name': a database name
    prefix of this run's own, 'default_server': whether it is postgres@127.0.0.1:5432, which some
    scripts assume}."""
    url = urlsplit(os.environ.get("DATABASE_URL", ""))
    if url.hostname not in LOOPBACK:
        pytest.skip("the benchmarks only ever talk to a PostgreSQL server on loopback")
    name = (url.path.lstrip("/") or "evalsite")[:40]
    return {
        "base": f"{url.scheme}://{url.netloc}",
        "name": f"{name}_bench",
        "default_server": url.username == "postgres" and url.hostname == "127.0.0.1" and (url.port or 5432) == 5432,
    }


@pytest.fixture
def default_pg(pg) -> dict:
    if not pg["default_server"]:
        pytest.skip("this benchmark talks to postgres@127.0.0.1:5432 only")
    return pg


def test_every_bench_script_has_a_smoke_test():
    # A script added to bench/ without a run here would rot unnoticed: each one must be named in a bench() call.
    scripts = {path.name for path in (ROOT / "bench").glob("*.py")} - {"harness.py"}
    smoked = set(re.findall(r'bench\(\s*"([\w.]+\.py)"', Path(__file__).read_text()))
    assert scripts - smoked == set(), f"bench/ scripts with no smoke test here: {sorted(scripts - smoked)}"


def test_harness_percentile_is_nearest_rank():
    sys.path.insert(0, str(ROOT / "bench"))
    from harness import p50_p95, percentile

    samples = [float(n) for n in range(1, 21)]  # 1..20
    # Nearest rank: p95 of 20 samples is the 19th, p50 the 10th; one sample is every percentile.
    assert (percentile(samples, 0.95), percentile(samples, 0.5), percentile([7.0], 0.95)) == (19.0, 10.0, 7.0)
    assert p50_p95(samples) == (10.5, 19.0)


# Scripts that need no PostgreSQL.


def test_judge_coverage():
    result = bench("judge_coverage.py")
    assert_ran(
        result,
        r"^labelled cases : \d+ \(",
        r"^coverage       : [\d.]+% \(\d+ answered, \d+ skipped\)",
        r"^accuracy       : [\d.]+% where it answers",
        r"^false passes   : 0$",
    )


def test_redaction_corpus():
    result = bench("redaction_corpus.py")
    assert_ran(
        result,
        r"^\d+ samples \(\d+ with labelled spans, \d+ without\)",
        r"^\| email \| \d+ \| \d+ \| [\d.]+ \| [\d.]+ \|$",
    )


def test_otlp_decode():
    result = bench("otlp_decode.py", "--only", "nested", "normal", "members")
    assert result.returncode == 0, result.stderr
    assert "400: Body has more than 64" in result.stdout and "512 spans mapped" in result.stdout


def test_trace_worst():
    result = bench("trace_worst.py", "--repeat", "1")
    assert_ran(
        result,
        r"^JSON, every field at its limit .* [\d.]+ s CPU",
        r"^natural language, long fields .* s CPU",
        target_missed=r"OVER the",
    )


def test_trace_on_sqlite():
    result = bench("trace.py", "--requests", "5", "--db", "sqlite", "--port", str(free_port()))
    assert_ran(
        result,
        r"^TRACE bench: 5 requests, db=sqlite",
        r"^POST /trace \(6 metrics.*\s[\d.]+\s+[\d.]+$",
        r"^ratio server p50 / ragas.evaluate",
    )


def test_testsets_on_sqlite():
    result = bench("testsets.py", "--items", "20")
    assert_ran(
        result,
        r"^POST /test-sets \(version 1\)\s+\d+ ms",
        r"^POST import CSV as a new test set\s+\d+ ms",
        r"^database: sqlite, items: 20",
    )


def test_concurrent_writers():
    result = bench("concurrent_writers.py", "--clients", "4", "--calls", "2", "--port", str(free_port()))
    assert_ran(result, r"^requests sent: 16\s+failures: 0\s+traces wrong after read-back: 0/4", r"^latency ms: p50 \d+")


def test_nlquery():
    if not (shutil.which("prometheus") and shutil.which("promtool")):
        pytest.skip("needs the prometheus and promtool binaries")
    result = bench("nlquery.py", "--rounds", "1")
    assert_ran(
        result,
        r"^Show CPU usage for the last hour\s+[\d.]+\s+[\d.]+\s+ok, \d+ points",
        r"^ALL\s+[\d.]+",
        r"^share of node time by step: parse",
    )


# PostgreSQL.


def test_testsets_on_postgres(pg):
    result = bench("testsets.py", "--items", "20", env={"DATABASE_URL": f"{pg['base']}/{pg['name']}_testsets"})
    assert_ran(result, r"^PUT one item changed \(version 2\)\s+\d+ ms", r"^database: postgresql, items: 20")


def test_trace_on_postgres(default_pg):
    result = bench(
        "trace.py",
        "--requests",
        "5",
        "--db",
        "postgres",
        "--database",
        f"{default_pg['name']}_rag",
        "--port",
        str(free_port()),
    )
    assert_ran(result, r"^TRACE bench: 5 requests, db=postgres", r"^POST /trace \(6 metrics.*\s[\d.]+\s+[\d.]+$")


def test_runs(pg):
    redis = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
    target = urlsplit(redis)
    if target.hostname not in LOOPBACK or shutil.which("redis-cli") is None:
        pytest.skip("needs Redis on loopback and redis-cli")
    try:
        socket.create_connection((target.hostname, target.port or 6379), timeout=1).close()
    except OSError:
        pytest.skip(f"needs Redis at {redis}")
    result = bench(
        "runs.py",
        "--items",
        "3",
        "--latency",
        "0.01",
        "--workers",
        "1",
        "--pg",
        pg["base"],
        "--db",
        f"{pg['name']}_runs",
        "--redis",
        redis,
    )
    assert_ran(
        result,
        r"^run completed: 3/3 items, \d+ passed; 9 criteria and 12 rule verdicts",
        r"^measured wall time \[per-verdict\]: [\d.]+ s",
        r"^item duration: p50 \d+ ms",
    )


def test_results(default_pg):
    result = bench(
        "results.py",
        "--results",
        "200",
        "--samples",
        "2",
        "--db",
        f"{default_pg['name']}_results",
        "--port",
        str(free_port()),
    )
    assert_ran(
        result,
        r"^loaded 2 runs x 200 results",
        r"^run page\s+\d+\s+[\d.]+\s+[\d.]+",
        r"^comparison page\s+\d+",
        r"^GET /runs/\{id\}/results\?limit=100\s+\d+",
        r"^GET /runs/\{id\}/results \(default: the whole list, streamed\): 200 results",
        target_missed=r"target p95 <= 200 ms .*: NOT met",
    )


def test_profile_per_call(pg):
    result = bench(
        "profile_per_call.py", "--traces", "5", "--calls", "2", "--pg", pg["base"], "--db", f"{pg['name']}_profile"
    )
    assert_ran(result, r"^25 requests, statuses .*: CPU [\d.]+ ms per request")


def test_ingest_batches(pg):
    result = bench(
        "ingest.py",
        "--traces",
        "50",
        "--calls",
        "2",
        "--batch",
        "10",
        "--clients",
        "1",
        "--server-workers",
        "1",
        "--port",
        str(free_port()),
        "--pg",
        pg["base"],
        "--db",
        f"{pg['name']}_ingest",
        # The PII redaction path (every detector on) runs here; test_ingest_per_call runs with it off.
        "--redaction",
    )
    assert_ran(
        result,
        r"^redaction: on, every detector$",
        r"server CPU [\d,]+ us per trace",
        r"^ratio\s+: API is [\d.]+x slower than raw COPY",
    )


def test_ingest_per_call(pg):
    result = bench(
        "ingest.py",
        "--per-call",
        "--traces",
        "10",
        "--calls",
        "2",
        "--clients",
        "2",
        "--server-workers",
        "1",
        "--port",
        str(free_port()),
        "--pg",
        pg["base"],
        "--db",
        f"{pg['name']}_ingest",
    )
    assert_ran(
        result,
        r"^per-call ingest: 50 requests in [\d.]+ s",
        r"^errors: 0$",
        r"^stored: 10/10 traces completed with 2 gap-free tool calls",
    )


def test_otlp(pg):
    result = bench(
        "otlp.py",
        "--requests",
        "4",
        "--spans-per-request",
        "22",
        "--tools",
        "10",
        "--clients",
        "1",
        "--server-workers",
        "1",
        "--port",
        str(free_port()),
        "--pg",
        pg["base"],
        "--db",
        f"{pg['name']}_otlp",
        "--redaction",
    )
    assert_ran(
        result,
        r"^redaction: on, every detector$",
        r"^evalsite OTLP : 88 spans in [\d.]+ s",
        r"^checked\s+: all 88 spans stored exactly once",
        r"^ratio\s+: the receiver reaches \d+% of raw COPY",
    )


def test_otlp_assembly(pg):
    result = bench("otlp_assembly.py", "--children", "300", "--calls", "200", "--pg", pg["base"])
    assert_ran(
        result,
        r"^root after 300 waiting children .*\n\s+\{.*\"peak_mb\": \d+, \"tool_calls\": 300",
        r"^late earlier span on a 200-call trace .*\n\s+\{.*\"tool_calls\": 201",
    )


def test_agentic(pg):
    result = bench(
        "agentic.py",
        "--rows",
        "1000",
        "--batch-traces",
        "20",
        "--samples",
        "3",
        "--server-workers",
        "1",
        "--port",
        str(free_port()),
        "--pg",
        pg["base"],
        "--db",
        f"{pg['name']}_agentic",
    )
    assert_ran(
        result,
        r"^GET /summary\s+[\d.]+\s+[\d.]+",
        r"^streamed export \(jsonl\): 1,000 rows",
        r"^/evaluate/batch \(heuristic:v1\): 20 stored traces",
    )


def test_trace_list(default_pg):
    result = bench(
        "trace_list.py", "--traces", "1000", "--repeat", "3", "--database", f"{default_pg['name']}_tracelist"
    )
    assert_ran(
        result,
        r"^q exact session id\s+1\s+[\d.]+\s+[\d.]+",
        r"^target p95 < 200 ms",
        target_missed=r"target p95 < 200 ms: NOT met",
    )


def test_trace_read(default_pg):
    result = bench("trace_read.py", "--calls", "600", "--database", f"{default_pg['name']}_traceread")
    assert_ran(
        result,
        r"^loaded one trace of 600 tool calls",
        r"^GET /trace/\{id\} \(API\)\n  this code\s+[\d.]+ MB\s+[\d.]+ s   peak RSS\s+\d+ MB",
        r"^console trace page, last page\n  this code\s+[\d.]+ MB",
    )


def test_metrics_scrape(pg):
    result = bench(
        "metrics_scrape.py",
        "--traces",
        "500",
        "--names",
        "200",
        "--batch",
        "100",
        "--repeat",
        "2",
        "--pg",
        pg["base"],
        "--db",
        f"{pg['name']}_metrics",
    )
    assert_ran(
        result, r"^new names\s+limit 50: lines", r"^\s+200\s+[\d,]+\s+[\d,]+\s+[\d.]+\s+[\d,]+\s+[\d,]+\s+[\d.]+$"
    )


def test_migrate_scores(pg):
    result = bench(
        "migrate_scores.py",
        "--runs",
        "2",
        "--results",
        "10",
        "--agentic",
        "30",
        "--rag",
        "10",
        "--verdict-reviews",
        "4",
        "--metric-reviews",
        "6",
        "--queue-items",
        "6",
        "--pg",
        pg["base"],
        "--db",
        f"{pg['name']}_migrate",
    )
    assert_ran(
        result,
        r"^loaded 2 runs x 10 results \(147 verdicts\)",
        r"^forward : [\d,]+ Score rows in [\d.]+ s",
        r"^checked forward: .*: ok$",
        r"^backward: [\d,]+ Score rows in [\d.]+ s",
        r"^checked backward: .*: ok$",
    )


def test_retention(pg):
    result = bench(
        "retention.py",
        "--traces",
        "200",
        "--calls",
        "2",
        "--evaluations",
        "100",
        "--seconds",
        "1",
        "--pg",
        pg["base"],
        "--db",
        f"{pg['name']}_retention",
    )
    assert_ran(
        result,
        r"^expired 100 traces \(200 tool calls\) and 50 agentic evaluations in [\d.]+ s",
        r"p95 ratio [\d.]+",
        r"^table sizes .*scores_score",
    )
