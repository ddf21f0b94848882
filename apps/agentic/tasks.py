from celery import shared_task

from . import services


@shared_task(name="apps.agentic.tasks.evaluate_traces")
def evaluate_traces(trace_ids: list[int], judge_name: str | None = None, force: bool = False) -> int:
    return services.evaluations_create_for_trace_ids(trace_ids=trace_ids, judge_name=judge_name, force=force)


@shared_task(name="apps.agentic.tasks.evaluate_for_rule")
def evaluate_for_rule(rule_id: int, trace_ids: list[int]) -> dict[str, int]:
    # Imported here: rule_services imports this module to enqueue (HackSoft's task/service pattern).
    from .rule_services import online_evaluations_run

    return online_evaluations_run(rule_id=rule_id, trace_ids=trace_ids)
