"""Tables partitioned by RANGE of an id from a sequence, on PostgreSQL, kept so that retention
returns disk space.

Deleting rows only lets PostgreSQL reuse their space; dropping a partition gives it back to the
system. A `RangePartitions` describes one such table: its rows are keyed by the id of a row of a
`source` table (a tool call by its trace's id, an evaluation's Score rows by the evaluation's id, an
evaluation by its own),
`size` source ids per partition, plus a DEFAULT partition. Source ids come from a sequence, so a
partition holds the rows of the source rows created in one stretch of time, whatever their project:

- `ensure` (Celery beat every minute, each retention pass, `manage.py partitions --ensure`) keeps
  AHEAD partitions ready beyond the highest source id. A row whose key no partition covers (beat
  not running while ingestion outran the headroom) lands in the default partition, never in an
  error; the next partition then starts above it.
- `reclaim` (each retention pass, before the batches) drops every partition whose range the
  sequence has passed and in which no source row is still kept by its project's `retention_days`:
  the rows of a month go with one DROP TABLE, and their disk space returns to the system. The
  source rows themselves are then deleted by the batches as before, their ledger and audit records
  with them. A table whose rows the batches read as they delete, or that is the source itself
  (`only_when_empty`: traces, evaluations and their Score rows), is reclaimed after the batches
  instead, a partition only once none of its source rows is left. A project that keeps its rows
  forever keeps every partition they are in; its rows, and those left in the default partition,
  are deleted row by row when they expire.

The tables: the tool calls (traces.0016, TOOL_CALLS below), the traces themselves (traces.0021,
TRACES), and agentic and RAG evaluations and their Score rows (agentic.0013, rag.0008, scores.0003,
registered by those apps: apps.scores.partitions). Every source has `project_id` and `created_at`,
which is what retention expires by.

Dropping a partition locks the whole table for a moment (ACCESS EXCLUSIVE: PostgreSQL allows the
non-blocking DETACH … CONCURRENTLY only without a default partition). It waits at most
`EVALSITE_PARTITION_LOCK_TIMEOUT_MS`, so ingestion queues behind it no longer than that, and a
partition it could not lock waits for the next pass. Other databases have no partitions: every
method here does nothing there. This module lives in traces, beside the one fenced cursor
(fastpath), so the apps above use it without a cursor of their own.
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

from apps.core.retention import Reclaimer, reclaimer_register

from . import fastpath

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Partitions kept ready beyond the highest source id: at one partition of 100,000 traces, minutes of
# the heaviest ingestion bench/ingest.py measures, between two runs of the one-minute beat task.
AHEAD = 2
_ATTEMPTS = 3
# pg_advisory_xact_lock's key for making partitions (an arbitrary constant of this module's own):
# one for every table, since making partitions is rare and quick.
_ENSURE_LOCK = 0x7472_6163_6573
_BOUND = re.compile(r"FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)")


@dataclass(frozen=True, order=True)
class Partition:
    lo: int
    hi: int
    name: str


@dataclass(frozen=True)
class PartitionSize:
    name: str
    range: str
    size_mb: float


@dataclass(frozen=True)
class RangePartitions:
    """One table partitioned by RANGE (`key`), `key` being the id of a row of `source`."""

    parent: str
    key: str
    source: str
    # The setting that holds how many source ids a partition covers.
    size_setting: str
    # What a source row is called, for the listing and the logs ("trace").
    noun: str
    # Drop a partition only once no source row of its range is left, not as soon as all of them
    # have expired: for rows the source's expiry reads before it deletes them (apps.scores.partitions).
    only_when_empty: bool = False

    @property
    def default(self) -> str:
        return f"{self.parent}_default"

    @property
    def size(self) -> int:
        return getattr(settings, self.size_setting)

    def partitioned(self) -> bool:
        """Whether the table is partitioned here (PostgreSQL, migrated)."""
        if not fastpath.enabled():
            return False
        row = fastpath.fetch_one("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [self.parent])
        return row is not None and row[0] == "p"

    def partitions(self) -> list[Partition]:
        """The range partitions, lowest first (the default partition is not one of them)."""
        rows = fastpath.fetch_all(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = %s::regclass",
            [self.parent],
        )
        found = []
        for name, bound in rows:
            if match := _BOUND.search(bound):
                found.append(Partition(int(match[1]), int(match[2]), name))
        return sorted(found)

    def sizes(self) -> list[PartitionSize]:
        """Every partition, the default one last, with its id range and its size on disk (table,
        indexes and TOAST)."""
        sizes = dict(
            fastpath.fetch_all(
                "SELECT relid::regclass::text, pg_total_relation_size(relid) FROM pg_partition_tree(%s) WHERE isleaf",
                [self.parent],
            )
        )
        listed = [
            PartitionSize(p.name, f"{self.noun} ids {p.lo}..{p.hi - 1}", sizes.get(p.name, 0) / 2**20)
            for p in self.partitions()
        ]
        return [*listed, PartitionSize(self.default, f"any other {self.noun} id", sizes.get(self.default, 0) / 2**20)]

    def _highest_source_id(self) -> int:
        return fastpath.fetch_one(f"SELECT coalesce(max(id), 0) FROM {self.source}")[0]

    def ensure(self, *, upto: int | None = None) -> int:
        """Create partitions until AHEAD of them lie beyond `upto` (default: the highest source
        id). Returns how many it created."""
        if not self.partitioned():
            return 0
        size = self.size
        top = self._highest_source_id() if upto is None else upto
        existing = self.partitions()
        start = existing[-1].hi if existing else 0
        # A new partition may not cover a key whose rows already sit in the default partition.
        in_default = fastpath.fetch_one(f"SELECT max({self.key}) FROM {self.default}")[0]
        if in_default is not None and in_default >= start:
            start = (in_default // size + 1) * size
        created = 0
        while start <= top + AHEAD * size:
            made = self._attach(start, start + size)
            if made is None:
                break
            start += size
            created += made
        return created

    def _attach(self, lo: int, hi: int) -> bool | None:
        """An empty table attached as the partition [lo, hi): ATTACH locks the parent only against
        other schema changes (SHARE UPDATE EXCLUSIVE), not against ingestion; it scans the default
        partition, normally empty, for rows of the new range. Beat and a retention pass may both
        ensure at once: one transaction-level advisory lock orders them, and the second finds the
        partition made. True when this call made it, False when it was there, None when a lock was
        not had in time."""
        name = f"{self.parent}_p{lo}"

        def attach():
            fastpath.execute("SELECT pg_advisory_xact_lock(%s)", [_ENSURE_LOCK])
            if fastpath.fetch_one("SELECT to_regclass(%s)", [name])[0] is not None:
                return False
            fastpath.execute(f"CREATE TABLE {name} (LIKE {self.parent} INCLUDING CONSTRAINTS)")
            fastpath.execute(f"ALTER TABLE {self.parent} ATTACH PARTITION {name} FOR VALUES FROM ({lo}) TO ({hi})")
            return True

        return _with_lock_timeout(attach)

    def _kept(self, partition: Partition, now: datetime) -> bool:
        """Whether a source row of the partition's range is still kept: its project has no
        retention period, or it was created after the cutoff (the test the apps' expirers make per
        project, apps.core.retention.cutoff_of)."""
        return fastpath.fetch_one(
            f"SELECT EXISTS (SELECT 1 FROM {self.source} t JOIN core_project p ON p.id = t.project_id "
            "WHERE t.id >= %s AND t.id < %s "
            "AND (p.retention_days IS NULL OR t.created_at >= %s - make_interval(days => p.retention_days)))",
            [partition.lo, partition.hi, now],
        )[0]

    def _occupied(self, partition: Partition) -> bool:
        return fastpath.fetch_one(
            f"SELECT EXISTS (SELECT 1 FROM {self.source} WHERE id >= %s AND id < %s)", [partition.lo, partition.hi]
        )[0]

    def reclaimable(self, now: datetime) -> list[Partition]:
        """The partitions every source row of which has expired (or is gone), below the highest
        source id."""
        if not self.partitioned():
            return []
        top = self._highest_source_id()
        return [p for p in self.partitions() if p.hi <= top and not self._kept(p, now)]

    def reclaimable_count(self, now: datetime) -> int:
        """How many partitions reclaimable lists: what a retention dry run reports."""
        return len(self.reclaimable(now))

    def reclaim(self, now: datetime) -> int:
        """Drop the reclaimable partitions, each with the rows in it; returns how many went. The
        source rows they belonged to are expired and go in the batches that follow."""
        self.ensure()
        dropped = 0
        for partition in self.reclaimable(now):
            if _with_lock_timeout(lambda p=partition: self._drop(p, now)):
                logger.info(
                    "%s partitions: dropped %s (%s ids from %d)", self.parent, partition.name, self.noun, partition.lo
                )
                dropped += 1
        return dropped

    def _drop(self, partition: Partition, now: datetime) -> bool:
        """DROP the partition, unless a source row in it is kept after all (or, `only_when_empty`,
        is left at all: then none is kept either): asked again in the dropping transaction, since a
        project's retention may have changed since it was listed."""
        if self._occupied(partition) if self.only_when_empty else self._kept(partition, now):
            return False
        # IF EXISTS: two passes at once may both have listed it.
        fastpath.execute(f"DROP TABLE IF EXISTS {partition.name}")
        return True


