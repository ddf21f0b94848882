"""Cost in money: the model price table and the pure function that prices one call's tokens.

Prices are global, not per project: a model's price is its provider's, the same whichever project
calls it. What a project spent stays the project's because costs are recorded on its own rows (a
run's results, a trace); no project ever reads another project's rows through the price table.

The lookup (PriceBook.price_for) takes the model name exactly, else the name without a trailing
date (`gpt-4o-2024-08-06` and `gpt-4o-20240806` → `gpt-4o`, `claude-3-5-haiku-20241022` →
`claude-3-5-haiku`), and among that model's rows the one with the latest valid_from on or before the
call's date. No row: the call is unpriced, counted as such and never priced at $0.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

CURRENCY = "USD"
PER_TOKENS = Decimal(1_000_000)
# How an amount is written in the API: dollars to the millionth, a string so no client reads a float.
AMOUNT_PLACES = Decimal("0.000001")
_DATED_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


@dataclass(frozen=True)
class Price:
    model: str
    valid_from: date
    input_per_mtok: Decimal
    output_per_mtok: Decimal
    # None: the provider has no cached-input discount, so cached tokens cost the input price.
    cached_input_per_mtok: Decimal | None = None


@dataclass(frozen=True)
class TokenUsage:
    """input_tokens counts every prompt token, cached ones included (OpenAI's prompt_tokens):
    cached_input_tokens says how many of them the provider served from its cache."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0


def undated_model(model: str) -> str:
    return _DATED_SUFFIX.sub("", model)


def price_usage(price: Price | None, usage: TokenUsage) -> Decimal | None:
    """The call's cost in USD, or None when it is unpriced (no price)."""
    if price is None:
        return None
    cached = min(max(usage.cached_input_tokens, 0), max(usage.input_tokens, 0))
    uncached = max(usage.input_tokens, 0) - cached
    cached_rate = price.input_per_mtok if price.cached_input_per_mtok is None else price.cached_input_per_mtok
    return (
        uncached * price.input_per_mtok + cached * cached_rate + max(usage.output_tokens, 0) * price.output_per_mtok
    ) / PER_TOKENS


class PriceBook:
    """Every price, read once (the table is small) and looked up in memory for many calls."""

    def __init__(self, prices: Iterable[Price]):
        self._by_model: dict[str, list[Price]] = {}
        for price in prices:
            self._by_model.setdefault(price.model, []).append(price)
        for rows in self._by_model.values():
            rows.sort(key=lambda p: p.valid_from, reverse=True)

    @classmethod
    def load(cls) -> "PriceBook":
        from apps.core.pricing.models import ModelPrice

        return cls(row.as_price() for row in ModelPrice.objects.all())

    def price_for(self, model: str | None, on: date) -> Price | None:
        if not model:
            return None
        rows = self._by_model.get(model)
        if rows is None:
            rows = self._by_model.get(undated_model(model), [])
        return next((p for p in rows if p.valid_from <= on), None)

    def cost(self, *, model: str | None, on: date, usage: TokenUsage) -> Decimal | None:
        return price_usage(self.price_for(model, on), usage)


def amount_text(amount: Decimal | None) -> str | None:
    return None if amount is None else format(amount.quantize(AMOUNT_PLACES), "f")


@dataclass(frozen=True)
class SpendSplit:
    """What a run or a result cost, split by who made the calls (the bot under test, the judge);
    what the API's cost object reads. An amount is None when none of its calls was priced."""

    bot: Decimal | None
    judge: Decimal | None
    unpriced_calls: int
    currency: str = CURRENCY

    @property
    def total(self) -> Decimal | None:
        return self.judge if self.bot is None else self.bot if self.judge is None else self.bot + self.judge
