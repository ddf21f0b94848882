"""A run with 100,000 results behind a real server on PostgreSQL: the run page, the results API and
the comparison.

    .venv/bin/python bench/results.py [--results 100000] [--samples 30] [--keep] [--reuse]

Recreates the database (default evalsite_bench_results at 127.0.0.1:5432, user postgres), migrates
it and loads two completed runs of one test set with `--results` results each by COPY: the base run
and a head run in which some items regressed, some were fixed and a few are unassessed. Every result
carries what the engine stores: the item (with tags and a priority), a two-message transcript with a
tool call, three criterion and four rubric-rule verdicts with reasoning, token usage and judge
fingerprints (about 4 KB of JSON per row). The runs' counters are the sums of their results, as the
engine would have kept them. The database is dropped at the end unless `--keep`; `--reuse`
measures one an earlier `--keep` left.

Then it starts gunicorn with evalsite/gunicorn.conf.py (2 workers x 8 threads, DEBUG off) and, as a
client over HTTP (a staff session for the console, a staff API key for the API), sends `--samples`
sequential requests to each URL after one unmeasured request (a worker's first view: its figures
come from what the run stored when it finished, its digest and its kept comparison with the run
before it), and prints p50 / p95 / max, the unmeasured first request, the bytes of an answer,
the load average, and the peak RSS of the server's workers.
Target: p95 <= 200 ms for the run page, a results page and the comparison.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psycopg

from harness import PYTHON, ROOT, Database, Gunicorn, free_port, migrate, percentile

sys.path.insert(0, str(ROOT))
# The loader below connects to this server (postgres@127.0.0.1:5432) by name.
PG = "postgres://postgres@127.0.0.1:5432"
TARGET_P95_MS = 200

TEST_SET = uuid.UUID("7e575e70-0000-4000-8000-000000000001")
RUBRIC = uuid.UUID("7e575e70-0000-4000-8000-000000000002")
AGENT = "be7c" * 6
TAGS = ["hr", "pto", "payroll", "benefits", "it", "security", "travel", "onboarding"]
PRIORITIES = ["high", "medium", "medium", "low"]
CRITERIA = [
    "Agent retrieves the policy from the handbook",
    "Response states the figure the policy gives",
    "Response cites the section it used",
    "Agent asks for the employee id before acting",
    "Response offers the next step",
    "Agent does not promise what the policy does not allow",
]
RULES = [
    ("BRIEF", "Brief, focused responses", "medium", "prompt"),
    ("USES_KB", "Uses the knowledge base", "high", "knowledge_base"),
    ("NO_HANDOFF", "No needless handoff", "high", "function"),
    ("TONE", "Friendly, professional tone", "low", "general"),
]
WORDS = (
    "the agent searched the handbook and quoted the accrual table before answering the question that the "
    "employee asked about carry over limits and the approval flow for requests made in the last quarter"
).split()
FINGERPRINT = {"judge": "llm", "model": "gpt-4o-mini", "prompt_template": "3f2a9c1d7b4e", "judge_version": "1"}
RESULT_COLUMNS = (
    "result_id",
    "run_id",
    "position",
    "test_case_id",
    "item_name",
    "item_type",
    "item",
    "state",
    "attempts",
    "heartbeat_at",
    "input",
    "output",
    "criteria_passed",
    "rubric_passed",
    "passed",
    "outcome",
    "duration_ms",
    "langsmith_run_id",
    "error",
    "created_at",
    "finished_at",
)
# Every verdict is a Score row (apps.scores), written as the engine writes them (Verdict.to_score).
SCORE_COLUMNS = (
    "subject_kind",
    "subject_id",
    "parent_id",
    "kind",
    "key",
    "position",
    "source",
    "status",
    "reason",
    "passed",
    "value",
    "label",
    "reasoning",
    "judge",
    "fingerprint",
    "usage",
    "attempt",
    "severity",
    "scope",
    "detail",
    "created_at",
)


def environment(database: str, port: int) -> dict:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "evalsite.settings",
        "DEBUG": "0",
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "SECRET_KEY": "bench-only-secret",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{database}",
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,testserver",
        "EVALSITE_VAR_DIR": f"/tmp/{database}-var",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "2",
        "GUNICORN_THREADS": "8",
        "GUNICORN_LOG_LEVEL": "warning",
        "GUNICORN_TIMEOUT": "600",
    }
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CELERY_BROKER_URL"):
        env.pop(name, None)
    os.environ.update(env)
    return env


def recreate_and_migrate(database: str, env: dict) -> None:
    Database(PG, database).create()
    migrate(env)


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _criterion(rng, text: str, status: str, passed: bool) -> dict:
    ok = status == "ok"
    return {
        "criterion": text,
        "passed": passed if ok else None,
        "score": (1.0 if passed else 0.0) if ok else None,
        "reasoning": _sentence(rng, rng.randint(15, 60)),
        "status": status,
        "judge": "openai:gpt-4o-mini",
        "usage": {
            "prompt_tokens": rng.randint(600, 1400),
            "completion_tokens": rng.randint(40, 160),
            "total_tokens": 1500,
        },
        "fingerprint": {**FINGERPRINT, "criterion": text},
        "kind": "success_criterion",
    }


def _rule(rng, rule: tuple, status: str, passed: bool) -> dict:
    rule_id, name, severity, scope = rule
    ok = status == "ok"
    return {
        "rule_id": rule_id,
        "rule_name": name,
        "severity": severity,
        "passed": passed if ok else None,
        "score": (1.0 if passed else 0.0) if ok else None,
        "reasoning": _sentence(rng, rng.randint(15, 60)),
        "status": status,
        "judge": "openai:gpt-4o-mini",
        "usage": {
            "prompt_tokens": rng.randint(600, 1400),
            "completion_tokens": rng.randint(40, 160),
            "total_tokens": 1500,
        },
        "fingerprint": {**FINGERPRINT, "rubric_version": 1},
        "component_scope": scope,
    }


def _verdicts(rng: random.Random, position: int, fail: bool, unassessed: bool) -> tuple[list, list]:
    """Three criteria and four rules; `fail` fails a criterion, `unassessed` skips a high rule."""
    texts = [CRITERIA[(position + k) % len(CRITERIA)] for k in range(3)]
    failing = rng.randrange(3) if fail else -1
    criteria = [_criterion(rng, text, "ok", k != failing) for k, text in enumerate(texts)]
    rules = []
    for k, rule in enumerate(RULES):
        if unassessed and k == 1:
            rules.append(_rule(rng, rule, "skipped", False))
        elif rule[2] != "high" and rng.random() < 0.1:
            rules.append(_rule(rng, rule, "ok", False))  # a warning
        elif rng.random() < 0.05:
            rules.append(_rule(rng, rule, "skipped", False))
        else:
            rules.append(_rule(rng, rule, "ok", True))
    return criteria, rules


def result_rows(run_pk: int, n: int, head: bool, started: datetime):
    """The rows of one run, and its counters as the engine would have summed them."""
    from apps.runs.judging.aggregate import coverage, item_outcome
    from apps.runs.judging.types import CRITERION, RULE, Verdict

    rng = random.Random(16 + head)
    shape = random.Random(99)  # the same items in both runs
    counters = dict.fromkeys(
        (
            "completed",
            "passed",
            "failed",
            "unassessed",
            "criteria_passed",
            "criteria_total",
            "rubric_rules_passed",
            "rubric_rules_total",
            "rubric_rules_skipped",
            "verdicts_scored",
            "verdicts_skipped",
            "verdicts_errored",
        ),
        0,
    )
    rows = []
    for position in range(n):
        case = uuid.UUID(int=(1 << 64) + position)
        tags = shape.sample(TAGS, shape.randint(0, 2))
        priority = shape.choice(PRIORITIES)
        message = _sentence(shape, shape.randint(8, 20)).rstrip(".") + "?"
        base_fail, base_unassessed = shape.random() < 0.15, shape.random() < 0.01
        if head:  # about 3% regress, 1% are fixed, 1% newly unassessed
            roll = rng.random()
            fail = (not base_fail and roll < 0.03) or (base_fail and roll >= 0.07)
            unassessed = base_unassessed or (0.5 < roll < 0.51)
        else:
            fail, unassessed = base_fail, base_unassessed
        item = {
            "item_id": str(case),
            "type": "single_turn",
            "name": f"item {position:06d}",
            "inputs": {"message": message},
            "tags": tags,
            "priority": priority,
            "expected": {
                "success_criteria": [CRITERIA[(position + k) % len(CRITERIA)] for k in range(3)],
                "should_use_tools": ["search_kb"],
                "should_not_use_tools": ["live_handoff"],
            },
        }
        criteria, rules = _verdicts(rng, position, fail, unassessed)
        criteria_verdicts = Verdict.list_from_json(criteria, kind=CRITERION)
        rule_verdicts = Verdict.list_from_json(rules, kind=RULE)
        criteria_passed, rubric_passed, passed, outcome = item_outcome(criteria_verdicts, rule_verdicts)
        answer = _sentence(rng, rng.randint(20, 70))
        output = {
            "messages": [
                {"role": "user", "content": message},
                {
                    "role": "assistant",
                    "content": answer,
                    "tool_calls": [
                        {
                            "name": "search_kb",
                            "arguments": {"query": message[:40]},
                            "result": _sentence(rng, 25),
                            "success": True,
                        }
                    ],
                },
            ]
        }
        finished = started + timedelta(milliseconds=40 * position + rng.randint(0, 30))
        rows.append(
            (
                (
                    uuid.uuid4(),
                    run_pk,
                    position,
                    case,
                    item["name"],
                    "single_turn",
                    json.dumps(item),
                    "done",
                    1,
                    finished,
                    json.dumps(item["inputs"]),
                    json.dumps(output),
                    criteria_passed,
                    rubric_passed,
                    passed,
                    outcome,
                    rng.randint(300, 9000),
                    None,
                    None,
                    started,
                    finished,
                ),
                criteria_verdicts + rule_verdicts,
            )
        )
        counters["completed"] += 1
        counters["passed"] += passed
        counters["failed"] += outcome == "failed"
        counters["unassessed"] += outcome == "unassessed"
        counters["criteria_passed"] += sum(v.counts_as_passed for v in criteria_verdicts)
        counters["criteria_total"] += len(criteria_verdicts)
        assessed = [v for v in rule_verdicts if v.assessed]
        counters["rubric_rules_passed"] += sum(v.counts_as_passed for v in assessed)
        counters["rubric_rules_total"] += len(assessed)
        counters["rubric_rules_skipped"] += len(rule_verdicts) - len(assessed)
        for key, value in coverage(criteria_verdicts + rule_verdicts).items():
            counters[f"verdicts_{key}"] += value
    return rows, counters


def _score_row(verdict, result_pk: int, run_pk: int, position: int, finished) -> tuple:
    row = verdict.to_score(result_pk=result_pk, run_pk=run_pk, attempt=1, position=position)
    return (
        row.subject_kind,
        row.subject_id,
        row.parent_id,
        row.kind,
        row.key,
        row.position,
        row.source,
        row.status,
        row.reason,
        row.passed,
        row.value,
        row.label,
        row.reasoning,
        row.judge,
        json.dumps(row.fingerprint),
        json.dumps(row.usage) if row.usage is not None else None,
        row.attempt,
        row.severity,
        row.scope,
        json.dumps(row.detail),
        finished,
    )


def load(n: int, database: str) -> tuple[str, str]:
    import django

    django.setup()
    from apps.core.models import Project
    from apps.runs.aggregates import compute_digest
    from apps.runs.models import EvaluationRun
    from apps.runs.services import run_comparison_keep

    started_at = datetime.now(UTC) - timedelta(days=1)
    run_ids = []
    t0 = time.perf_counter()
    with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{database}") as conn:
        # Columns the engine fills that have no database default: one attempt per item, and the
        # result's judge fingerprint hash (empty, as for results stored before fingerprints).
        extra_values = {"attempt": 1, "fingerprint": ""}
        extra = list(extra_values)
        for head in (False, True):
            run = EvaluationRun.objects.create(
                project=Project.objects.default(),
                agent_id=AGENT,
                test_set_id=TEST_SET,
                test_set_version=1,
                rubric_id=RUBRIC,
                rubric_version=1,
                status=EvaluationRun.Status.COMPLETED,
                total=n,
                judge="openai:gpt-4o-mini",
                concurrency=8,
                label="after the prompt change" if head else "baseline",
                started_at=started_at,
                completed_at=started_at + timedelta(hours=2),
                bot_llm_provider="openai",
                bot_llm_model="gpt-4.1",
            )
            rows, counters = result_rows(run.pk, n, head, started_at + timedelta(hours=3 * head))
            with conn.cursor().copy(
                f"COPY runs_evaluationresult ({', '.join(RESULT_COLUMNS + tuple(extra))}) FROM STDIN"
            ) as copy:
                for row, _ in rows:
                    copy.write_row(row + tuple(extra_values.values()))
            pks = dict(
                conn.execute("SELECT position, id FROM runs_evaluationresult WHERE run_id = %s", [run.pk]).fetchall()
            )
            with conn.cursor().copy(f"COPY scores_score ({', '.join(SCORE_COLUMNS)}) FROM STDIN") as copy:
                for row, verdicts in rows:
                    position, finished = row[2], row[-1]
                    kinds: dict = {}
                    for verdict in verdicts:
                        index = kinds[verdict.kind] = kinds.get(verdict.kind, -1) + 1
                        copy.write_row(_score_row(verdict, pks[position], run.pk, index, finished))
            # One attempt per item: the item figures a finished run stores are its attempt counters.
            EvaluationRun.objects.filter(pk=run.pk).update(
                items_passed_all=counters["passed"], items_passed_any=counters["passed"], **counters
            )
            run_ids.append((run.pk, str(run.run_id)))
            del rows
        conn.commit()
    print(f"loaded 2 runs x {n:,} results in {time.perf_counter() - t0:.0f} s")
    with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{database}", autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE scores_score")
    # What the engine does when a run finishes (services._finalize): its figures, stored on the run.
    for run_pk, _ in run_ids:
        t0 = time.perf_counter()
        run = EvaluationRun.objects.get(pk=run_pk)
        digest = compute_digest(run)
        EvaluationRun.objects.filter(pk=run_pk).update(
            digest=digest.to_json(),
            component_scores=digest.component_scores(),
            judge_fingerprints=digest.judge_fingerprints(),
        )
        print(f"finalized run {run_pk} (digest over its score rows) in {time.perf_counter() - t0:.1f} s")
    # And what its Celery task then does: keep the head run's comparison with the base (the run
    # before it), so the comparison page's first view reads one row.
    t0 = time.perf_counter()
    run_comparison_keep(run_pk=run_ids[1][0])
    print(f"kept the head run's comparison with the base run in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{database}", autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE runs_evaluationresult")
        conn.execute("VACUUM ANALYZE runs_evaluationrun")
        size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size('runs_evaluationresult'))").fetchone()[0]
        scores = conn.execute(
            # Summed over its partitions: a partitioned table (scores.0003) has no storage of its own.
            "SELECT pg_size_pretty(coalesce((SELECT sum(pg_total_relation_size(relid)) "
            "FROM pg_partition_tree('scores_score')), pg_total_relation_size('scores_score'))), "
            "(SELECT COUNT(*) FROM scores_score)"
        ).fetchone()
    print(
        f"vacuumed and analysed in {time.perf_counter() - t0:.0f} s; results table with indexes and TOAST: {size}; "
        f"scores table: {scores[0]} ({scores[1]:,} rows)"
    )
    return run_ids[0][1], run_ids[1][1]


def existing_runs(database: str) -> tuple[str, str]:
    with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{database}") as conn:
        rows = conn.execute(
            "SELECT run_id::text FROM runs_evaluationrun WHERE test_set_id = %s ORDER BY id", [TEST_SET]
        ).fetchall()
    return rows[0][0], rows[1][0]


def credentials(env: dict) -> tuple[str, str]:
    """(session cookie of a staff user, a staff API key)."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username="bench-reviewer", defaults={"is_staff": True})
    client = Client()
    client.force_login(user)
    key = (
        subprocess.run(
            [PYTHON, "manage.py", "create_api_key", "--user", "bench-api", "--staff"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    return client.cookies[settings.SESSION_COOKIE_NAME].value, key


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


class RssWatch:
    """Samples the RSS of the server's worker processes every 50 ms; keeps each one's peak."""

    def __init__(self, master: int):
        out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout.split()
        self.pids = [int(p) for p in out]
        self.peak = {pid: rss_kb(pid) for pid in self.pids}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.05):
            for pid in self.pids:
                self.peak[pid] = max(self.peak[pid], rss_kb(pid))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def now_mb(self) -> list[float]:
        return [rss_kb(pid) / 1024 for pid in self.pids]

    def peak_mb(self) -> list[float]:
        return [self.peak[pid] / 1024 for pid in self.pids]


def measure(client: httpx.Client, url: str, samples: int) -> dict:
    """One unmeasured request (it fills what the worker keeps per finished run), then `samples`
    sequential ones on the same keep-alive connection (so one worker answers them all)."""
    t0 = time.perf_counter()
    first = client.get(url)
    first_ms = (time.perf_counter() - t0) * 1000
    first.raise_for_status()
    timings = []
    for _ in range(samples):
        t0 = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - t0) * 1000)
        response.raise_for_status()
    ordered = sorted(timings)
    return {
        "first": first_ms,
        "p50": statistics.median(ordered),
        "p95": percentile(ordered, 0.95),
        "max": ordered[-1],
        "bytes": len(response.content),
    }


