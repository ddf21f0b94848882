"""The ingestion ledger's writer: every door (REST, batch, OTLP) and online evaluation records
what it received and what became of it, inside the transaction that stores it.

The invariant every entry keeps: received = stored + duplicate + rejected + dropped, where
`rejected` and `dropped` are the sums of their reasons. A later correction (the reaper dropping
spans that waited for a root that never came) is an entry with received 0 that moves counts from
`stored` to `dropped`, dated at their arrival so the day they arrived still balances.

Retention's expiry is such a correction, reason "expired": every trace keeps the units stored for
it (AgentTrace.ledger_units, bumped by the statement that counts them as stored), and
apps.traces.services.traces_expire moves a batch's units, summed per door and hour of the traces'
creation, from `stored` to `dropped` in the transaction that deletes them. Dated at the creation
hour, not each unit's arrival (a REST trace's records arrive over its life): per hour it is close,
over the trace's whole life exact.

The units differ per door and are the same for every entry of that door (docs/traces.md):
REST counts lifecycle records (a start, an intent, each tool call, a completion), batch counts
traces, OTLP counts spans, online evaluation counts (rule, trace) evaluations.

The ledger is kept per project: every entry belongs to the project its items were sent to (online
evaluation: the rule's; a correction: the project of the items it moves), and every read, the
compaction included, is one project's, so no project learns another's names or counts.
"""

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncHour
from django.utils import timezone
from pydantic import ValidationError as PydanticValidationError

from apps.core.models import Project, project_pk

from . import fastpath
from .models import IngestionEntry

Source = IngestionEntry.Source

# Why an item was refused (rejected) or discarded after it was taken (dropped). A small fixed set:
# each is a value of the `reason` label of evalsite_ingestion_total, so it must stay bounded. A
# reason outside it is still stored and shown as written, and counted as `other` in the metrics.
REASONS = (
    "invalid",  # fails the request schema or a domain rule (422)
    "nul_character",  # a NUL (\u0000) in a string, which PostgreSQL cannot store
    "integer_out_of_range",  # a JSON number past 64 bits
    "too_deep",  # JSON nested deeper than the storage checks allow
    "too_large",  # a string, body or list over its limit
    "conflict",  # the same id already stored with different content (409)
    "not_found",  # names a trace that does not exist (404)
    "trace_cap",  # over a per-trace cap (tool calls, spans, attribute bytes)
    "orphan",  # a child span whose root never came, pruned
    "expired",  # kept past its retention and pruned
    "unavailable",  # a dependency (database lock, task queue) was not available (503)
    "internal_error",  # the server failed (500): not stored, the client was told
)
OTHER_REASON = "other"


def reason_label(reason: str) -> str:
    return reason if reason in REASONS else OTHER_REASON


def validation_reason(exc: PydanticValidationError) -> str:
    """The reason code of a validation failure: the storage checks' own (apps.core.api.validation) when
    one of them refused the value, else `invalid`."""
    for error in exc.errors(include_url=False, include_context=False, include_input=False):
        message, kind = error.get("msg", ""), error.get("type", "")
        if "NUL character" in message:
            return "nul_character"
        if "64-bit" in message:
            return "integer_out_of_range"
        if "nested more than" in message or "recursion" in kind:
            return "too_deep"
        if kind in ("string_too_long", "too_long", "bytes_too_long"):
            return "too_large"
    return "invalid"


