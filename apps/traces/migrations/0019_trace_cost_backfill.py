"""Prices the OTLP traces stored before traces kept their cost (0018), and adds them to their
project's spend per day, by the rule those traces were priced by until now (apps.traces.costs): the
summed gen_ai.usage.* tokens of their LLM spans with exactly one model named are priced at that
model's price on the trace's start day; several models or a model without a price are unpriced, the
LLM spans kept in the metadata counted (at least one); no tokens, nothing to price.

The rule is copied here rather than imported so that this migration keeps meaning what it meant
when the code moves on. Traces are read in batches of primary keys, so memory stays bounded whatever
the table's size. Going back does nothing: 0018's reversal drops the columns and the table."""

import re
from decimal import Decimal

from django.db import migrations

BATCH = 1000
PER_TOKENS = Decimal(1_000_000)
STORED_PLACES = Decimal("0.000000001")
_DATED_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _price(prices: dict, model: str, day):
    rows = prices.get(model)
    if rows is None:
        rows = prices.get(_DATED_SUFFIX.sub("", model), [])
    return next((p for p in rows if p.valid_from <= day), None)


def _cost(metadata, day, prices: dict) -> tuple[Decimal | None, int]:
    otel = metadata.get("otel") if isinstance(metadata, dict) else None
    if not isinstance(otel, dict):
        return None, 0
    usage = otel.get("usage") if isinstance(otel.get("usage"), dict) else {}
    tokens_in, tokens_out = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
    if not (tokens_in or tokens_out):
        return None, 0
    models = [m for m in otel.get("models") or [] if isinstance(m, str)]
    if len(models) == 1:
        price = _price(prices, models[0], day)
        if price is not None:
            amount = (tokens_in * price.input_per_mtok + tokens_out * price.output_per_mtok) / PER_TOKENS
            return amount.quantize(STORED_PLACES), 0
    spans = otel.get("spans") if isinstance(otel.get("spans"), list) else []
    return None, max(sum(1 for s in spans if isinstance(s, dict) and s.get("kind") == "llm"), 1)


def backfill(apps, schema_editor):
    AgentTrace = apps.get_model("traces", "AgentTrace")
    ModelPrice = apps.get_model("core", "ModelPrice")
    TraceSpendDay = apps.get_model("traces", "TraceSpendDay")
    prices: dict = {}
    for row in ModelPrice.objects.order_by("model", "-valid_from"):
        prices.setdefault(row.model, []).append(row)
    days: dict = {}
    otlp = AgentTrace.objects.filter(source="otlp").order_by("pk")
    last = 0
    while True:
        batch = list(otlp.filter(pk__gt=last).only("pk", "project_id", "start_time", "metadata")[:BATCH])
        if not batch:
            break
        last = batch[-1].pk
        changed = []
        for trace in batch:
            day = trace.start_time.date()
            amount, unpriced = _cost(trace.metadata, day, prices)
            if amount is None and not unpriced:
                continue
            trace.cost, trace.unpriced_calls = amount, unpriced
            changed.append(trace)
            spent = days.setdefault((trace.project_id, day), [None, 0])
            if amount is not None:
                spent[0] = amount if spent[0] is None else spent[0] + amount
            spent[1] += unpriced
        AgentTrace.objects.bulk_update(changed, ["cost", "unpriced_calls"], batch_size=BATCH)
    # One row per project and day: the table is new (0018), nothing else has written to it yet.
    TraceSpendDay.objects.bulk_create(
        [
            TraceSpendDay(project_id=project_id, day=day, amount=amount, unpriced_calls=unpriced)
            for (project_id, day), (amount, unpriced) in sorted(days.items())
        ],
        batch_size=BATCH,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0010_modelprice_defaults"),
        ("traces", "0018_trace_cost"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
