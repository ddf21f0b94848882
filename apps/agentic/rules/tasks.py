from celery import shared_task


# The name is the one this task had in apps.agentic.tasks, so messages already queued still run.
@shared_task(name="apps.agentic.tasks.evaluate_for_rule")
def evaluate_for_rule(rule_id: int, trace_ids: list[int], project_id: int | None = None) -> dict[str, int]:
    # Imported here: the services import this module to enqueue (HackSoft's task/service pattern).
    # project_id: absent from messages queued before the ledger was per project.
    from .services import online_evaluations_run

    return online_evaluations_run(rule_id=rule_id, trace_ids=trace_ids, project_id=project_id)
