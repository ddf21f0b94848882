"""The partitions of the tool calls on PostgreSQL, kept so that retention returns disk space.

Tool calls are most of what a trace stores (ten rows per trace is typical), and deleting rows only
lets PostgreSQL reuse their space. Since traces.0016 `traces_toolcall` is partitioned by RANGE
(trace_id), `EVALSITE_TOOLCALL_PARTITION_TRACES` trace ids per partition, plus a DEFAULT partition.
Trace ids come from a sequence, so a partition holds the tool calls of the traces created in one
stretch of time, whatever their project:

- `partitions_ensure` (Celery beat every minute, each retention pass, `manage.py
  toolcall_partitions --ensure`) keeps AHEAD partitions ready beyond the highest trace id. A tool
  call whose trace id no partition covers (beat not running while ingestion outran the headroom)
  lands in the default partition, never in an error; the next partition then starts above it.
- `partitions_reclaim` (each retention pass, before the batches) drops every partition whose range
  the sequence has passed and in which no trace is still kept by its project's `retention_days`:
  the tool calls of a month go with one DROP TABLE, and their disk space returns to the system.
  The traces themselves are then deleted by the batches as before (apps.traces.services
  .traces_expire), their ledger and audit records with them. A project that keeps traces forever
  keeps every partition its traces are in; its tool calls, and those left in the default
  partition, are deleted row by row when they expire.

Dropping a partition locks the whole table for a moment (ACCESS EXCLUSIVE: PostgreSQL allows the
non-blocking DETACH … CONCURRENTLY only without a default partition). It waits at most
`EVALSITE_PARTITION_LOCK_TIMEOUT_MS`, so ingestion queues behind it no longer than that, and a
partition it could not lock waits for the next pass. Other databases have no partitions: every
function here does nothing there.
"""

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from django.conf import settings
from django.db import OperationalError, transaction

from . import fastpath

logger = logging.getLogger(__name__)
T = TypeVar("T")

PARENT = "traces_toolcall"
DEFAULT = f"{PARENT}_default"
# Partitions kept ready beyond the highest trace id: at one partition of 100,000 traces, minutes of
# the heaviest ingestion bench/ingest.py measures, between two runs of the one-minute beat task.
AHEAD = 2
_ATTEMPTS = 3
# pg_advisory_xact_lock's key for making partitions (an arbitrary constant of this module's own).
_ENSURE_LOCK = 0x7472_6163_6573
_BOUND = re.compile(r"FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)")


@dataclass(frozen=True, order=True)
class Partition:
    lo: int
    hi: int
    name: str


