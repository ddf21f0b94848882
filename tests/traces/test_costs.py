"""A trace's cost by the rule of traces assembled before the per-model split (apps.traces.costs): the
summed gen_ai.usage.* tokens and the models its spans named. The API answers the cost kept on the
trace (the per-model rule and the assembly: tests/traces/test_trace_costs.py)."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from tests.traces.factories import AgentTraceFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("shipped_prices")]

BASE = "/api/v1/metrics"
AFTER_SHIPPED_PRICES = datetime(2026, 1, 5, tzinfo=UTC)


def otel(models, usage=None, llm_spans=0):
    meta = {
        "trace_id": "0" * 32,
        "models": models,
        "spans": [{"span_id": str(n), "kind": "llm"} for n in range(llm_spans)],
    }
    if usage is not None:
        meta["usage"] = usage
    return {"otel": meta}


def cost_of(api, **trace):
    """What the API would answer had the trace been priced by the summed rule (as migration 0019
    priced the traces stored before)."""
    from apps.traces.costs import stored, trace_cost

    trace.setdefault("start_time", AFTER_SHIPPED_PRICES)
    made = AgentTraceFactory(**trace)
    figure = stored(trace_cost(made))
    made.cost, made.unpriced_calls = figure.amount, figure.unpriced_calls
    made.save(update_fields=["cost", "unpriced_calls"])
    response = api.get(f"{BASE}/trace/{made.session_id}")
    assert response.status_code == 200
    return response.json()["cost"]


def test_one_priced_model_prices_the_traces_tokens(api):
    # 1M input at 0.15 + 1M output at 0.60 per million (gpt-4o-mini, the dated id of it).
    metadata = otel(["gpt-4o-mini-2024-07-18"], {"input_tokens": 1_000_000, "output_tokens": 1_000_000}, 2)
    assert cost_of(api, metadata=metadata) == {"amount": "0.750000", "currency": "USD", "unpriced_calls": 0}


def test_an_unpriced_model_is_counted_never_zero(api):
    metadata = otel(["my-finetune"], {"input_tokens": 10, "output_tokens": 10}, 3)
    assert cost_of(api, metadata=metadata) == {"amount": None, "currency": "USD", "unpriced_calls": 3}


def test_a_trace_before_every_valid_from_is_unpriced(api):
    metadata = otel(["gpt-4o"], {"input_tokens": 10, "output_tokens": 10}, 1)
    cost = cost_of(api, metadata=metadata, start_time=datetime(2020, 1, 1, tzinfo=UTC))
    assert cost == {"amount": None, "currency": "USD", "unpriced_calls": 1}


def test_several_models_cannot_be_split_so_they_are_unpriced(api):
    # Before usage_by_model the tokens were kept summed over models: no honest split, so no amount.
    metadata = otel(["gpt-4o", "gpt-4o-mini"], {"input_tokens": 10, "output_tokens": 10}, 2)
    assert cost_of(api, metadata=metadata)["amount"] is None


def test_no_tokens_no_calls_to_price(api):
    assert cost_of(api, metadata={}) == {"amount": None, "currency": "USD", "unpriced_calls": 0}
    assert cost_of(api, metadata=otel(["gpt-4o"]))["unpriced_calls"] == 0


def test_unreadable_metadata_is_not_an_error(api):
    metadata = {"otel": {"models": "gpt-4o", "usage": {"input_tokens": "many"}, "spans": "x"}}
    assert cost_of(api, metadata=metadata) == {"amount": None, "currency": "USD", "unpriced_calls": 0}


def test_the_price_table_is_read_at_the_traces_date():
    from apps.core.models import ModelPrice
    from apps.traces.costs import trace_cost

    ModelPrice.objects.create(
        model="house-model", valid_from=datetime(2025, 1, 1).date(), input_per_mtok=1, output_per_mtok=2
    )
    trace = AgentTraceFactory(
        start_time=AFTER_SHIPPED_PRICES, metadata=otel(["house-model"], {"input_tokens": 1_000_000})
    )
    assert trace_cost(trace).amount == Decimal(1)


def test_the_api_reads_the_cost_kept_on_the_trace_not_the_metadata(api):
    # Metadata that would price at $0.75 by the summed rule: the stored columns are what is answered.
    metadata = otel(["gpt-4o-mini"], {"input_tokens": 1_000_000, "output_tokens": 1_000_000}, 2)
    made = AgentTraceFactory(start_time=AFTER_SHIPPED_PRICES, metadata=metadata, cost=Decimal("0.1"), unpriced_calls=4)
    assert api.get(f"{BASE}/trace/{made.session_id}").json()["cost"] == {
        "amount": "0.100000",
        "currency": "USD",
        "unpriced_calls": 4,
    }