def stream_whole_list(client: httpx.Client, url: str) -> tuple[int, float, int]:
    """(results, seconds, bytes) of the results API's default answer, read as it streams."""
    t0 = time.perf_counter()
    size = 0
    tail = b""
    with client.stream("GET", url, timeout=1800) as response:
        response.raise_for_status()
        for chunk in response.iter_bytes():
            size += len(chunk)
            tail = (tail + chunk)[-200:]
    seconds = time.perf_counter() - t0
    count = client.get(url.replace("/results", "")).json()["completed"]
    assert tail.endswith(b"]"), "a complete JSON array"
    return count, seconds, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--db", default="evalsite_bench_results")
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--reuse", action="store_true", help="measure the database an earlier --keep left")
    parser.add_argument("--skip-whole-list", action="store_true", help="do not stream the results API's default answer")
    args = parser.parse_args()
    args.port = args.port or free_port()
    env = environment(args.db, args.port)
    if args.reuse:
        import django

        django.setup()
        base_id, head_id = existing_runs(args.db)
    else:
        recreate_and_migrate(args.db, env)
        base_id, head_id = load(args.results, args.db)
    session, key = credentials(env)
    server = Gunicorn(env, port=args.port, config="evalsite/gunicorn.conf.py")
    base_url = server.url
    ok = True
    try:
        server.start()
        time.sleep(1)  # both workers up
        pages = [
            ("run page", f"/console/runs/{head_id}/", True),
            ("run page, page 1,000 of the table", f"/console/runs/{head_id}/?page=1000", True),
            (
                "run page, failed single-turn items",
                f"/console/runs/{head_id}/?passed=false&item_type=single_turn",
                True,
            ),
            ("run page, unassessed, last page", f"/console/runs/{head_id}/?passed=unassessed&page=999", False),
            ("run page, search item name", f"/console/runs/{head_id}/?q=item+0999", False),
            ("run page, tag", f"/console/runs/{head_id}/?tag=payroll", False),
            ("run page, failed high rule", f"/console/runs/{head_id}/?failed_severity=high", False),
            ("comparison page", f"/console/runs/compare/?base={base_id}&head={head_id}", True),
        ]
        api = [
            ("GET /runs/{id}/results?limit=100", f"/api/v1/runs/{head_id}/results?limit=100", True),
            (
                "GET /runs/{id}/results?limit=100&offset=99900",
                f"/api/v1/runs/{head_id}/results?limit=100&offset={max(0, args.results - 100)}",
                True,
            ),
            (
                "GET /runs/{id}/results?passed=false&limit=100&offset=10000",
                f"/api/v1/runs/{head_id}/results?passed=false&limit=100&offset={args.results // 10}",
                True,
            ),
            ("GET /runs/{a}/compare/{b}", f"/api/v1/runs/{base_id}/compare/{head_id}", True),
            ("GET /runs/{id}", f"/api/v1/runs/{head_id}", False),
            (
                "GET /runs/{id}/items?limit=100&offset=99900",
                f"/api/v1/runs/{head_id}/items?limit=100&offset={max(0, args.results - 100)}",
                False,
            ),
            (
                "GET /runs/{id}/items?flaky=false&limit=100",
                f"/api/v1/runs/{head_id}/items?flaky=false&limit=100",
                False,
            ),
        ]
        load_before = os.getloadavg()
        print(
            f"\nmachine: {os.cpu_count()} cores (shared); load average before: "
            f"{load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}"
        )
        print(
            "server: gunicorn -c evalsite/gunicorn.conf.py, 2 workers x 8 threads, DEBUG off, PostgreSQL; "
            f"{args.samples} sequential requests per URL after one unmeasured first request"
        )
        print(f"\n{'request':<58} {'first ms':>9} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'KB':>7}")
        with RssWatch(server.pid) as rss:
            started_mb = rss.now_mb()
            for clients, rows in (
                ({"cookies": {"sessionid": session}}, pages),
                ({"headers": {"Authorization": f"Bearer {key}"}}, api),
            ):
                with httpx.Client(base_url=base_url, timeout=1800, **clients) as client:
                    for label, url, target in rows:
                        figures = measure(client, url, args.samples)
                        met = figures["p95"] <= TARGET_P95_MS
                        ok &= met or not target
                        flag = "" if not target else ("  target met" if met else "  ABOVE TARGET")
                        print(
                            f"{label:<58} {figures['first']:>9.0f} {figures['p50']:>8.1f} {figures['p95']:>8.1f} "
                            f"{figures['max']:>8.1f} {figures['bytes'] / 1024:>7.0f}{flag}"
                        )
            peak_pages_mb = rss.peak_mb()
            if not args.skip_whole_list:
                with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}) as client:
                    count, seconds, size = stream_whole_list(client, f"/api/v1/runs/{head_id}/results")
                print(
                    f"\nGET /runs/{{id}}/results (default: the whole list, streamed): {count:,} results, "
                    f"{size / 2**20:,.0f} MB in {seconds:.1f} s ({count / seconds:,.0f} results/s)"
                )
            peak_mb = rss.peak_mb()
        load_after = os.getloadavg()
        print(
            f"\nserver workers' RSS: {', '.join(f'{mb:.0f}' for mb in started_mb)} MB after start; peak "
            f"{', '.join(f'{mb:.0f}' for mb in peak_pages_mb)} MB over the pages and API calls"
            + ("" if args.skip_whole_list else f", {', '.join(f'{mb:.0f}' for mb in peak_mb)} MB with the whole list")
        )
        print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
        print(
            f"\ntarget p95 <= {TARGET_P95_MS} ms (run page, a results page, comparison page and API): "
            f"{'met' if ok else 'NOT met'}"
        )
    finally:
        server.stop()
        if not args.keep:
            Database(PG, args.db).drop()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