def _with_lock_timeout(action: Callable[[], T]) -> T | None:
    """Run `action` in one transaction that waits for no lock longer than the setting and return what
    it returns; after a few attempts, None (the caller leaves it for the next pass)."""
    for attempt in range(_ATTEMPTS):
        try:
            with transaction.atomic():
                fastpath.execute(f"SET LOCAL lock_timeout = {int(settings.EVALSITE_PARTITION_LOCK_TIMEOUT_MS)}")
                return action()
        except OperationalError as exc:
            logger.info("partitions: %s (attempt %d of %d)", exc, attempt + 1, _ATTEMPTS)
            time.sleep(0.1 * (attempt + 1))
    return None


_REGISTERED: dict[str, RangePartitions] = {}


def partitions_register(table: RangePartitions) -> None:
    """Called from an AppConfig.ready: the beat's ensure and `manage.py partitions` cover it."""
    _REGISTERED[table.parent] = table


def partitions_keep(table: RangePartitions, what: str) -> None:
    """Called from an AppConfig.ready: `table`'s partitions kept ahead of its source ids and dropped
    by each retention pass, which reports them as `what`; after the batches when `only_when_empty`."""
    partitions_register(table)
    gone = "expired and deleted" if table.only_when_empty else "expired"
    reclaimer_register(
        Reclaimer(
            f"{what} (every {table.noun} in them {gone}: their disk space returns)",
            table.reclaimable_count,
            table.reclaim,
            after_batches=table.only_when_empty,
        )
    )


