"""Celery tasks of the run engine: each takes ids and calls one service. The services module imports
this one to enqueue (with transaction.on_commit), so each task imports its service in its body
(HackSoft's convention); a top-level import would be a cycle."""

from celery import shared_task


@shared_task(name="apps.runs.tasks.start_run")
def start_run(run_pk: int) -> None:
    from .services import run_start  # in the body: services imports this module (a cycle otherwise)

    run_start(run_pk=run_pk)


@shared_task(name="apps.runs.tasks.execute_result", acks_late=True)
def execute_result(result_pk: int) -> None:
    from .services import result_execute  # in the body: services imports this module

    result_execute(result_pk=result_pk)


@shared_task(name="apps.runs.tasks.reap_runs")
def reap_runs() -> int:
    from .alignment.services import trials_reap  # in the body: the services import this module
    from .services import runs_reap

    return runs_reap() + trials_reap()


@shared_task(name="apps.runs.tasks.keep_comparison")
def keep_comparison(run_pk: int) -> None:
    from .services import run_comparison_keep  # in the body: services imports this module

    run_comparison_keep(run_pk=run_pk)


@shared_task(name="apps.runs.tasks.run_alignment_trial")
def run_alignment_trial(trial_pk: int) -> None:
    from .alignment.services import trial_execute  # in the body: the services import this module

    trial_execute(trial_pk=trial_pk)


@shared_task(name="apps.runs.tasks.run_anchor_check")
def run_anchor_check(check_pk: int) -> None:
    from .anchors.services import anchor_check_execute  # in the body: the services import this module

    anchor_check_execute(check_pk=check_pk)


@shared_task(name="apps.runs.tasks.watch_anchors")
def watch_anchors() -> int:
    from .anchors.services import anchors_watch  # in the body: the services import this module

    return anchors_watch()
