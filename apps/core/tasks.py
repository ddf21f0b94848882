from celery import shared_task

from . import retention


@shared_task(name="apps.core.tasks.apply_retention")
def apply_retention() -> int:
    """Celery beat's retention pass: how many rows it deleted (partitions dropped whole not counted:
    their traces are, by the batches that follow)."""
    return sum(expiry.count for expiry in retention.retention_apply() if expiry.project)
