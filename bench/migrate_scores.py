"""Issue 22's data migrations at scale: verdict JSON, metric columns, RAG scores JSON and reviews to
Score rows, and back, on a PostgreSQL database with many runs.

    .venv/bin/python bench/migrate_scores.py [--runs 200] [--results 500] [--agentic 100000] [--rag 20000]
        [--verdict-reviews 2000] [--metric-reviews 2000] [--queue-items 3000] [--db evalsite_bench_migrate]
        [--profile forward|backward]

Builds a fresh database at the state before issue 22 (runs 0009, agentic 0004, rag 0002, queues 0001:
the whole schema migrated, then those four apps migrated back), loads old-style rows with COPY
(every result with three criterion verdicts and four rule verdicts in its JSON columns, a third of
them a correctness score too; agentic evaluations with their nine metric columns; RAG evaluations
with their scores/details JSON and test rows; verdict reviews, metric reviews, queue items), then
times the forward migration (every app to its newest) and the backward one (back to that state),
each in a child process of its own, whose peak RSS is its own. Checked: after forward, the Score
rows of each kind number the verdicts loaded and a sample of results' rows carry the loaded values;
after backward, a digest (md5 over every row, ids aside where they are new) of each old table equals
the one taken after loading, and the sampled results' JSON equals what was loaded. --profile prints
cProfile's top functions of one direction's child (slower: the profiler's own cost is in its time).

Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

from harness import PYTHON, ROOT, add_database_args, database_from_args, manage, server_env

# The state before issue 22: each app's last migration before its Score migrations.
BEFORE = (
    ("runs", "0009_run_api_key"),
    ("agentic", "0004_rollup_metric_coverage"),
    ("rag", "0002_alter_traceevaluation_options_and_more"),
    ("queues", "0001_initial"),
)
METRICS = ("task_adherence", "tool_call_accuracy", "intent_resolution")
RAG_TESTS = ("faithfulness", "answer_relevancy", "context_precision", "context_recall")
T0 = datetime(2026, 6, 1, tzinfo=UTC)

# Digests of the old tables: each query folds every row (in an order that does not depend on ids the
# round trip renumbers) into one md5. jsonb's text form is canonical, so key order does not count.
DIGESTS = {
    "results' verdict JSON": "SELECT md5(string_agg(concat_ws('|', id, criteria_scores, rubric_scores, scores), ';' "
    "ORDER BY id)) FROM runs_evaluationresult",
    "verdict reviews": "SELECT md5(string_agg(concat_ws('|', review_id, result_id, kind, key, judge_passed, "
    "judge_status, judge, passed, note, reviewer_name, created_at, reviewer_id), ';' ORDER BY review_id)) "
    "FROM runs_verdictreview",
    "agentic metric columns": "SELECT md5(string_agg(concat_ws('|', id, "
    + ", ".join(f"{m}, {m}_reasoning, {m}_status" for m in METRICS)
    + "), ';' ORDER BY id)) FROM agentic_agentevaluation",
    "RAG scores/details": "SELECT md5(string_agg(concat_ws('|', id, scores, details), ';' ORDER BY id)) "
    "FROM rag_traceevaluation",
    "RAG test rows": "SELECT md5(string_agg(concat_ws('|', evaluation_id, name, status, score, method, judge, "
    "missing), ';' ORDER BY evaluation_id, name)) FROM rag_traceevaluationtest",
    "metric reviews": "SELECT md5(string_agg(concat_ws('|', metric, score, passed, judge_score, judge_status, note, "
    "created_at, agent_evaluation_id, rag_evaluation_id, reviewer_id), ';' ORDER BY created_at, "
    "agent_evaluation_id, rag_evaluation_id)) FROM queues_metricreview",
    "queue items": "SELECT md5(string_agg(concat_ws('|', id, queue_id, result_id, agent_evaluation_id, "
    "rag_evaluation_id, origin, created_at), ';' ORDER BY id)) FROM queues_queueitem",
    "queue sample percent": "SELECT md5(string_agg(concat_ws('|', id, sample_percent), ';' ORDER BY id)) "
    "FROM queues_reviewqueue",
}


# The child: one migration plan, timed per migration, in a process whose memory is only its own.


def child(direction: str) -> None:
    import resource

    def rss() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    started: dict[str, float] = {}

    def progress(action, migration=None, fake=False):
        if action in ("apply_start", "unapply_start"):
            started[migration.app_label + "." + migration.name] = time.perf_counter()
        elif action in ("apply_success", "unapply_success"):
            name = migration.app_label + "." + migration.name
            seconds = time.perf_counter() - started[name]
            print(json.dumps({"migration": name, "seconds": seconds, "peak_rss_mb": rss()}), flush=True)

    executor = MigrationExecutor(connection, progress)
    targets = executor.loader.graph.leaf_nodes() if direction == "forward" else list(BEFORE)
    plan = executor.migration_plan(targets)
    print(json.dumps({"setup_rss_mb": rss(), "migrations": len(plan)}), flush=True)
    began = time.perf_counter()
    if os.environ.get("BENCH_PROFILE"):
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(executor.migrate, targets, plan=plan)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    else:
        executor.migrate(targets, plan=plan)
    print(json.dumps({"total_seconds": time.perf_counter() - began, "peak_rss_mb": rss()}), flush=True)


def run_child(env: dict[str, str], direction: str, profile: str | None = None) -> dict:
    env = {**env, "BENCH_PROFILE": "1"} if profile == direction else env
    result = subprocess.run(
        [PYTHON, __file__, "--child", direction], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    if profile == direction:
        print(result.stderr)
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {
        "setup_rss_mb": lines[0]["setup_rss_mb"],
        "migrations": [line for line in lines if "migration" in line],
        "total_seconds": lines[-1]["total_seconds"],
        "peak_rss_mb": lines[-1]["peak_rss_mb"],
    }


# Loading old-style rows.


def _score(rng: random.Random) -> float:
    return rng.randrange(9) / 8  # exact in binary: the round trip compares equal


def _criterion(rng, i, c):
    skipped = rng.random() < 0.05
    return {
        "criterion": f"Criterion {c} of item {i}",
        "passed": None if skipped else rng.random() < 0.8,
        "score": None if skipped else _score(rng),
        "reasoning": "needs an LLM judge: none configured" if skipped else f"Reasoning {i}.{c}",
        "status": "skipped" if skipped else "ok",
        "judge": "" if skipped else "openai:bench-judge",
        "kind": "semantic",
    }


def _rule(rng, i, r):
    return {
        "rule_id": f"RULE_{r}",
        "rule_name": f"Rule {r}",
        "severity": ("low", "medium", "high", None)[r],
        "passed": rng.random() < 0.9,
        "score": _score(rng),
        "reasoning": f"Rule {r} on item {i}",
        "status": "ok",
        "judge": "openai:bench-judge" if r % 2 else "code:regex",
        "component_scope": "bot" if r == 1 else None,
    }


def _correctness(rng, i):
    passed = rng.random() < 0.7
    comment = json.dumps({"passed": passed, "status": "ok", "judge": "code:exact", "reasoning": f"Exact {i}"})
    return {"correctness": {"score": 1.0 if passed else 0.0, "comment": comment}}


def load(db, args, rng: random.Random) -> dict:
    """COPYs the old rows; returns the expected counts and the sample of results (id -> loaded JSON)."""
    from psycopg.types.json import Jsonb

    counts = {"criterion": 0, "rule": 0, "correctness": 0, "agentic metric": 0, "rag metric": 0}
    sample: dict[int, dict] = {}
    step = max(1, args.runs * args.results // 200)
    with db.connect() as conn, conn.cursor() as cur:
        user = cur.execute(
            "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff, "
            "is_active, date_joined) VALUES ('!', false, 'reviewer', '', '', '', true, true, now()) RETURNING id"
        ).fetchone()[0]
        run_ids = [
            pk
            for (pk,) in cur.execute(
                "INSERT INTO runs_evaluationrun (run_id, agent_id, status, total, completed, passed, failed, "
                "concurrency, component_ids_filter, criteria_passed, criteria_total, rubric_rules_passed, "
                "rubric_rules_total, rubric_rules_skipped, bot_llm_provider, bot_llm_model, judge, created_at, "
                "bot_snapshot, label, unassessed, verdicts_errored, verdicts_scored, verdicts_skipped, flaky_items, "
                "items_passed_all, items_passed_any, repeats) "
                "SELECT gen_random_uuid(), 'bench-agent', 'completed', %(n)s, %(n)s, 0, 0, 10, '[]', 0, 0, 0, 0, 0, "
                "'', '', 'openai:bench-judge', %(t0)s + g * interval '1 hour', '{}', '', 0, 0, 0, 0, 0, 0, 0, 1 "
                "FROM generate_series(1, %(runs)s) g RETURNING id",
                {"n": args.results, "t0": T0, "runs": args.runs},
            ).fetchall()
        ]
        columns = (
            "result_id, position, test_case_id, item_name, item_type, item, state, attempts, input, output, "
            "criteria_passed, rubric_passed, passed, duration_ms, created_at, finished_at, run_id, outcome, attempt, "
            "fingerprint, scores, rubric_scores, criteria_scores"
        )
        index = 0
        with cur.copy(f"COPY runs_evaluationresult ({columns}) FROM STDIN") as copy:
            for run_id in run_ids:
                for position in range(args.results):
                    criteria = [_criterion(rng, index, c) for c in range(3)]
                    rules = [_rule(rng, index, r) for r in range(4)]
                    scores = _correctness(rng, index) if index % 3 == 0 else None
                    counts["criterion"] += 3
                    counts["rule"] += 4
                    counts["correctness"] += scores is not None
                    if index % step == 0:
                        sample[index] = {"criteria_scores": criteria, "rubric_scores": rules, "scores": scores}
                    created = T0 + timedelta(seconds=index)
                    copy.write_row(
                        (
                            uuid.uuid4(),
                            position,
                            uuid.uuid4(),
                            f"item {position}",
                            "single_turn",
                            Jsonb({}),
                            "done",
                            1,
                            Jsonb({"message": f"Question {position}?"}),
                            Jsonb({"reply": "ok"}),
                            all(c["passed"] for c in criteria),
                            all(r["passed"] for r in rules),
                            all(c["passed"] for c in criteria) and all(r["passed"] for r in rules),
                            200,
                            created,
                            created + timedelta(milliseconds=200),
                            run_id,
                            "passed",
                            1,
                            "",
                            None if scores is None else Jsonb(scores),
                            Jsonb(rules),
                            Jsonb(criteria),
                        )
                    )
                    index += 1
        result_ids = [pk for (pk,) in cur.execute("SELECT id FROM runs_evaluationresult ORDER BY id")]
        # The sample's keys were positions in COPY order; on a fresh table those are the ids' order.
        sample = {result_ids[i]: values for i, values in sample.items()}

        # Verdict reviews: a person overrules the first criterion of some results.
        reviewed = rng.sample(result_ids, min(args.verdict_reviews, len(result_ids)))
        judged = {
            pk: criteria
            for pk, criteria in cur.execute(
                "SELECT id, criteria_scores->0 FROM runs_evaluationresult WHERE id = ANY(%s)", [reviewed]
            )
        }
        with cur.copy(
            "COPY runs_verdictreview (review_id, kind, key, judge_passed, judge_status, judge, passed, note, "
            "reviewer_name, created_at, result_id, reviewer_id) FROM STDIN"
        ) as copy:
            for n, pk in enumerate(reviewed):
                verdict = judged[pk]
                ok = verdict["status"] == "ok"
                copy.write_row(
                    (
                        uuid.uuid4(),
                        "criterion",
                        verdict["criterion"],
                        bool(verdict["passed"]) if ok else None,
                        verdict["status"],
                        verdict["judge"],
                        not verdict["passed"],
                        f"Overruled {n}",
                        "reviewer",
                        T0 + timedelta(days=30, seconds=n),
                        pk,
                        user,
                    )
                )

        # Agentic evaluations with their nine metric columns.
        agentic_columns = (
            "session_id, source, agent_name, operation, overall_score, rating, judge, prompt_tokens, "
            "completion_tokens, total_tokens, fingerprint, created_at, "
            + ", ".join(f"{m}, {m}_reasoning, {m}_status" for m in METRICS)
        )
        agentic_metrics = {}
        with cur.copy(f"COPY agentic_agentevaluation ({agentic_columns}) FROM STDIN") as copy:
            for n in range(args.agentic):
                judge = "openai:bench-judge" if n % 4 == 0 else "heuristic:v1"
                metrics = []
                for m in range(3):
                    status = "error" if rng.random() < 0.02 else "ok"
                    metrics += [None if status == "error" else _score(rng), f"{METRICS[m]} of {n}", status]
                agentic_metrics[n] = (metrics[0], metrics[2])
                counts["agentic metric"] += 3
                copy.write_row(
                    (f"s-{n}", "api", f"Agent{n % 5}", "read", 0.5, "good", judge, 0, 0, 0, "", T0, *metrics)
                )
        agentic_ids = [pk for (pk,) in cur.execute("SELECT id FROM agentic_agentevaluation ORDER BY id")]

        # RAG evaluations: scores/details JSON and one test row per requested test (the last one missing).
        with cur.copy(
            "COPY rag_traceevaluation (created_at, query, source, payload, tests, missing, outcome, partial, judge, "
            "scores, details) FROM STDIN"
        ) as copy:
            for n in range(args.rag):
                scores = {name: _score(rng) for name in RAG_TESTS[:3]}
                details = {name: {"method": "deterministic", "reason": f"{name} of {n}"} for name in RAG_TESTS[:3]}
                copy.write_row(
                    (
                        T0,
                        f"query {n}",
                        "json",
                        Jsonb({}),
                        Jsonb(list(RAG_TESTS)),
                        Jsonb([]),
                        "partial",
                        True,
                        "",
                        Jsonb(scores),
                        Jsonb(details),
                    )
                )
        rag = list(cur.execute("SELECT id, scores FROM rag_traceevaluation ORDER BY id"))
        with cur.copy(
            "COPY rag_traceevaluationtest (evaluation_id, name, status, score, method, judge, missing) FROM STDIN"
        ) as copy:
            for pk, scores in rag:
                for name in RAG_TESTS[:3]:
                    copy.write_row((pk, name, "scored", scores[name], "deterministic", "", Jsonb([])))
                copy.write_row((pk, RAG_TESTS[3], "missing", None, "", "", Jsonb(["reference"])))
                counts["rag metric"] += 4
        rag_ids = [pk for pk, _ in rag]

        # Metric reviews, half agentic (a score) and half RAG (pass/fail), their judge columns as the
        # judge's own row answers them (what the reverse rebuilds).
        n_agentic = min(args.metric_reviews // 2, len(agentic_ids))
        n_rag = min(args.metric_reviews - n_agentic, len(rag_ids))
        with cur.copy(
            "COPY queues_metricreview (metric, score, passed, judge_score, judge_status, note, created_at, "
            "agent_evaluation_id, rag_evaluation_id, reviewer_id) FROM STDIN"
        ) as copy:
            for n, i in enumerate(rng.sample(range(len(agentic_ids)), n_agentic)):
                value, status = agentic_metrics[i]
                copy.write_row(
                    (
                        METRICS[0],
                        _score(rng),
                        None,
                        value,
                        status,
                        f"note {n}",
                        T0 + timedelta(days=40, seconds=n),
                        agentic_ids[i],
                        None,
                        user,
                    )
                )
            for n, i in enumerate(rng.sample(range(len(rag_ids)), n_rag)):
                pk, scores = rag[i]
                copy.write_row(
                    (
                        RAG_TESTS[0],
                        None,
                        rng.random() < 0.5,
                        scores[RAG_TESTS[0]],
                        "ok",
                        f"rag note {n}",
                        T0 + timedelta(days=41, seconds=n),
                        None,
                        pk,
                        user,
                    )
                )
        counts["human metric"] = n_agentic + n_rag
        counts["human verdict"] = len(reviewed)

        # Queues, one per kind, and their items spread over the three.
        queues = [
            pk
            for (pk,) in cur.execute(
                "INSERT INTO queues_reviewqueue (name, description, kind, include_unassessed, disagreement_prone, "
                "created_at, sample_percent) SELECT 'queue ' || k, '', k, false, false, now(), 25 "
                "FROM unnest(ARRAY['run_result', 'agentic_evaluation', 'rag_evaluation']) k RETURNING id"
            )
        ]
        per = args.queue_items // 3
        items = [(queues[0], pk, None, None) for pk in rng.sample(result_ids, min(per, len(result_ids)))]
        items += [(queues[1], None, pk, None) for pk in rng.sample(agentic_ids, min(per, len(agentic_ids)))]
        items += [(queues[2], None, None, pk) for pk in rng.sample(rag_ids, min(per, len(rag_ids)))]
        with cur.copy(
            "COPY queues_queueitem (queue_id, result_id, agent_evaluation_id, rag_evaluation_id, origin, created_at) "
            "FROM STDIN"
        ) as copy:
            for item in items:
                copy.write_row((*item, "hand", T0))
        counts["queue items"] = len(items)
        conn.commit()
    with db.connect(autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return {"counts": counts, "sample": sample}


def digests(db) -> dict[str, str]:
    with db.connect() as conn:
        return {name: conn.execute(sql).fetchone()[0] for name, sql in DIGESTS.items()}


# Checks.


def check_forward(db, loaded: dict) -> list[str]:
    counts, sample = loaded["counts"], loaded["sample"]
    problems = []
    with db.connect() as conn:
        found = dict(
            conn.execute(
                "SELECT CASE WHEN source = 'human' THEN 'human ' ELSE '' END || CASE subject_kind "
                "WHEN 'run_result' THEN (CASE WHEN source = 'human' THEN 'verdict' ELSE kind END) "
                "WHEN 'agentic_evaluation' THEN (CASE WHEN source = 'human' THEN 'metric' ELSE 'agentic metric' END) "
                "ELSE (CASE WHEN source = 'human' THEN 'metric' ELSE 'rag metric' END) END, count(*) "
                "FROM scores_score GROUP BY 1"
            ).fetchall()
        )
        for kind in (
            "criterion",
            "rule",
            "correctness",
            "agentic metric",
            "rag metric",
            "human verdict",
            "human metric",
        ):
            if found.get(kind, 0) != counts[kind]:
                problems.append(f"{kind}: {found.get(kind, 0)} Score rows, {counts[kind]} loaded")
        rows = conn.execute(
            "SELECT subject_id, kind, position, key, passed, value, status, reasoning, judge, severity, scope "
            "FROM scores_score WHERE subject_kind = 'run_result' AND source <> 'human' AND subject_id = ANY(%s) "
            "ORDER BY subject_id, kind, position",
            [list(sample)],
        ).fetchall()
    by_result: dict[int, list] = {}
    for row in rows:
        by_result.setdefault(row[0], []).append(row[1:])
    for pk, values in sample.items():
        expected = [
            ("criterion", p, c["criterion"], c["passed"], c["score"], c["status"], c["reasoning"], c["judge"], "", "")
            for p, c in enumerate(values["criteria_scores"])
        ]
        if values["scores"] is not None:
            comment = json.loads(values["scores"]["correctness"]["comment"])
            expected.append(
                (
                    "correctness",
                    0,
                    "correctness",
                    comment["passed"],
                    values["scores"]["correctness"]["score"],
                    "ok",
                    comment["reasoning"],
                    comment["judge"],
                    "",
                    "",
                )
            )
        expected += [
            (
                "rule",
                p,
                r["rule_id"],
                r["passed"],
                r["score"],
                r["status"],
                r["reasoning"],
                r["judge"],
                r["severity"] or "",
                r["component_scope"] or "",
            )
            for p, r in enumerate(values["rubric_scores"])
        ]
        if sorted(by_result.get(pk, []), key=lambda v: (v[0], v[1])) != sorted(expected, key=lambda v: (v[0], v[1])):
            problems.append(f"result {pk}: Score rows {by_result.get(pk)} != loaded {expected}")
            break
    return problems


def check_backward(db, loaded: dict, before: dict[str, str]) -> list[str]:
    problems = [f"{name}: digest differs after the round trip" for name, d in digests(db).items() if before[name] != d]
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT id, criteria_scores, rubric_scores, scores FROM runs_evaluationresult WHERE id = ANY(%s)",
            [list(loaded["sample"])],
        ).fetchall()
    for pk, criteria, rules, scores in rows:
        if {"criteria_scores": criteria, "rubric_scores": rules, "scores": scores} != loaded["sample"][pk]:
            problems.append(f"result {pk}: JSON after the round trip differs from what was loaded")
            break
    if len(rows) != len(loaded["sample"]):
        problems.append(f"{len(rows)} of {len(loaded['sample'])} sampled results found after the round trip")
    return problems


def report(direction: str, figures: dict, rows: int) -> None:
    seconds = figures["total_seconds"]
    print(
        f"{direction:<8}: {rows:,} Score rows in {seconds:.1f} s = {rows / seconds:,.0f} rows/s; migrating process "
        f"RSS {figures['setup_rss_mb']:.0f} MB after setup, peak {figures['peak_rss_mb']:.0f} MB "
        f"(+{figures['peak_rss_mb'] - figures['setup_rss_mb']:.0f} MB)"
    )
    slowest = sorted(figures["migrations"], key=lambda m: -m["seconds"])[:6]
    for migration in slowest:
        print(
            f"    {migration['migration']:<45} {migration['seconds']:7.2f} s"
            f"   peak RSS {migration['peak_rss_mb']:.0f} MB"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", choices=("forward", "backward"), help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--results", type=int, default=500, help="results per run (3 criteria + 4 rules each)")
    parser.add_argument("--agentic", type=int, default=100_000, help="agentic evaluations (3 metrics each)")
    parser.add_argument("--rag", type=int, default=20_000, help="RAG evaluations (4 tests each)")
    parser.add_argument("--verdict-reviews", type=int, default=2_000)
    parser.add_argument("--metric-reviews", type=int, default=2_000)
    parser.add_argument("--queue-items", type=int, default=3_000)
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument(
        "--profile",
        choices=("forward", "backward"),
        help="cProfile that direction (its time then includes the profiler)",
    )
    add_database_args(parser, db="evalsite_bench_migrate")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0

    with database_from_args(args) as db:
        env = server_env(db.url)
        started = time.perf_counter()
        manage(env, "migrate", "--noinput", "-v", "0")
        for app, name in reversed(BEFORE):
            manage(env, "migrate", app, name, "--noinput", "-v", "0")
        print(
            f"schema at the state before issue 22 ({', '.join(f'{a} {n[:4]}' for a, n in BEFORE)}): "
            f"{time.perf_counter() - started:.1f} s"
        )

        started = time.perf_counter()
        loaded = load(db, args, random.Random(args.seed))
        counts = loaded["counts"]
        verdicts = counts["criterion"] + counts["rule"] + counts["correctness"]
        rows = sum(v for k, v in counts.items() if k != "queue items")
        print(
            f"loaded {args.runs} runs x {args.results} results ({verdicts:,} verdicts), {args.agentic:,} agentic "
            f"evaluations ({counts['agentic metric']:,} metrics), {args.rag:,} RAG evaluations "
            f"({counts['rag metric']:,} tests), {counts['human verdict']:,} verdict reviews, "
            f"{counts['human metric']:,} metric reviews, {counts['queue items']:,} queue items: "
            f"{time.perf_counter() - started:.1f} s"
        )
        before = digests(db)

        forward = run_child(env, "forward", args.profile)
        report("forward", forward, rows)
        problems = check_forward(db, loaded)
        print(
            f"checked forward: Score rows per kind = rows loaded, {len(loaded['sample'])} sampled results' "
            f"rows = their loaded verdicts: {'ok' if not problems else 'FAILED'}"
        )

        backward = run_child(env, "backward", args.profile)
        report("backward", backward, rows)
        back_problems = check_backward(db, loaded, before)
        print(
            f"checked backward: {len(DIGESTS)} table digests equal to after loading, {len(loaded['sample'])} "
            f"sampled results' JSON identical: {'ok' if not back_problems else 'FAILED'}"
        )
        print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} cores")
        for problem in problems + back_problems:
            print(f"  {problem}")
        return 1 if problems or back_problems else 0


if __name__ == "__main__":
    sys.exit(main())