def registered() -> list[RangePartitions]:
    return list(_REGISTERED.values())


def ensure_all() -> int:
    """Every registered table's partitions ahead of its source ids (the one-minute beat task)."""
    return sum(table.ensure() for table in registered())


# The tool calls: most of what a trace stores (ten rows per trace is typical).
TOOL_CALLS = RangePartitions(
    parent="traces_toolcall",
    key="trace_id",
    source="traces_agenttrace",
    size_setting="EVALSITE_TOOLCALL_PARTITION_TRACES",
    noun="trace",
)
# The traces themselves (traces.0021), by their own id, in wider ranges: the trace list and the REST
# doors read them by session, agent and time, which no bound prunes. A partition goes in the pass
# that finds it empty, after the batches: they read each trace (its ledger units, its OTLP spans)
# before they delete it.
TRACES = RangePartitions(
    parent="traces_agenttrace",
    key="id",
    source="traces_agenttrace",
    size_setting="EVALSITE_TRACE_PARTITION_IDS",
    noun="trace",
    only_when_empty=True,
)
PARENT = TOOL_CALLS.parent
DEFAULT = TOOL_CALLS.default
# The tool calls' own names, which the traces app's callers and its command use.
partitioned = TOOL_CALLS.partitioned
partitions = TOOL_CALLS.partitions
partition_sizes = TOOL_CALLS.sizes
partitions_ensure = TOOL_CALLS.ensure
