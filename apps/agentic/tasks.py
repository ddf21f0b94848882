from celery import shared_task

from . import services

# Celery's autodiscovery imports each app's `tasks` module only: the rules' task is registered
# through this import.
from .rules.tasks import evaluate_for_rule  # noqa: F401


@shared_task(name="apps.agentic.tasks.evaluate_traces")
def evaluate_traces(trace_ids: list[int], judge_name: str | None = None, force: bool = False) -> int:
    return services.evaluations_create_for_trace_ids(trace_ids=trace_ids, judge_name=judge_name, force=force)
