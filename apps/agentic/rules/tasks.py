from celery import shared_task


# The name is the one this task had in apps.agentic.tasks, so messages already queued still run.
@shared_task(name="apps.agentic.tasks.evaluate_for_rule")
def evaluate_for_rule(rule_id: int, trace_ids: list[int]) -> dict[str, int]:
    # Imported here: the services import this module to enqueue (HackSoft's task/service pattern).
    from .services import online_evaluations_run

    return online_evaluations_run(rule_id=rule_id, trace_ids=trace_ids)
