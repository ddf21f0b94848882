"""What a trace's model calls cost, from what the OTLP assembly keeps of them in the trace's
metadata: `otel.models` (the models its spans named) and `otel.usage` (the input and output tokens
of its LLM spans, summed). The assembly keeps the tokens summed, not per model and not per call, so:

- tokens and exactly one model: priced at that model's price on the trace's start date;
- tokens and several models (the split is not stored) or a model without a price: unpriced, the
  amount null, and unpriced_calls the LLM spans the trace kept (at least one);
- no tokens (REST and batch traces, or spans without gen_ai.usage.*): nothing to price.

Cached input tokens are not kept either, so they are priced as input tokens (an upper bound)."""

from dataclasses import dataclass
from decimal import Decimal

from apps.core.pricing import CURRENCY, PriceBook, TokenUsage


@dataclass(frozen=True)
class TraceCost:
    amount: Decimal | None
    unpriced_calls: int
    currency: str = CURRENCY


NOTHING = TraceCost(amount=None, unpriced_calls=0)


def trace_cost(trace, *, book: PriceBook | None = None) -> TraceCost:
    otel = (trace.metadata or {}).get("otel") if isinstance(trace.metadata, dict) else None
    if not isinstance(otel, dict):
        return NOTHING
    usage = otel.get("usage") if isinstance(otel.get("usage"), dict) else {}
    tokens = TokenUsage(
        input_tokens=_count(usage.get("input_tokens")), output_tokens=_count(usage.get("output_tokens"))
    )
    if not (tokens.input_tokens or tokens.output_tokens):
        return NOTHING
    models = [m for m in otel.get("models") or [] if isinstance(m, str)]
    amount = None
    if len(models) == 1:
        book = book or PriceBook.load()
        amount = book.cost(model=models[0], on=trace.start_time.date(), usage=tokens)
    if amount is not None:
        return TraceCost(amount=amount, unpriced_calls=0)
    spans = otel.get("spans") if isinstance(otel.get("spans"), list) else []
    llm_spans = sum(1 for span in spans if isinstance(span, dict) and span.get("kind") == "llm")
    return TraceCost(amount=None, unpriced_calls=max(llm_spans, 1))


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
