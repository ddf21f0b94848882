"""Worst-case CPU time of one POST /trace: the largest payload the field limits accept.

    .venv/bin/python bench/trace_worst.py [--over]

Builds payloads at the limits of apps/rag/payload.py (answer and every ground truth as long as allowed and
all different, so Levenshtein runs on each; as many contexts as allowed, each as long as allowed; the
natural-language form of the same) and times trace_evaluation_create in this process (parse, validate,
score, store in a temporary SQLite database, no LLM), the median of --repeat runs. Target: every case <= 1 s.
--over also times the same metrics on the 1.2 MB answer and ground truth of issue 12, past the limits,
to show what the limits prevent (that one is scored directly, as the API now refuses it with 422).
"""

import argparse
import random
import statistics
import string
import sys
import tempfile
import time

from harness import django_setup, server_env

TARGET_SECONDS = 1.0


def words(rng: random.Random, chars: int) -> str:
    out, size = [], 0
    while size < chars:
        word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9)))
        word += "." if rng.random() < 0.08 else ""
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:chars]


def setup_django() -> None:
    var_dir = tempfile.mkdtemp(prefix="evalsite-bench-worst-")
    django_setup(server_env(f"sqlite:///{var_dir}/bench.sqlite3", EVALSITE_VAR_DIR=var_dir, RAGAS_DO_NOT_TRACK="true"))
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def bench_small() -> dict:
    return {
        "question": "What is the capital of France?",
        "answer": "Paris.",
        "ground_truth": "Lyon",
        "contexts": [{"id": "c1", "text": "Paris is the capital of France."}],
        "relevant_context_ids": ["c1"],
    }


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--over", action="store_true")
    args = parser.parse_args()
    setup_django()
    import orjson

    from apps.rag import payload as limits
    from apps.rag.metrics.evaluate import score_metrics
    from apps.rag.parsing import parse_query
    from apps.rag.services import trace_evaluation_create

    rng = random.Random(12)
    tests = list(limits.SUPPORTED_TESTS)
    n_contexts = limits.MAX_CONTEXTS
    context_chars = min(limits.MAX_CONTEXT_CHARS, limits.MAX_CONTEXTS_TOTAL_CHARS // n_contexts)
    worst = {
        "tests": tests,
        "question": words(rng, limits.MAX_QUESTION_CHARS),
        "contexts": [{"id": f"ctx{i}", "text": words(rng, context_chars)} for i in range(n_contexts)],
        "answer": words(rng, limits.MAX_ANSWER_CHARS),
        "ground_truth": [words(rng, limits.MAX_GROUND_TRUTH_CHARS) for _ in range(limits.MAX_GROUND_TRUTHS)],
        "relevant_context_ids": [f"ctx{i}" for i in range(0, n_contexts, 2)],
    }
    one_long_context = {
        **worst,
        "contexts": [{"id": "big", "text": words(rng, limits.MAX_CONTEXT_CHARS)}],
        "relevant_context_ids": ["big"],
    }
    natural = (
        f"Evaluate {', '.join(tests)}. Question: {worst['question']}\nAnswer: {worst['answer']}\n"
        + "".join(f"Ground truth: {t}\n" for t in worst["ground_truth"])
        + "".join(f"Context {c['id']}: {c['text']}\n" for c in worst["contexts"])
        + "Relevant: ctx0, ctx2"
    )
    cases = {
        "JSON, every field at its limit": orjson.dumps(worst).decode(),
        "JSON, one context at its limit": orjson.dumps(one_long_context).decode(),
        "natural language, long fields": natural,
    }
    # Importing ragas takes seconds once per process; it is not what a request costs.
    trace_evaluation_create(query=orjson.dumps({"tests": tests, **bench_small()}).decode(), use_llm=False)
    failed = False
    print(
        f"limits: answer {limits.MAX_ANSWER_CHARS}, ground truth {limits.MAX_GROUND_TRUTHS} x "
        f"{limits.MAX_GROUND_TRUTH_CHARS}, question {limits.MAX_QUESTION_CHARS}, contexts {limits.MAX_CONTEXTS} x "
        f"{limits.MAX_CONTEXT_CHARS} (total {limits.MAX_CONTEXTS_TOTAL_CHARS}) characters"
    )
    for name, query in cases.items():
        seconds = timed(lambda q=query: trace_evaluation_create(query=q, use_llm=False), args.repeat)
        failed |= seconds > TARGET_SECONDS
        print(
            f"{name:40s} {len(query) / 1e6:6.2f} MB  {seconds:6.3f} s CPU  "
            f"{'ok' if seconds <= TARGET_SECONDS else 'OVER the ' + str(TARGET_SECONDS) + ' s target'}"
        )
    if args.over:
        big_answer, big_truth = words(rng, 1_200_000), words(rng, 1_200_000)
        small = orjson.dumps({"tests": ["answer_accuracy"], "answer": "x", "ground_truth": "y"}).decode()
        payload = parse_query(small).payload
        payload = payload.model_copy(update={"answer": big_answer, "ground_truth": big_truth})
        seconds = timed(lambda: score_metrics(["answer_accuracy"], payload, use_llm=False), 1)
        print(
            f"{'past the limits: 1.2 MB answer + truth':40s} {2.4:6.2f} MB  {seconds:6.3f} s CPU  (refused by the API)"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
