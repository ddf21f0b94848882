"""The metrics_agent node against a local real Prometheus, with the rule-based parser.

    .venv/bin/python bench/nlquery.py [--rounds 30]

Starts the `prometheus` binary on a free port (temp config and storage, scraping itself every
second) with six hours of backfilled history (promtool), waits for samples, warms the metric-list cache,
then runs a set of questions `--rounds` times through the compiled LangGraph graph. Prints p50/p95 of
the whole node per question and overall, and each step's share of the node's time. The contract's
budget is 6 s with an LLM; the target without one is p95 <= 200 ms.
"""

import argparse
import os
import statistics
import sys
import time

from harness import ROOT, percentile

sys.path.insert(0, str(ROOT))

QUESTIONS = [
    "Show CPU usage for the last hour",
    "Average memory over the past 30 minutes",
    "Peak requests for job web in the last 15 minutes",
    "Show CPU usage on instance web-1:8000 for the last 6 hours",
    "Show go_goroutines between 00:00 and 23:59",
    "Total requests for job web for the last 6 hours",
    "Show memory for job web for the last 3 hours",
    "Show scrape duration for job prometheus for the last 5 minutes",
    "Show widgets for the last hour",  # metric_not_found
    "Show anomalies in CPU usage",  # unsupported_operation
]


def six_hours_of_history(now: float) -> str:
    """OpenMetrics for a 'web' job: 6 h at 15 s of two instances' CPU, memory and request counters,
    so the questions read realistic amounts of data, not a minute-old server's."""
    import math

    start = int(now) - 6 * 3600
    steps = range(6 * 3600 // 15)
    instances = ("web-1:8000", "web-2:8000")
    families = {
        "# TYPE process_cpu_seconds counter": [
            f'process_cpu_seconds_total{{job="web",instance="{inst}"}} {i * 15 * (0.2 + 0.1 * n):.3f} {start + 15 * i}'
            for n, inst in enumerate(instances)
            for i in steps
        ],
        "# TYPE process_resident_memory_bytes gauge": [
            f'process_resident_memory_bytes{{job="web",instance="{inst}"}} {2e8 + 3e7 * math.sin(i / 40 + n):.0f} '
            f"{start + 15 * i}"
            for n, inst in enumerate(instances)
            for i in steps
        ],
        "# TYPE http_requests counter": [
            f'http_requests_total{{job="web",instance="{inst}",code="{code}"}} {i * 15 * rate:.0f} {start + 15 * i}'
            for inst in instances
            for code, rate in (("200", 20), ("500", 0.5))
            for i in steps
        ],
    }
    return "\n".join(line for header, samples in families.items() for line in (header, *samples)) + "\n# EOF\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()

    from tests.fakes.prometheus import PrometheusProcess

    server = PrometheusProcess(history=six_hours_of_history(time.time() - 120))
    try:
        server.wait_ready()
        server.wait_for_samples("rate(process_cpu_seconds_total[2m])")
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAFANA_URL"):
            os.environ.pop(name, None)
        os.environ.update(
            {
                "DJANGO_SETTINGS_MODULE": "evalsite.settings",
                "DEBUG": "1",
                "LOG_LEVEL": "WARNING",
                "PROMETHEUS_URL": server.url,
            }
        )
        import django

        django.setup()
        from apps.nlquery.agent import STEPS, run_query

        for question in QUESTIONS:  # warm-up: graph compiled, metric list cached, connection open
            run_query(question, parser="rules")

        per_question: dict[str, list[float]] = {q: [] for q in QUESTIONS}
        all_ms: list[float] = []
        step_totals = dict.fromkeys(STEPS, 0.0)
        outcomes: dict[str, str] = {}
        for _ in range(args.rounds):
            for question in QUESTIONS:
                timings: dict[str, float] = {}
                started = time.perf_counter()
                state = run_query(question, parser="rules", step_timings=timings)
                elapsed = (time.perf_counter() - started) * 1000
                per_question[question].append(elapsed)
                all_ms.append(elapsed)
                for step, ms in timings.items():
                    step_totals[step] += ms
                error = state["error"]
                outcomes[question] = error.error_type if error else f"ok, {state['result'].datapoint_count} points"
    finally:
        server.cleanup()

    print(
        f"metrics_agent node, rule-based parser, local Prometheus; {args.rounds} rounds x "
        f"{len(QUESTIONS)} questions (graph.invoke, wall clock)"
    )
    print(f"{'question':<66} {'p50 ms':>8} {'p95 ms':>8}  outcome")
    for question, values in per_question.items():
        print(f"{question:<66} {percentile(values, 0.5):8.2f} {percentile(values, 0.95):8.2f}  {outcomes[question]}")
    print(
        f"{'ALL':<66} {percentile(all_ms, 0.5):8.2f} {percentile(all_ms, 0.95):8.2f}"
        f"  (mean {statistics.fmean(all_ms):.2f})"
    )
    in_steps = sum(step_totals.values())
    total = sum(all_ms)
    print(
        "share of node time by step: "
        + ", ".join(f"{step} {100 * ms / total:.1f}%" for step, ms in step_totals.items())
        + f", graph overhead {100 * (total - in_steps) / total:.1f}%"
    )
    print(f"target p95 <= 200 ms without an LLM: {'met' if percentile(all_ms, 0.95) <= 200 else 'NOT met'}")


if __name__ == "__main__":
    main()
