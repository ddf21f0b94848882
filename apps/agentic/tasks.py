from celery import shared_task

from . import services


@shared_task(name="apps.agentic.tasks.evaluate_traces")
def evaluate_traces(trace_ids: list[int], judge: str = "auto", force: bool = False) -> dict:
    outcome = services.evaluate_traces_by_id(trace_ids=trace_ids, judge=judge, force=force)
    return {"evaluated": len(outcome.evaluated), "missing": len(outcome.missing), "skipped": len(outcome.skipped)}