def ingestion_record(
    *,
    project: Project | int | None,
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
    """Append one entry of `project` (a Project or its id; None is `default`, as everywhere) (nothing
    when every count is zero). Call it inside the storing transaction. `project` has no default: a
    door that forgot it would count its items in another project's ledger."""
    rejected = {k: v for k, v in (rejected or {}).items() if v}
    dropped = {k: v for k, v in (dropped or {}).items() if v}
    counts = dict(
        received=received,
        stored=stored,
        duplicate=duplicate,
        sampled=sampled,
        evaluated=evaluated,
        skipped=skipped,
        errored=errored,
    )
    if not any(counts.values()) and not rejected and not dropped:
        return None
    reasons = {}
    if rejected:
        reasons["rejected"] = rejected
    if dropped:
        reasons["dropped"] = dropped
    return IngestionEntry.objects.create(
        project_id=project_pk(project),
        at=at or timezone.now(),
        source=source,
        rejected=sum(rejected.values()),
        dropped=sum(dropped.values()),
        reasons=reasons,
        **counts,
    )


def ingestion_entry_cte(
    *,
    source: str,
    project: str,
    rows_from: str,
    at: str,
    stored: str = "1",
    duplicate: str = "0",
    name: str = "ledger",
) -> str:
    """A data-modifying WITH item (PostgreSQL) that appends one entry, received 1, per row of
    `rows_from`: a single-statement hot path (a tool call, an intent) records itself in the same
    statement, so it stays one round trip and the entry commits exactly when the row does. A
    statement that matches nothing (a retry, a finished trace) appends nothing; its fallback path
    records with ingestion_record. `stored` and `duplicate` are SQL expressions over `rows_from`
    that add up to 1; `at` is the statement's placeholder for the time; `project` the SQL expression
    of the project's id (a column of `rows_from`, or the statement's placeholder)."""
    if source not in Source.values:
        raise ValueError(f"unknown ledger source {source!r}")
    return (
        f"{name} AS (INSERT INTO {IngestionEntry._meta.db_table} (project_id, at, source, received, stored, "
        f"duplicate, rejected, dropped, sampled, evaluated, skipped, errored, reasons) "
        f"SELECT {project}, {at}, '{source}', 1, {stored}, {duplicate}, 0, 0, 0, 0, 0, 0, '{{}}'::jsonb "
        f"FROM {rows_from})"
    )


# --- compaction -----------------------------------------------------------------------------

_SUMMED = ("received", "stored", "duplicate", "rejected", "dropped", "sampled", "evaluated", "skipped", "errored")
# Rows summed and deleted per statement: the id lists stay under SQLite's parameter limit.
_COMPACT_CHUNK = 500


def _add_reasons(total: dict, reasons: dict) -> None:
    for outcome, counts in (reasons or {}).items():
        bucket = total.setdefault(outcome, {})
        for reason, n in counts.items():
            bucket[reason] = bucket.get(reason, 0) + n


_TABLE = IngestionEntry._meta.db_table
# PostgreSQL: one statement deletes the hour's entries and inserts their sums, so the rows summed are
# exactly the rows deleted (a concurrent compaction waits on the row locks, then finds them gone),
# and a million entries take seconds, not the minutes of a round trip per chunk.
_COMPACT_SQL = f"""
WITH gone AS (
    DELETE FROM {_TABLE}
     WHERE project_id = %(project)s AND source = %(source)s AND at >= %(start)s AND at < %(end)s RETURNING *
), reasons AS (
    SELECT outcome.key AS outcome, reason.key AS reason, SUM(reason.value::bigint) AS n
      FROM gone, jsonb_each(gone.reasons) AS outcome, jsonb_each_text(outcome.value) AS reason
     GROUP BY 1, 2
), merged AS (
    INSERT INTO {_TABLE} (project_id, at, source, {", ".join(_SUMMED)}, reasons)
    SELECT %(project)s, %(start)s, %(source)s, {", ".join(f"COALESCE(SUM({c}), 0)" for c in _SUMMED)},
           COALESCE((SELECT jsonb_object_agg(outcome, counts)
                       FROM (SELECT outcome, jsonb_object_agg(reason, n) AS counts FROM reasons GROUP BY outcome) AS o),
                    '{{}}'::jsonb)
      FROM gone
    HAVING COUNT(*) > 0
    RETURNING id
)
SELECT (SELECT COUNT(*) FROM gone) - (SELECT COUNT(*) FROM merged)
"""


def _compact_group(project_id: int, source: str, hour: datetime) -> int:
    """Replace the entries of one (project, hour, source) by one entry at the hour with their sums. Returns
    how many entries it removed. Elsewhere than PostgreSQL the rows are locked first (SQLite
    writes one transaction at a time anyway), and summed and deleted in chunks."""
    if fastpath.enabled():
        return fastpath.fetch_one(
            _COMPACT_SQL, {"project": project_id, "source": source, "start": hour, "end": hour + timedelta(hours=1)}
        )[0]
    with transaction.atomic():
        ids = list(
            IngestionEntry.objects.select_for_update()
            .filter(project_id=project_id, source=source, at__gte=hour, at__lt=hour + timedelta(hours=1))
            .order_by("id")
            .values_list("id", flat=True)
        )
        if len(ids) < 2:
            return 0
        sums = dict.fromkeys(_SUMMED, 0)
        reasons: dict = {}
        for start in range(0, len(ids), _COMPACT_CHUNK):
            chunk = IngestionEntry.objects.filter(id__in=ids[start : start + _COMPACT_CHUNK])
            for field, value in chunk.aggregate(**{f: Sum(f) for f in _SUMMED}).items():
                sums[field] += value or 0
            for row in chunk.filter(Q(rejected__gt=0) | Q(dropped__gt=0)).values_list("reasons", flat=True):
                _add_reasons(reasons, row)
            chunk.delete()
        IngestionEntry.objects.create(project_id=project_id, at=hour, source=source, reasons=reasons, **sums)
    return len(ids) - 1


def ingestion_ledger_compact(*, older_than: timedelta) -> int:
    """Roll the entries older than `older_than` into one entry per (project, hour, source) with their
    sums and reasons (never two projects' entries into one), so the ledger stays small: every read
    (a /metrics scrape, the API, the console) sums the per-request entries left, and hourly is as
    fine as anyone reads older days. Totals over any whole hours are unchanged, per project. Returns
    how many entries were removed."""
    cutoff = timezone.now() - older_than
    # Only whole hours before the cutoff: a later request never lands in a compacted hour, except
    # a correction dated at its items' arrival, which the next pass folds in.
    cutoff = cutoff.replace(minute=0, second=0, microsecond=0)
    groups = (
        IngestionEntry.objects.filter(at__lt=cutoff)
        .annotate(hour=TruncHour("at"))
        .values("project_id", "source", "hour")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .order_by("hour", "project_id", "source")
    )
    return sum(_compact_group(group["project_id"], group["source"], group["hour"]) for group in groups)
