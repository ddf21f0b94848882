from datetime import timedelta

from django.conf import settings

from celery import shared_task

from . import ledger, partitions, services
from .ingestion.otlp import services as otlp_services


@shared_task(name="apps.traces.tasks.fail_stale_traces")
def fail_stale_traces(older_than_seconds: int | None = None) -> int:
    seconds = older_than_seconds if older_than_seconds is not None else settings.EVALSITE_TRACE_TIMEOUT_SECONDS
    return services.trace_fail_stale(older_than=timedelta(seconds=seconds))


@shared_task(name="apps.traces.tasks.settle_otlp_traces")
def settle_otlp_traces() -> int:
    return otlp_services.otlp_traces_settle()


@shared_task(name="apps.traces.tasks.prune_otlp_spans")
def prune_otlp_spans() -> int:
    # The prune settles first: a child of a trace whose root came is merged, never pruned.
    return otlp_services.otlp_spans_prune(older_than=timedelta(hours=settings.EVALSITE_OTLP_SPAN_RETENTION_HOURS))


@shared_task(name="apps.traces.tasks.compact_ingestion_ledger")
def compact_ingestion_ledger() -> int:
    return ledger.ingestion_ledger_compact(older_than=timedelta(hours=settings.EVALSITE_LEDGER_COMPACT_AFTER_HOURS))


@shared_task(name="apps.traces.tasks.ensure_partitions")
def ensure_partitions() -> int:
    return partitions.ensure_all()


# The name beat used before the Score rows were partitioned too: a message queued under it before
# an upgrade still runs.
@shared_task(name="apps.traces.tasks.ensure_toolcall_partitions")
def ensure_toolcall_partitions() -> int:
    return partitions.ensure_all()
