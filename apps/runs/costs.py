"""What an item's LLM calls cost (apps.core.pricing), from what the engine recorded of them: the bot's
turns (the adapter's usage and the model that answered) and the judge's verdicts (their usage and
fingerprint). Computed once when the item is recorded, at the price of the day it finished, and kept
on the result and added to the run's running totals: a later price change does not rewrite a
finished run's bill.

A call with no usable model or no price of its date is unpriced: counted in unpriced_calls, never
priced at $0. An amount is the sum of the priced calls, None when none is priced."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from apps.core.pricing import PriceBook, TokenUsage

from .judging.types import Verdict
from .models import COST_PLACES

STORED_PLACES = Decimal(1).scaleb(-COST_PLACES)


@dataclass(frozen=True)
class ItemCost:
    bot: Decimal | None = None
    judge: Decimal | None = None
    unpriced_calls: int = 0

    @property
    def total(self) -> Decimal | None:
        return add(self.bot, self.judge)


def add(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    return b if a is None else a if b is None else a + b


def _tokens(usage: dict) -> TokenUsage:
    return TokenUsage(
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        cached_input_tokens=int(usage.get("cached_tokens") or 0),
    )


def _bot_cost(book: PriceBook, turns: Iterable[dict], on: date, fallback_model: str) -> tuple[Decimal | None, int]:
    amount, unpriced = None, 0
    for usage in turns:
        calls = int(usage.get("calls") or 1)
        cost = book.cost(model=usage.get("model") or fallback_model, on=on, usage=_tokens(usage))
        if cost is None:
            unpriced += calls
        else:
            amount = add(amount, cost)
    return amount, unpriced


def _judge_cost(book: PriceBook, verdicts: Iterable[Verdict], on: date) -> tuple[Decimal | None, int]:
    """Each verdict with usage is one request, except a batched judge's: its verdicts each carry the
    whole request's usage and verdicts_in_request, so they are counted once per request."""
    amount, unpriced = None, 0
    batches: dict[tuple, int] = {}
    for verdict in verdicts:
        usage = verdict.usage or {}
        if not usage:
            continue  # the heuristic judge, or a verdict whose request failed: no call to price
        fingerprint = verdict.fingerprint or {}
        model = fingerprint.get("server_model") or fingerprint.get("model")
        share = int(usage.get("verdicts_in_request") or 1)
        if share > 1:
            key = (model, tuple(sorted((k, v) for k, v in usage.items())))
            seen = batches.get(key, 0)
            batches[key] = seen + 1
            if seen % share:
                continue  # a request already counted, through an earlier verdict it judged
        cost = book.cost(model=model, on=on, usage=_tokens(usage))
        if cost is None:
            unpriced += 1
        else:
            amount = add(amount, cost)
    return amount, unpriced


def item_cost(
    *, book: PriceBook, on: date, bot_turns: Iterable[dict], bot_model: str, verdicts: Iterable[Verdict]
) -> ItemCost:
    """bot_turns: each bot turn's usage (BotTurn.usage), empty for a bot that reports none (it made no
    LLM call evalsite can see: nothing to price)."""
    bot, bot_unpriced = _bot_cost(book, (t for t in bot_turns if t), on, bot_model)
    judge, judge_unpriced = _judge_cost(book, verdicts, on)
    return ItemCost(bot=_stored(bot), judge=_stored(judge), unpriced_calls=bot_unpriced + judge_unpriced)


def _stored(amount: Decimal | None) -> Decimal | None:
    return None if amount is None else amount.quantize(STORED_PLACES)
