"""The dashboard's reads, across runs and agentic evaluations. Each is a bounded number of queries,
whatever the number of runs, results or evaluations stored."""

from collections import defaultdict
from datetime import timedelta

from django.db.models import Avg, Count, Max, Min
from django.db.models.functions import TruncDay, TruncHour
from django.utils import timezone

RUNS_PER_BOT = 10
RECENT_RUNS_SCANNED = 300
TREND_DAYS = 30


def recent_runs_by_bot() -> list[dict]:
    """Per bot, its newest runs (newest first) and the pass-rate trend of its finished ones."""
    from apps.runs.selectors import runs_with_bot_names

    bots: dict[str, dict] = {}
    for run in runs_with_bot_names()[:RECENT_RUNS_SCANNED]:
        bot = bots.setdefault(run.agent_id, {"agent_id": run.agent_id, "name": run.bot_name_value or "(deleted bot)",
                                             "runs": []})
        if len(bot["runs"]) < RUNS_PER_BOT:
            bot["runs"].append(run)
    for bot in bots.values():
        bot["trend"] = [(r.created_at, r.pass_rate) for r in reversed(bot["runs"])
                        if r.is_finished and r.pass_rate is not None]
    return list(bots.values())


def agentic_score_trend() -> dict[str, list]:
    """Average overall score per agent per day over the last TREND_DAYS days (per hour when all of
    it falls within two days, so a new installation still shows a line)."""
    from apps.agentic.models import AgentEvaluation

    since = timezone.now() - timedelta(days=TREND_DAYS)
    recent = AgentEvaluation.objects.filter(created_at__gte=since, overall_score__isnull=False)
    span = recent.aggregate(first=Min("created_at"), last=Max("created_at"))
    if span["first"] is None:
        return {}
    bucket = TruncHour("created_at") if span["last"] - span["first"] <= timedelta(days=2) else TruncDay("created_at")
    series: dict[str, list] = defaultdict(list)
    rows = (recent.annotate(bucket=bucket).values("agent_name", "bucket").annotate(score=Avg("overall_score"))
            .order_by("agent_name", "bucket"))
    for row in rows:
        series[row["agent_name"] or "(unnamed agent)"].append((row["bucket"], row["score"]))
    return dict(series)


def agentic_score_distribution() -> list[tuple[str, int]]:
    from apps.agentic.selectors import evaluation_summary

    return list(evaluation_summary()["score_distribution"].items())


def newest_failed_results(limit: int = 10) -> list[dict]:
    from apps.runs.models import EvaluationResult
    from apps.runs.selectors import TABLE_FIELDS, first_failure, runs_with_bot_names

    results = list(EvaluationResult.objects.filter(state=EvaluationResult.State.DONE, passed=False)
                   .order_by("-finished_at", "-id").values(*TABLE_FIELDS, "run_id", "finished_at")[:limit])
    runs = {r.pk: r for r in runs_with_bot_names().filter(pk__in={row["run_id"] for row in results})}
    for row in results:
        row["run"] = runs.get(row["run_id"])
        row["anchor"], row["reason"] = first_failure(row["criteria_scores"], row["rubric_scores"])
        row["reason"] = row["reason"] or row["error"] or ""
    return results


def newest_poor_evaluations(limit: int = 10):
    from apps.agentic.models import AgentEvaluation

    return list(AgentEvaluation.objects.filter(rating__in=("poor", "failed")).order_by("-created_at", "-id")
                .only("session_id", "agent_name", "operation", "overall_score", "rating", "judge", "created_at")[:limit])


def run_counts() -> dict:
    from apps.runs.models import EvaluationRun

    return dict(EvaluationRun.objects.values_list("status").annotate(n=Count("id")).order_by())
