"""Reads of the ingestion ledger: sums of one project's entries over a time window, per source and
per day. Every read names its project: the ledger is kept per project, and no project sees
another's counts.

Plain ORM aggregates (Sum, TruncDate), so they run unchanged on SQLite and PostgreSQL. The reasons
are JSON, summed in Python from the entries that have any (those with something rejected or
dropped): refusals are the exception, and compaction keeps old ones to one entry per hour.
"""

from dataclasses import dataclass, field
from datetime import date, datetime

from django.db.models import Q, Sum
from django.db.models.functions import TruncDate

from apps.core.redaction import COUNT_KINDS

from .models import IngestionEntry, RedactionCount

Source = IngestionEntry.Source
DOORS = (Source.REST, Source.BATCH, Source.OTLP)
_SUMMED = ("received", "stored", "duplicate", "rejected", "dropped", "sampled", "evaluated", "skipped", "errored")
# The columns holding the sums of the reason counts, under their names in LedgerCounts.
_TOTALS = {"rejected": "rejected_total", "dropped": "dropped_total"}


@dataclass
class LedgerCounts:
    source: str
    received: int = 0
    stored: int = 0
    duplicate: int = 0
    # The sums of the reason counts below, kept in their own columns.
    rejected_total: int = 0
    dropped_total: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    sampled: int = 0
    evaluated: int = 0
    skipped: int = 0
    errored: int = 0

    @property
    def label(self) -> str:
        return Source(self.source).label

    @property
    def unaccounted(self) -> int:
        """received − (stored + duplicate + rejected + dropped): zero when nothing went missing."""
        return self.received - self.accounted

    @property
    def accounted(self) -> int:
        return self.stored + self.duplicate + self.rejected_total + self.dropped_total

    @property
    def balanced(self) -> bool:
        """received = stored + duplicate + rejected + dropped, and the reasons add up to their totals."""
        return (
            self.received == self.accounted
            and sum(self.rejected.values()) == self.rejected_total
            and sum(self.dropped.values()) == self.dropped_total
        )

    @property
    def pending(self) -> int:
        """Online evaluation: sampled and queued, not judged (or skipped, or failed) yet."""
        return self.sampled - self.evaluated - self.skipped - self.errored

    @property
    def is_empty(self) -> bool:
        return not any(
            getattr(self, name)
            for name in (
                "received",
                "stored",
                "duplicate",
                "rejected_total",
                "dropped_total",
                "sampled",
                "evaluated",
                "skipped",
                "errored",
            )
        )

    def add(self, row: dict) -> None:
        for column in _SUMMED:
            attribute = _TOTALS.get(column, column)
            setattr(self, attribute, getattr(self, attribute) + (row.get(column) or 0))

    def add_reasons(self, reasons: dict) -> None:
        for outcome in ("rejected", "dropped"):
            bucket = getattr(self, outcome)
            for reason, n in (reasons or {}).get(outcome, {}).items():
                bucket[reason] = bucket.get(reason, 0) + n


def _window(project, since: datetime, until: datetime, sources):
    # (project, at, source): the index ingestionentry_project_at.
    entries = IngestionEntry.objects.filter(project=project, at__gte=since, at__lt=until).order_by()
    return entries.filter(source__in=sources) if sources is not None else entries


def ingestion_ledger(*, project, since: datetime, until: datetime, sources=None) -> dict[str, LedgerCounts]:
    """The sums per source of `project`'s entries (a Project or its id) in [since, until); every
    source asked for is present, zeros included. `sources` None means all of them."""
    wanted = list(sources) if sources is not None else list(Source.values)
    ledger = {source: LedgerCounts(source=source) for source in wanted}
    entries = _window(project, since, until, wanted)
    for row in entries.values("source").annotate(**{name: Sum(name) for name in _SUMMED}):
        ledger[row["source"]].add(row)
    for source, reasons in entries.filter(Q(rejected__gt=0) | Q(dropped__gt=0)).values_list("source", "reasons"):
        ledger[source].add_reasons(reasons)
    return ledger


@dataclass
class LedgerDay:
    day: date
    sources: dict[str, LedgerCounts]

    @property
    def balanced(self) -> bool:
        return all(counts.balanced for source, counts in self.sources.items() if source in DOORS)


def ingestion_ledger_days(*, project, since: datetime, until: datetime) -> list[LedgerDay]:
    """`project`'s ledger per day (in the server's time zone) and source over [since, until), newest
    day first; days with no entry are left out."""
    entries = _window(project, since, until, None).annotate(day=TruncDate("at"))
    days: dict[date, LedgerDay] = {}

    def counts(day: date, source: str) -> LedgerCounts:
        entry = days.setdefault(day, LedgerDay(day=day, sources={s: LedgerCounts(source=s) for s in Source.values}))
        return entry.sources[source]

    for row in entries.values("day", "source").annotate(**{name: Sum(name) for name in _SUMMED}):
        counts(row["day"], row["source"]).add(row)
    for day, source, reasons in entries.filter(Q(rejected__gt=0) | Q(dropped__gt=0)).values_list(
        "day", "source", "reasons"
    ):
        counts(day, source).add_reasons(reasons)
    return sorted(days.values(), key=lambda d: d.day, reverse=True)


def redaction_counts_by_day(*, project, since: date, until: date) -> list[dict]:
    """What PII redaction replaced in `project`'s input per UTC day from `since` to `until` (included),
    newest first: {"day", "total", and a count per kind (apps.core.redaction.COUNT_KINDS)}. Days on
    which nothing was replaced have no row."""
    rows = RedactionCount.objects.filter(project=project, day__gte=since, day__lte=until).order_by("-day")
    return [
        {"day": row.day, "total": sum(getattr(row, kind) for kind in COUNT_KINDS)}
        | {kind: getattr(row, kind) for kind in COUNT_KINDS}
        for row in rows
    ]
