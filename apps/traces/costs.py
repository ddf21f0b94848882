"""What a trace's model calls cost, from what the OTLP assembly keeps of them in the trace's
metadata, at the price of the trace's start day (UTC).

`otel.usage_by_model` ({model: {"input_tokens", "output_tokens", "calls"}}): the spans that carried
gen_ai.usage.* tokens, per model they named (the assembly's counting rule: its LLM spans, or the
spans with tokens when it has none). Each model's tokens are priced at its price; the calls of a
model without a price, and of "" (spans with tokens and no model), are unpriced. The amount sums the
priced models and is None when none was priced, never $0 for unpriced calls.

Traces assembled before the per-model split kept only the summed `otel.usage` and the `otel.models`
named, and keep that rule: exactly one model is priced; several models (the split was not stored) or
a model without a price are unpriced, unpriced_calls the LLM spans the trace kept (at least one).

No tokens (REST and batch traces, spans without gen_ai.usage.*): nothing to price. Cached input
tokens are not kept, so they are priced as input tokens (an upper bound).

The figure is computed when the assembly stores or merges into the trace and kept on it
(AgentTrace.cost, unpriced_calls), so lists and sums read columns, not metadata."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from apps.core.pricing import CURRENCY, PriceBook, TokenUsage

from .models import COST_PLACES

# What a trace's cost is stored at (AgentTrace.cost's decimal places): the day sums add stored values.
STORED_PLACES = Decimal(1).scaleb(-COST_PLACES)
# The model key of spans with tokens that named no model: always unpriced.
NO_MODEL = ""


@dataclass(frozen=True)
class TraceCost:
    amount: Decimal | None
    unpriced_calls: int
    currency: str = CURRENCY

    @property
    def total(self) -> Decimal | None:
        # What the console's `usd` filter reads, as it reads a run's SpendSplit.
        return self.amount


NOTHING = TraceCost(amount=None, unpriced_calls=0)


class PriceBookOnce:
    """The price table read at most once, when a first trace has tokens to price: one query per
    OTLP request (or settle chunk) rather than one per span or trace, and none for exports without
    gen_ai.usage.* tokens. Not cached across requests, so a price added in the admin applies to the
    next request on every worker."""

    def __init__(self, load: Callable[[], PriceBook] = PriceBook.load):
        self._load = load
        self._book: PriceBook | None = None

    def __call__(self) -> PriceBook:
        if self._book is None:
            self._book = self._load()
        return self._book


def stored_cost(trace) -> TraceCost:
    """The cost kept on the trace (what the API and the console show)."""
    return TraceCost(amount=trace.cost, unpriced_calls=trace.unpriced_calls or 0)


def trace_cost(trace, *, book: PriceBook | Callable[[], PriceBook] | None = None) -> TraceCost:
    """The cost of the calls the trace's metadata records (see the module), unrounded."""
    otel = (trace.metadata or {}).get("otel") if isinstance(trace.metadata, dict) else None
    if not isinstance(otel, dict):
        return NOTHING
    prices = _book_of(book)
    by_model = otel.get("usage_by_model")
    if isinstance(by_model, dict):
        return _per_model(by_model, trace.start_time.date(), prices)
    return _summed(otel, trace.start_time.date(), prices)


def _book_of(book) -> Callable[[], PriceBook]:
    if book is None:
        return PriceBookOnce()
    if isinstance(book, PriceBook):
        return lambda: book
    return book


def _per_model(by_model: dict, on: date, prices: Callable[[], PriceBook]) -> TraceCost:
    amount: Decimal | None = None
    unpriced = 0
    for model, usage in by_model.items():
        if not isinstance(usage, dict):
            continue
        calls = _count(usage.get("calls"))
        tokens = _tokens(usage)
        if not calls and not (tokens.input_tokens or tokens.output_tokens):
            continue
        cost = prices().cost(model=model, on=on, usage=tokens) if model and isinstance(model, str) else None
        if cost is None:
            unpriced += max(calls, 1)
        else:
            amount = cost if amount is None else amount + cost
    return TraceCost(amount=amount, unpriced_calls=unpriced)


def _summed(otel: dict, on: date, prices: Callable[[], PriceBook]) -> TraceCost:
    """The rule of traces assembled before usage_by_model (see the module)."""
    usage = otel.get("usage") if isinstance(otel.get("usage"), dict) else {}
    tokens = _tokens(usage)
    if not (tokens.input_tokens or tokens.output_tokens):
        return NOTHING
    models = [m for m in otel.get("models") or [] if isinstance(m, str)]
    if len(models) == 1:
        amount = prices().cost(model=models[0], on=on, usage=tokens)
        if amount is not None:
            return TraceCost(amount=amount, unpriced_calls=0)
    return TraceCost(amount=None, unpriced_calls=summed_calls(otel))


def summed_calls(otel: dict) -> int:
    """The calls the summed rule counts: the LLM spans the trace kept in its metadata, at least one."""
    spans = otel.get("spans") if isinstance(otel.get("spans"), list) else []
    return max(sum(1 for span in spans if isinstance(span, dict) and span.get("kind") == "llm"), 1)


def stored(cost: TraceCost) -> TraceCost:
    """The cost rounded as the column keeps it."""
    if cost.amount is None:
        return cost
    return TraceCost(amount=cost.amount.quantize(STORED_PLACES), unpriced_calls=cost.unpriced_calls)


def _tokens(usage: dict) -> TokenUsage:
    return TokenUsage(input_tokens=_count(usage.get("input_tokens")), output_tokens=_count(usage.get("output_tokens")))


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
