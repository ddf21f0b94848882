from datetime import timedelta

from celery import shared_task
from django.conf import settings

from . import services


@shared_task(name="apps.traces.tasks.fail_stale_traces")
def fail_stale_traces(older_than_seconds: int | None = None) -> int:
    seconds = older_than_seconds if older_than_seconds is not None else settings.EVALSITE_TRACE_TIMEOUT_SECONDS
    return services.trace_fail_stale(older_than=timedelta(seconds=seconds))
