from celery import shared_task

from . import services


@shared_task(name="apps.runs.tasks.start_run")
def start_run(run_pk: int) -> None:
    services.run_start(run_pk=run_pk)


@shared_task(name="apps.runs.tasks.execute_result", acks_late=True)
def execute_result(result_pk: int) -> None:
    services.result_execute(result_pk=result_pk)


@shared_task(name="apps.runs.tasks.reap_runs")
def reap_runs() -> int:
    return services.runs_reap()
