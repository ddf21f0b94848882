"""The price table and the pure pricing function: a call is priced at the price of its model on
its date, or it is unpriced (None), never $0."""

from datetime import date
from decimal import Decimal

import pytest

from apps.core.models import ModelPrice
from apps.core.pricing import Price, PriceBook, TokenUsage, amount_text, price_usage, undated_model

GPT_4O = Price(
    model="gpt-4o",
    valid_from=date(2025, 1, 1),
    input_per_mtok=Decimal("2.50"),
    output_per_mtok=Decimal("10.00"),
    cached_input_per_mtok=Decimal("1.25"),
)


def test_price_of_input_cached_input_and_output_tokens():
    usage = TokenUsage(input_tokens=1_000_000, output_tokens=100_000, cached_input_tokens=400_000)
    # 600k uncached at 2.50 + 400k cached at 1.25 + 100k out at 10.00
    assert price_usage(GPT_4O, usage) == Decimal("1.5") + Decimal("0.5") + Decimal("1.0")


def test_cached_tokens_without_a_cached_price_cost_the_input_price():
    price = Price(model="m", valid_from=date(2025, 1, 1), input_per_mtok=Decimal(2), output_per_mtok=Decimal(4))
    assert price_usage(price, TokenUsage(input_tokens=500_000, cached_input_tokens=500_000)) == Decimal(1)


def test_no_price_is_unpriced_not_zero():
    assert price_usage(None, TokenUsage(input_tokens=10)) is None
    # A priced call with no tokens does cost $0: it is priced.
    assert price_usage(GPT_4O, TokenUsage()) == Decimal(0)


def test_lookup_takes_the_latest_price_on_or_before_the_call_date():
    later = Price(model="gpt-4o", valid_from=date(2025, 6, 1), input_per_mtok=Decimal(1), output_per_mtok=Decimal(1))
    book = PriceBook([GPT_4O, later])
    assert book.price_for("gpt-4o", date(2025, 5, 31)) == GPT_4O
    assert book.price_for("gpt-4o", date(2025, 6, 1)) == later
    assert book.price_for("gpt-4o", date(2026, 1, 1)) == later


def test_a_call_before_every_valid_from_is_unpriced():
    book = PriceBook([GPT_4O])
    assert book.price_for("gpt-4o", date(2024, 12, 31)) is None
    assert book.cost(model="gpt-4o", on=date(2024, 12, 31), usage=TokenUsage(input_tokens=1000)) is None


def test_an_unknown_or_missing_model_is_unpriced():
    book = PriceBook([GPT_4O])
    assert book.cost(model="my-finetune", on=date(2025, 2, 1), usage=TokenUsage(input_tokens=1000)) is None
    assert book.cost(model="", on=date(2025, 2, 1), usage=TokenUsage(input_tokens=1000)) is None
    assert book.cost(model=None, on=date(2025, 2, 1), usage=TokenUsage(input_tokens=1000)) is None


@pytest.mark.parametrize(
    "served, priced_as",
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("gemini-2.0-flash-001", "gemini-2.0-flash-001"),
    ],
)
def test_a_dated_model_id_is_priced_as_its_model(served, priced_as):
    assert undated_model(served) == priced_as


def test_an_exact_dated_row_wins_over_the_undated_one():
    dated = Price(
        model="gpt-4o-2024-05-13", valid_from=date(2024, 5, 13), input_per_mtok=Decimal(5), output_per_mtok=Decimal(15)
    )
    book = PriceBook([GPT_4O, dated])
    assert book.price_for("gpt-4o-2024-05-13", date(2025, 2, 1)) == dated
    assert book.price_for("gpt-4o-2024-08-06", date(2025, 2, 1)) == GPT_4O


def test_amount_text_is_dollars_to_the_millionth():
    assert amount_text(Decimal("0.0123")) == "0.012300"
    assert amount_text(Decimal("0.0000004")) == "0.000000"
    assert amount_text(None) is None


@pytest.mark.django_db
def test_shipped_prices_have_dates_and_cover_the_common_models(shipped_prices):
    shipped = {p.model: p for p in ModelPrice.objects.all()}
    assert {"gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "gemini-2.5-flash", "mistral-large-latest"} <= set(shipped)
    assert all(p.taken_on and p.source and p.valid_from for p in shipped.values())
    mini = shipped["gpt-4o-mini"]
    assert (mini.input_per_mtok, mini.cached_input_per_mtok, mini.output_per_mtok) == (
        Decimal("0.15"),
        Decimal("0.075"),
        Decimal("0.60"),
    )
    book = PriceBook.load()
    # 1M input and 1M output tokens of gpt-4o-mini-2024-07-18, after the shipped valid_from.
    cost = book.cost(
        model="gpt-4o-mini-2024-07-18",
        on=date(2026, 1, 1),
        usage=TokenUsage(input_tokens=1_000_000, output_tokens=1_000_000),
    )
    assert cost == Decimal("0.75")
