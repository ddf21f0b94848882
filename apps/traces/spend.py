"""A project's traces' spend per day (TraceSpendDay): what the OTLP assembly adds when it stores a
trace (its cost) or merges late spans into one (the new cost minus the old), by the trace's start
day (UTC), the day its calls were priced at.

The assembly collects a transaction's changes in a SpendChanges and writes them last, after every
trace row lock it takes: a day's row is locked by its UPDATE until the commit, and taking it before
another trace's lock could deadlock with a writer holding that trace and waiting for the day. Rows
are written in (project, day) order for the same reason.

A record of spend: retention deleting traces does not subtract from it (docs/costs.md)."""

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce, Greatest

from .costs import TraceCost
from .models import TraceSpendDay


@dataclass
class _Change:
    amount: Decimal | None = None
    unpriced_calls: int = 0


@dataclass
class SpendChanges:
    """What a transaction's traces add to their days' spend, by (project id, day)."""

    days: dict[tuple[int, date], _Change] = field(default_factory=dict)

    def add(self, *, project_id: int, day: date, before: TraceCost, after: TraceCost) -> None:
        amount = None
        if before.amount is not None or after.amount is not None:
            amount = (after.amount or Decimal(0)) - (before.amount or Decimal(0))
        unpriced = after.unpriced_calls - before.unpriced_calls
        if amount is None and not unpriced:
            return
        change = self.days.setdefault((project_id, day), _Change())
        if amount is not None:
            change.amount = amount if change.amount is None else change.amount + amount
        change.unpriced_calls += unpriced

    def write(self) -> None:
        """Add the changes to their days (in the caller's transaction); empties the collection."""
        for (project_id, day), change in sorted(self.days.items()):
            trace_spend_day_add(
                project_id=project_id, day=day, amount=change.amount, unpriced_calls=change.unpriced_calls
            )
        self.days.clear()


def trace_spend_day_add(*, project_id: int, day: date, amount: Decimal | None, unpriced_calls: int) -> None:
    """Add to a project's day, atomically under concurrent writers: one UPDATE … SET amount = amount + x;
    on a miss the row is created, and when a concurrent writer created it first (IntegrityError),
    the UPDATE is made again (it then sees the committed row). An amount of None leaves the day's
    amount as it is (null stays "nothing priced", never $0)."""
    if amount is None and not unpriced_calls:
        return
    increments: dict = {"unpriced_calls": Greatest(F("unpriced_calls") + unpriced_calls, Value(0))}
    if amount is not None:
        increments["amount"] = Coalesce(F("amount"), Value(Decimal(0))) + Value(amount)
    rows = TraceSpendDay.objects.filter(project_id=project_id, day=day)
    if rows.update(**increments):
        return
    try:
        with transaction.atomic():
            TraceSpendDay.objects.create(
                project_id=project_id, day=day, amount=amount, unpriced_calls=max(unpriced_calls, 0)
            )
    except IntegrityError:
        rows.update(**increments)
