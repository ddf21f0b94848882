from celery import shared_task

from . import services


@shared_task(name="apps.agentic.tasks.evaluate_traces")
def evaluate_traces(trace_ids: list[int], judge_name: str | None = None, force: bool = False) -> int:
    return services.evaluations_for_trace_ids(trace_ids=trace_ids, judge_name=judge_name, force=force)
