"""Evaluation run throughput against slow outside services.

    .venv/bin/python bench/runs.py [--items 200] [--latency 0.1] [--concurrency 10] [--workers 2]
                                   [--judge-concurrency 4] [--judge-batch off|on|auto]

A fake bot (evalsite's HTTP bot contract) and a fake OpenAI-compatible judge each answer after
--latency seconds. The test set has --items single-turn items with 3 success criteria each and the
rubric 4 rules, so every item costs 1 bot call and 7 judge calls. Two Celery worker processes
(threads pool) consume from Redis and write to a fresh PostgreSQL database. The old ideal wall time
is the total sequential latency divided by the run's concurrency (every call of an item in
sequence, as the engine worked before it judged an item's verdicts concurrently); the script prints
the measured wall time beside it and the ratio (the target is at most 0.5x), with the load average.

--judge-batch sets EVALSITE_JUDGE_BATCH for the workers: off (default), the item's 7 verdicts are 7
judge requests, --judge-concurrency at a time; on, one batched request per item answers all 7. The
old ideal is the same in both modes (it counts 7 judge calls per item, as the old engine made).

The clock starts once every worker answers a ping, so a worker's boot (seconds of CPU: Django setup,
system checks) is neither timed nor counted in the workers' CPU. Options in RUN_CREATE_OPTIONS are
passed to run_create as they are; a run_create argument such as repeats is benchmarked by adding it
there (the old ideal then counts every attempt's calls).
"""

import argparse
import os
import resource
import signal
import subprocess
import sys
import time
import uuid

from harness import ROOT, add_database_args, cpu_seconds, database_from_args, migrate, percentile

sys.path.insert(0, str(ROOT))


def _cpu_seconds(pid: int) -> float:
    return cpu_seconds([pid])


# Passed to run_create as they are, each one a --option of this script (e.g. --concurrency 10): a new
# run_create argument is benchmarked by adding it here ("repeats": 1 gives --repeats N).
RUN_CREATE_OPTIONS = {"concurrency": 10, "repeats": 1}