def partitioned() -> bool:
    """Whether the tool calls are partitioned here (PostgreSQL, migrated past traces.0016)."""
    if not fastpath.enabled():
        return False
    row = fastpath.fetch_one("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [PARENT])
    return row is not None and row[0] == "p"


def partitions() -> list[Partition]:
    """The range partitions, lowest first (the default partition is not one of them)."""
    rows = fastpath.fetch_all(
        "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = %s::regclass",
        [PARENT],
    )
    found = []
    for name, bound in rows:
        if match := _BOUND.search(bound):
            found.append(Partition(int(match[1]), int(match[2]), name))
    return sorted(found)


@dataclass(frozen=True)
class PartitionSize:
    name: str
    range: str
    size_mb: float


def partition_sizes() -> list[PartitionSize]:
    """Every partition, the default one last, with its trace id range and its size on disk (table,
    indexes and TOAST)."""
    sizes = dict(
        fastpath.fetch_all(
            "SELECT relid::regclass::text, pg_total_relation_size(relid) FROM pg_partition_tree(%s) WHERE isleaf",
            [PARENT],
        )
    )
    listed = [
        PartitionSize(p.name, f"trace ids {p.lo}..{p.hi - 1}", sizes.get(p.name, 0) / 2**20) for p in partitions()
    ]
    return [*listed, PartitionSize(DEFAULT, "any other trace id", sizes.get(DEFAULT, 0) / 2**20)]


def _highest_trace_id() -> int:
    return fastpath.fetch_one("SELECT coalesce(max(id), 0) FROM traces_agenttrace")[0]


def partitions_ensure(*, upto: int | None = None) -> int:
    """Create partitions until AHEAD of them lie beyond `upto` (default: the highest trace id).
    Returns how many it created."""
    if not partitioned():
        return 0
    size = settings.EVALSITE_TOOLCALL_PARTITION_TRACES
    top = _highest_trace_id() if upto is None else upto
    existing = partitions()
    start = existing[-1].hi if existing else 0
    # A new partition may not cover a trace id whose tool calls already sit in the default partition.
    in_default = fastpath.fetch_one(f"SELECT max(trace_id) FROM {DEFAULT}")[0]
    if in_default is not None and in_default >= start:
        start = (in_default // size + 1) * size
    created = 0
    while start <= top + AHEAD * size:
        made = _attach(start, start + size)
        if made is None:
            break
        start += size
        created += made
    return created


def _attach(lo: int, hi: int) -> bool | None:
    """An empty table attached as the partition [lo, hi): ATTACH locks the parent only against other
    schema changes (SHARE UPDATE EXCLUSIVE), not against ingestion; it scans the default partition,
    normally empty, for rows of the new range. Beat and a retention pass may both ensure at once:
    one transaction-level advisory lock orders them, and the second finds the partition made.
    True when this call made it, False when it was there, None when a lock was not had in time."""
    name = f"{PARENT}_p{lo}"

    def attach():
        fastpath.execute("SELECT pg_advisory_xact_lock(%s)", [_ENSURE_LOCK])
        if fastpath.fetch_one("SELECT to_regclass(%s)", [name])[0] is not None:
            return False
        fastpath.execute(f"CREATE TABLE {name} (LIKE {PARENT} INCLUDING CONSTRAINTS)")
        fastpath.execute(f"ALTER TABLE {PARENT} ATTACH PARTITION {name} FOR VALUES FROM ({lo}) TO ({hi})")
        return True

    return _with_lock_timeout(attach)


def _with_lock_timeout(action: Callable[[], T]) -> T | None:
    """Run `action` in one transaction that waits for no lock longer than the setting and return what
    it returns; after a few attempts, None (the caller leaves it for the next pass)."""
    for attempt in range(_ATTEMPTS):
        try:
            with transaction.atomic():
                fastpath.execute(f"SET LOCAL lock_timeout = {int(settings.EVALSITE_PARTITION_LOCK_TIMEOUT_MS)}")
                return action()
        except OperationalError as exc:
            logger.info("tool call partitions: %s (attempt %d of %d)", exc, attempt + 1, _ATTEMPTS)
            time.sleep(0.1 * (attempt + 1))
    return None


# A trace is kept while its project has no retention period or it was created after the cutoff, the
# test apps.traces.selectors.traces_expired_count and traces_expire make per project.
_KEPT = (
    "SELECT EXISTS (SELECT 1 FROM traces_agenttrace t JOIN core_project p ON p.id = t.project_id "
    "WHERE t.id >= %s AND t.id < %s "
    "AND (p.retention_days IS NULL OR t.created_at >= %s - make_interval(days => p.retention_days)))"
)


def partitions_reclaimable(now: datetime) -> list[Partition]:
    """The partitions every trace of which has expired (or is gone), below the highest trace id."""
    if not partitioned():
        return []
    top = _highest_trace_id()
    return [p for p in partitions() if p.hi <= top and not fastpath.fetch_one(_KEPT, [p.lo, p.hi, now])[0]]


def partitions_reclaim(now: datetime) -> int:
    """Drop the reclaimable partitions, each with the tool calls in it; returns how many went. The
    traces they belonged to are expired and go in the batches that follow."""
    partitions_ensure()
    dropped = 0
    for partition in partitions_reclaimable(now):
        if _with_lock_timeout(lambda p=partition: _drop(p, now)):
            logger.info("tool call partitions: dropped %s (trace ids from %d)", partition.name, partition.lo)
            dropped += 1
    return dropped


def _drop(partition: Partition, now: datetime) -> bool:
    """DROP the partition, unless a trace in it is kept after all: asked again in the dropping
    transaction, since a project's retention may have changed since the partition was listed."""
    if fastpath.fetch_one(_KEPT, [partition.lo, partition.hi, now])[0]:
        return False
    # IF EXISTS: two passes at once may both have listed it.
    fastpath.execute(f"DROP TABLE IF EXISTS {partition.name}")
    return True
