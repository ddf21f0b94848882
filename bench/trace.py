"""POST /trace through a real server process, against the same metrics computed by Ragas directly.

    .venv/bin/python bench/trace.py [--requests 300] [--db sqlite|postgres] [--database NAME] [--port 18700]

Starts gunicorn (one sync worker) on 127.0.0.1:--port with a fresh database (a temporary SQLite file, or
PostgreSQL database --database, default evalsite_bench_rag, at 127.0.0.1:5432, recreated), no LLM configured,
and sends
`--requests` POST /trace requests from this process (a new connection each, as gunicorn's sync worker
closes them) with the contract's payload asking for all six metrics, which without an LLM are
deterministic: Ragas' IDBasedContextRecall / IDBasedContextPrecision / NonLLMStringSimilarity and the
lexical methods. Every request parses, validates, scores and stores an evaluation.

Then, in this process, the Ragas metrics of that payload are computed directly in a loop, two ways:
awaiting each metric's single_turn_ascore (what the server does), and ragas.evaluate() on a one-sample
dataset (what a Ragas user writes). Prints p50/p95 of each and the ratio server / direct.
Target: p50 <= 15 ms per request and server overhead <= 2x direct Ragas.
"""

import argparse
import asyncio
import http.client
import json
import os
import sys
import tempfile
import time
import warnings

from harness import DEFAULT_PG, ROOT, Database, Gunicorn, create_api_key, migrate, percentile, server_env

sys.path.insert(0, str(ROOT))
PORT = 0  # main() sets it: the server's port
PAYLOAD = {
    "tests": [
        "answer_accuracy",
        "context_recall",
        "context_precision",
        "faithfulness",
        "answer_relevancy",
        "context_utilisation",
    ],
    "question": "What is the capital of France?",
    "contexts": [
        {"id": "ctx1", "text": "Paris is the capital of France."},
        {"id": "ctx2", "text": "Lyon is in France."},
    ],
    "answer": "Paris",
    "ground_truth": "Paris",
    "relevant_context_ids": ["ctx1"],
}


def post_trace(body: bytes, key: str) -> tuple[float, int, dict]:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    conn.request(
        "POST", "/trace", body=body, headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    )
    response = conn.getresponse()
    data = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    conn.close()
    return elapsed, response.status, json.loads(data)


def direct_ragas(rounds: int) -> tuple[list[float], list[float]]:
    os.environ["RAGAS_DO_NOT_TRACK"] = "true"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from ragas import EvaluationDataset, evaluate
        from ragas.dataset_schema import SingleTurnSample
        from ragas.metrics import IDBasedContextPrecision, IDBasedContextRecall, NonLLMStringSimilarity
    metrics = [IDBasedContextRecall(), IDBasedContextPrecision(), NonLLMStringSimilarity()]

    def sample():
        return SingleTurnSample(
            retrieved_context_ids=[c["id"] for c in PAYLOAD["contexts"]],
            reference_context_ids=PAYLOAD["relevant_context_ids"],
            response=PAYLOAD["answer"],
            reference=PAYLOAD["ground_truth"],
        )

    loop = asyncio.new_event_loop()

    async def all_metrics():
        s = sample()
        return [await m.single_turn_ascore(s) for m in metrics]

    ascore_ms, evaluate_ms = [], []
    for _ in range(20):
        loop.run_until_complete(all_metrics())
        evaluate(EvaluationDataset(samples=[sample()]), metrics=metrics, show_progress=False)
    for _ in range(rounds):
        started = time.perf_counter()
        loop.run_until_complete(all_metrics())
        ascore_ms.append((time.perf_counter() - started) * 1000)
    for _ in range(rounds):
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            evaluate(EvaluationDataset(samples=[sample()]), metrics=metrics, show_progress=False)
        evaluate_ms.append((time.perf_counter() - started) * 1000)
    loop.close()
    return ascore_ms, evaluate_ms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--database", default="evalsite_bench_rag", help="the PostgreSQL database (--db postgres)")
    parser.add_argument("--pg", default=DEFAULT_PG, help="PostgreSQL server DSN without a database (--db postgres)")
    parser.add_argument("--keep", action="store_true", help="keep the PostgreSQL database afterwards")
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    args = parser.parse_args()

    var_dir = tempfile.mkdtemp(prefix="evalsite-bench-rag-")
    if args.db == "postgres":
        with Database(args.pg, args.database, keep=args.keep) as db:
            measure(args, var_dir, db.url)
    else:
        measure(args, var_dir, f"sqlite:///{var_dir}/bench.sqlite3")


def measure(args, var_dir: str, database_url: str) -> None:
    global PORT
    env = server_env(database_url, EVALSITE_VAR_DIR=var_dir, LOG_LEVEL="WARNING", RAGAS_DO_NOT_TRACK="true")
    migrate(env)
    key = create_api_key(env)
    with Gunicorn(env, port=args.port, workers=1) as server:
        PORT = server.port
        body = json.dumps({"query": json.dumps(PAYLOAD)}).encode()
        for _ in range(20):  # warm-up: Ragas imported, connections open
            _ms, status, answer = post_trace(body, key)
            assert status == 200, answer
        server_ms = []
        for _ in range(args.requests):
            ms, status, answer = post_trace(body, key)
            assert status == 200, answer
            server_ms.append(ms)
        # duration_ms stored with each evaluation: parse + validate + score inside the view, without
        # HTTP, Django, authentication and the INSERTs.
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
        conn.request("GET", f"/api/v1/trace/history?limit={args.requests}", headers={"Authorization": f"Bearer {key}"})
        service_ms = [r["duration_ms"] for r in json.loads(conn.getresponse().read())["results"]]
        conn.close()

    ascore_ms, evaluate_ms = direct_ragas(args.requests)
    print(
        f"TRACE bench: {args.requests} requests, db={args.db}, gunicorn 1 sync worker on 127.0.0.1:{PORT}, "
        f"no LLM; scores {answer['evaluation_scores']}"
    )
    rows = [
        ("POST /trace (6 metrics, parse+score+store, HTTP)", server_ms),
        ("  of which parse+validate+score (stored duration_ms)", service_ms),
        ("Ragas direct: 3 metrics' single_turn_ascore", ascore_ms),
        ("Ragas direct: ragas.evaluate(1-sample dataset)", evaluate_ms),
    ]
    print(f"{'':<52} {'p50 ms':>8} {'p95 ms':>8}")
    for label, values in rows:
        print(f"{label:<52} {percentile(values, 0.5):8.2f} {percentile(values, 0.95):8.2f}")
    p50 = percentile(server_ms, 0.5)
    for label, values in rows[2:]:
        print(f"ratio server p50 / {label.split(': ', 1)[1]} p50 = {p50 / percentile(values, 0.5):.1f}x")
    print(f"target p50 <= 15 ms: {'met' if p50 <= 15 else 'NOT met'}")
    best_direct = max(percentile(ascore_ms, 0.5), percentile(evaluate_ms, 0.5))
    print(
        f"target server <= 2x direct Ragas: {'met' if p50 <= 2 * best_direct else 'NOT met'} "
        f"(HTTP, Django, authentication and storing the evaluation are the difference; see the duration_ms row)"
    )


if __name__ == "__main__":
    main()
