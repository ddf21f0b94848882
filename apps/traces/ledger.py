"""The ingestion ledger's writer: every door (REST, batch, OTLP) and online evaluation records
what it received and what became of it, inside the transaction that stores it.

The invariant every entry keeps: received = stored + duplicate + rejected + dropped, where
`rejected` and `dropped` are the sums of their reasons. A later correction (the reaper dropping
spans that waited for a root that never came) is an entry with received 0 that moves counts from
`stored` to `dropped`, dated at their arrival so the day they arrived still balances.
"""

from datetime import datetime

from django.utils import timezone

from .models import IngestionEntry

Source = IngestionEntry.Source


def ingestion_record(
    *,
    source: str,
    received: int = 0,
    stored: int = 0,
    duplicate: int = 0,
    rejected: dict[str, int] | None = None,
    dropped: dict[str, int] | None = None,
    sampled: int = 0,
    evaluated: int = 0,
    skipped: int = 0,
    errored: int = 0,
    at: datetime | None = None,
) -> IngestionEntry | None:
    """Append one entry (nothing when every count is zero). Call it inside the storing transaction."""
    rejected = {k: v for k, v in (rejected or {}).items() if v}
    dropped = {k: v for k, v in (dropped or {}).items() if v}
    counts = dict(received=received, stored=stored, duplicate=duplicate, sampled=sampled,
                  evaluated=evaluated, skipped=skipped, errored=errored)
    if not any(counts.values()) and not rejected and not dropped:
        return None
    reasons = {}
    if rejected:
        reasons["rejected"] = rejected
    if dropped:
        reasons["dropped"] = dropped
    return IngestionEntry.objects.create(
        at=at or timezone.now(), source=source, rejected=sum(rejected.values()), dropped=sum(dropped.values()),
        reasons=reasons, **counts,
    )