def _own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _wait_until_ready(count: int) -> None:
    """Until `count` workers answer a ping: a worker booting on a loaded 2-core machine can take
    10 s or more, and a run started before it is ready would time its boot."""
    from evalsite.celery import app

    deadline = time.perf_counter() + 120
    while len(app.control.ping(timeout=0.5)) < count:
        if time.perf_counter() > deadline:
            raise SystemExit(f"{count} Celery workers did not answer within 2 minutes")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    for name, default in RUN_CREATE_OPTIONS.items():
        parser.add_argument(f"--{name}", type=int, default=default, help=f"run_create's {name}")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--judge-concurrency",
        type=int,
        default=None,
        help="EVALSITE_JUDGE_CONCURRENCY_PER_ITEM for the workers (default: the setting's default)",
    )
    parser.add_argument(
        "--judge-batch",
        choices=("off", "on", "auto"),
        default="off",
        help="EVALSITE_JUDGE_BATCH for the workers: on asks for an item's verdicts in one request",
    )
    add_database_args(parser, db="evalsite_bench_runs")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    args = parser.parse_args()

    from tests.fakes.bot_server import FakeBotServer
    from tests.fakes.openai_server import ScriptedOpenAIServer, judge_reply

    judge = ScriptedOpenAIServer().start()
    judge.default = judge_reply(passed=True, score=1.0, reasoning="Met.")  # per-verdict and batched requests
    judge.default_delay = args.latency
    bot_server = FakeBotServer(
        lambda r: (200, {"reply": "Full-time employees accrue 15 days of PTO per year.", "tool_calls": []}),
        delay=args.latency,
    )
    bot_server.__enter__()

    db = database_from_args(args).create()
    env = {
        **os.environ,
        "DATABASE_URL": db.url,
        "SECRET_KEY": uuid.uuid4().hex,
        "DEBUG": "0",
        "SECURE_SSL_REDIRECT": "0",
        "CELERY_BROKER_URL": args.redis,
        "OPENAI_BASE_URL": judge.url,
        "OPENAI_API_KEY": "bench",
        "EVALSITE_JUDGE_MODEL": "bench-judge",
        "DJANGO_SETTINGS_MODULE": "evalsite.settings",
        "LOG_LEVEL": "WARNING",
        # The fake bot listens on loopback, which the outbound guard refuses unless allowed.
        "EVALSITE_OUTBOUND_ALLOW": "127.0.0.1",
        **({"EVALSITE_JUDGE_CONCURRENCY_PER_ITEM": str(args.judge_concurrency)} if args.judge_concurrency else {}),
        "EVALSITE_JUDGE_BATCH": args.judge_batch,
    }
    os.environ.update(env)
    migrate(env)
    subprocess.run(["redis-cli", "-u", args.redis, "FLUSHDB"], check=True, capture_output=True)

    import django

    django.setup()
    from apps.bots.schemas import BotIn
    from apps.bots.services import bot_create
    from apps.core.models import Project
    from apps.rubrics.schemas import RubricContent
    from apps.rubrics.services import rubric_create
    from apps.runs import services
    from apps.runs.models import EvaluationResult, EvaluationRun
    from apps.runs.schemas import RunCreateIn
    from apps.runs.selectors import run_judge_fingerprints
    from apps.testsets.schemas import TestSetContent
    from apps.testsets.services import testset_create

    project = Project.objects.default()
    bot = bot_create(
        data=BotIn.model_validate({"name": "bench bot", "adapter": "http", "endpoint_url": bot_server.url}),
        project=project,
    )
    test_set = testset_create(
        content=TestSetContent.model_validate(
            {
                "agent_id": bot.agent_id,
                "name": "bench",
                "items": [
                    {
                        "type": "single_turn",
                        "name": f"item {i}",
                        "inputs": {"message": f"Question {i} about PTO?"},
                        "expected": {"success_criteria": [f"Criterion {c} of item {i}" for c in range(3)]},
                    }
                    for i in range(args.items)
                ],
            }
        ),
        project=project,
        changelog="bench",
        author="bench",
    )
    rubric = rubric_create(
        content=RubricContent.model_validate(
            {
                "agent_id": bot.agent_id,
                "name": "bench rubric",
                "rules": [
                    {
                        "id": f"RULE_{r}",
                        "name": f"Rule {r}",
                        "severity": "medium",
                        "category": "bench",
                        "description": "d",
                        "evaluation_criteria": {"pass_conditions": ["is fine"], "fail_conditions": []},
                    }
                    for r in range(4)
                ],
            }
        ),
        project=project,
        changelog="bench",
        author="bench",
    )

    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "evalsite",
                "worker",
                "--pool=threads",
                f"--concurrency={args.concurrency}",
                "--without-gossip",
                "--without-mingle",
                "--loglevel=WARNING",
                "-n",
                f"bench{n}@%h",
            ],
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        for n in range(args.workers)
    ]
    try:
        _wait_until_ready(len(workers))
        # Booting a worker (Django setup, system checks, imports) costs seconds of CPU: the run is
        # measured from here, and so is the workers' CPU.
        boot_cpu = sum(_cpu_seconds(w.pid) for w in workers)
        own_cpu = _own_cpu_seconds()
        started = time.perf_counter()
        run = services.run_create(
            project=project,
            data=RunCreateIn(
                agent_id=bot.agent_id,
                test_set_id=test_set.pk,
                rubric_id=rubric.pk,
                **{name: getattr(args, name) for name in RUN_CREATE_OPTIONS},
            ),
        )
        last = -1
        while True:
            run = EvaluationRun.objects.get(pk=run.pk)
            if run.completed != last and run.completed % 20 == 0:
                print(f"  {run.completed}/{run.total} items", flush=True)
                last = run.completed
            if run.is_finished:
                break
            if time.perf_counter() - started > 900:
                raise SystemExit("run did not finish within 15 minutes")
            time.sleep(0.05)
        wall = time.perf_counter() - started
        load = os.getloadavg()
        worker_cpu = sum(_cpu_seconds(w.pid) for w in workers) - boot_cpu
        own_cpu = _own_cpu_seconds() - own_cpu
    finally:
        for w in workers:
            os.killpg(w.pid, signal.SIGTERM)
        for w in workers:
            w.wait(timeout=30)

    from django.conf import settings

    per_item = settings.EVALSITE_JUDGE_CONCURRENCY_PER_ITEM
    bot_calls, judge_calls = len(bot_server.requests), len(judge.chat_requests)
    # The old engine made one judge call per verdict: the ideal counts verdicts, not the requests this
    # mode made (the bench's items have no tool checks, so every verdict is an LLM verdict).
    verdicts = run.criteria_total + run.rubric_rules_total
    sequential = (bot_calls + verdicts) * args.latency
    ideal = sequential / args.concurrency
    if args.judge_batch == "off":
        mode = f"per-verdict, {per_item} judge requests at a time per item"
    else:
        mode = f"batched (EVALSITE_JUDGE_BATCH={args.judge_batch}): one judge request per item for all its verdicts"
    print(
        f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end; "
        f"{args.workers} Celery workers (threads) on Redis; PostgreSQL"
    )
    print(f"judge mode: {mode}")
    print(
        f"judge requests at once: at most {args.concurrency * per_item} (concurrency x per-item limit), "
        f"the fake judge saw {judge.peak_in_flight}"
    )
    print(
        f"run {run.status}: {run.completed}/{run.total} items, {run.passed} passed; "
        f"{run.criteria_total} criteria and {run.rubric_rules_total} rule verdicts, judge {run.judge}, "
        f"verdict fingerprints {sorted({f['judge'] for f in run_judge_fingerprints(runs=[run])[run.pk]})}"
    )
    print(f"calls: {bot_calls} to the bot, {judge_calls} to the judge, each {args.latency * 1000:.0f} ms")
    print(
        f"old sequential ideal ({bot_calls} bot calls + {verdicts} judge calls, one per verdict, in sequence = "
        f"{sequential:.1f} s / concurrency {args.concurrency}): {ideal:.2f} s"
    )
    print(
        f"measured wall time [{'per-verdict' if args.judge_batch == 'off' else 'batched'}]: {wall:.2f} s  "
        f"beside the old ideal {ideal:.2f} s  ->  {wall / ideal:.3f}x "
        f"(target <= 0.5x: {'met' if wall <= 0.5 * ideal else 'NOT met'})"
    )
    # Where the excess goes: inside an item (judge client, database writes) or between items (dispatch).
    durations = sorted(EvaluationResult.objects.filter(run=run).values_list("duration_ms", flat=True))
    # One bot call, then the 7 verdicts in waves of per_item, or in one batched request.
    judge_rounds = 1 if args.judge_batch != "off" else -(-verdicts // run.total // per_item)
    floor_ms = (1 + judge_rounds) * args.latency * 1000
    print(
        f"CPU: workers {worker_cpu:.1f} s during the run ({boot_cpu:.1f} s booting before it), "
        f"this process (fake bot and judge, polling the run) {own_cpu:.1f} s, over {wall:.1f} s wall "
        f"on {os.cpu_count()} cores"
    )
    print(
        f"item duration: p50 {percentile(durations, 0.5)} ms, p95 {percentile(durations, 0.95)} ms "
        f"(floor {floor_ms:.0f} ms: 1 bot call, then {judge_rounds} round(s) of judge calls)"
    )
    bot_server.__exit__(None, None, None)
    judge.stop()
    if not args.keep:
        db.drop()


if __name__ == "__main__":
    main()
